# decorators.py - a function under two decorators: each wrapper's frame
# (named after the code object, "traced.<locals>.wrapper" from 3.11, even
# though functools.wraps renamed the function object) and then the wrapped
# function.
#
# @expect <module> @module_call
# @expect traced.<locals>.wrapper @traced_call
# @expect counted.<locals>.wrapper @counted_call
# @expect work @work_hot
import functools

from _clock import cpu_clock, deadline

calls = [0]


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)  # @traced_call
    return wrapper


def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        calls[0] += 1
        return fn(*args)  # @counted_call
    return wrapper


@traced
@counted
def work(limit):
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * 31 + i) % 1000003  # @work_hot
    return x


work(deadline())  # @module_call
