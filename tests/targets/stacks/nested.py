# nested.py - nested functions and closures: inner reads variables of both
# enclosing functions (cells), and is named through them from 3.11.
#
# @expect <module> @module_call
# @expect outer @outer_call
# @expect outer.<locals>.middle @middle_call
# @expect outer.<locals>.middle.<locals>.inner @inner_hot
from _clock import cpu_clock, deadline


def outer(limit):
    scale = 31

    def middle():
        bias = 7

        def inner():
            x = 0
            while cpu_clock() < limit:
                for i in range(20000): x = (x * scale + i + bias) % 1000003  # @inner_hot
            return x

        return inner()  # @middle_call

    return middle()  # @outer_call


outer(deadline())  # @module_call
