# dormant.py - burns CPU in work() until STOPFILE exists, and logs its own
# clocks, for tests/e2e/ctl.bats (sampling switched on from outside for a
# while: the profile must hold the CPU time the program used meanwhile).
#
# Usage: python dormant.py STOPFILE
# Prints "ready" once running, then about every 20 ms of wall time a line
# "MONO_NS CPU_NS": CLOCK_MONOTONIC (the clock the library reports
# sampling's start and stop in) and this process's CPU time
# (CLOCK_PROCESS_CPUTIME_ID), both read through ctypes, as on 2.7 the time
# module has neither. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import ctypes
import os
import sys


class timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


# by name: find_library would run ldconfig in a subprocess
libc = ctypes.CDLL("libc.so.6", use_errno=True)
CLOCK_MONOTONIC = 1
CLOCK_PROCESS_CPUTIME_ID = 2


def clock_ns(clock):
    ts = timespec()
    libc.clock_gettime(clock, ctypes.byref(ts))
    return ts.tv_sec * 1000000000 + ts.tv_nsec


def work(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def main():
    stop = sys.argv[1]
    print("ready")
    sys.stdout.flush()
    last = 0
    while True:
        work(2000)
        now = clock_ns(CLOCK_MONOTONIC)
        if now - last >= 20000000:
            print(now, clock_ns(CLOCK_PROCESS_CPUTIME_ID))
            sys.stdout.flush()
            last = now
            if os.path.exists(stop):
                break
    print(clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID))


main()
