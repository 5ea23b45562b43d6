# plain.py - plain calls: positional, keyword and *args, each caller at the
# line of its call.
#
# @expect <module> @module_call
# @expect first @first_call
# @expect second @second_call
# @expect third @third_hot
from _clock import cpu_clock, deadline


def third(limit, scale):
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * scale + i) % 1000003  # @third_hot
    return x


def second(limit, scale):
    args = (limit, scale)
    return third(*args)  # @second_call


def first(limit):
    return second(limit, scale=31)  # @first_call


first(deadline())  # @module_call
