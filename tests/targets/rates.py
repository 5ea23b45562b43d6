# rates.py - one thread computing, measuring its own CPU time.
#
# Used by tests/e2e/threads.bats: at PYPROF_HZ=1000 and 5000 the samples
# under spin() must number the rate times the CPU time spin() took, within
# 10%.
#
# Usage: python rates.py [SECONDS]   (wall seconds, default 1.5)
# Prints one JSON line: {"cpu": CPU seconds spent in spin(), measured
# with the thread's CPU clock around the call (tclock.py)}.
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import sys
import time

from tclock import THREAD_CLOCK, thread_cpu


def spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(500):
            x = (x * 31 + i) % 1000003
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    t0 = thread_cpu()
    spin(seconds)
    cpu = thread_cpu() - t0
    print(json.dumps({"cpu": cpu, "thread_clock": THREAD_CLOCK},
                     sort_keys=True))


if __name__ == "__main__":
    main()
