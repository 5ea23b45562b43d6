# yield_from.py - `yield from`: the delegating generator sits between the
# loop that drives it and the generator it delegates to.
#
# @python 3.3-
# @expect <module> @module_call
# @expect consume @consume_for
# @expect delegate @delegate_yield
# @expect produce @produce_hot
from _clock import cpu_clock, deadline


def produce(n):
    while True:
        x = 0
        for i in range(n): x = (x * 31 + i) % 1000003  # @produce_hot
        yield x


def delegate(n):
    yield from produce(n)  # @delegate_yield


def consume(limit):
    total = 0
    for x in delegate(20000):  # @consume_for
        total += x
        if cpu_clock() >= limit:
            break
    return total


consume(deadline())  # @module_call
