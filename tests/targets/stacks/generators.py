# generators.py - a generator's frame on top of the loop that drives it.
#
# @expect <module> @module_call
# @expect consume @consume_for
# @expect produce @produce_hot
from _clock import cpu_clock, deadline


def produce(n):
    while True:
        x = 0
        for i in range(n): x = (x * 31 + i) % 1000003  # @produce_hot
        yield x


def consume(limit):
    total = 0
    for x in produce(20000):  # @consume_for
        total += x
        if cpu_clock() >= limit:
            break
    return total


consume(deadline())  # @module_call
