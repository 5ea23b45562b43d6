# short_burn.py - a program of about 10 ms: burns MS milliseconds (default
# 10) of its own CPU in burn(), prints "pid PID" and exits, for
# tests/e2e/short.bats (every short process under `pyprof record` appears
# in the summary and its samples reach the profile).
#
# Usage: python short_burn.py [MS]
# The clock is the thread's CPU clock where there is one (3.7+), else the
# process's (time.clock on 2.7 and 3.6; nearly the same: one thread runs
# Python). Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import sys
import time

clock = getattr(time, "thread_time", None) or time.clock


def burn(ms):
    end = clock() + ms / 1000.0
    n = 0
    while clock() < end:
        n += 1
    return n


burn(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
print("pid %d" % os.getpid())
