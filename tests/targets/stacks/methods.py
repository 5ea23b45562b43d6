# methods.py - a method, a classmethod and a staticmethod: named by their
# class from 3.11 (co_qualname), by their own name before.
#
# @expect <module> @module_call
# @expect Klass.method @method_call
# @expect Klass.klass @klass_call
# @expect Klass.static @static_hot
from _clock import cpu_clock, deadline


class Klass(object):
    def method(self, limit):
        return self.klass(limit)  # @method_call

    @classmethod
    def klass(cls, limit):
        return cls.static(limit)  # @klass_call

    @staticmethod
    def static(limit):
        x = 0
        while cpu_clock() < limit:
            for i in range(20000): x = (x * 31 + i) % 1000003  # @static_hot
        return x


Klass().method(deadline())  # @module_call
