# A non-ASCII file name on Python 2.7, whose identifiers are ASCII: the
# profile's file name must be the UTF-8 of this file's name. Python 3 runs
# the version with non-ASCII functions beside it.
#
# @python -2.7
# @expect <module> @module_call
# @expect Klass.method @method_call
# @expect function @function_hot
from _clock import cpu_clock, deadline


def function(limit):
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * 31 + i) % 1000003  # @function_hot
    return x


class Klass(object):
    def method(self, limit):
        return function(limit)  # @method_call


Klass().method(deadline())  # @module_call
