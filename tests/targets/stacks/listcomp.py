# listcomp.py - a list comprehension: its own "<listcomp>" frame on Python 3
# up to 3.11; inlined into the enclosing function from 3.12 (PEP 709), as
# on Python 2, where it never had a frame.
#
# @expect <module> @module_call
# @expect run @run_call
# @expect squares @squares_comp
# @expect[3.0-3.11] squares.<locals>.<listcomp> @squares_comp
from _clock import cpu_clock, deadline


def squares(n):
    return [(i * 31) % 1000003 for i in range(n)]  # @squares_comp


def run(limit):
    while cpu_clock() < limit:
        squares(20000)  # @run_call


run(deadline())  # @module_call
