# lambdas.py - a lambda is a frame of its own, "<lambda>" (from 3.11
# qualified by the function that made it), here called through another
# function. Its time is in sum(), a C function: charged to the lambda's
# line.
#
# @expect <module> @module_call
# @expect run @run_call
# @expect apply @apply_call
# @expect run.<locals>.<lambda> @lambda_hot
from _clock import cpu_clock, deadline


def apply(fn, arg):
    return fn(arg)  # @apply_call


def run(limit):
    total = 0
    spin = lambda n: sum(range(n))  # @lambda_hot
    while cpu_clock() < limit:
        total += apply(spin, 200000)  # @run_call
    return total


run(deadline())  # @module_call
