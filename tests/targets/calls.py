# calls.py - a plain call chain with known functions, files and lines.
#
# Used by tests/e2e/smoke.bats: the profile must name outer, middle and
# inner with this file's path, their "def" lines as start lines, and the
# lines being executed (each tagged "# @name"; the test finds the numbers
# by these tags). Stack, leaf first: inner, middle, outer, <module>.
#
# Usage: python calls.py [SECONDS]   (CPU seconds, default 1.5)
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import sys
import time

try:
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock


def inner(n):  # @def_inner
    x = 0
    i = 0
    while i < n:  # @inner_while
        x = (x * 31 + i) % 1000003  # @inner_body
        i += 1  # @inner_incr
    return x


def middle(n):  # @def_middle
    return inner(n)  # @middle_call


def outer(n):  # @def_outer
    return middle(n)  # @outer_call


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
start = cpu_clock()
rounds = 0
while cpu_clock() - start < seconds:
    outer(20000)  # @module_call
    rounds += 1
print("calls: %d rounds" % rounds)
