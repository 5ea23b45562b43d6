# phases.py - early() for the first part of the run, late() for the rest,
# for tests/e2e/robust.bats: the collector starts only after early() has
# finished, yet early()'s samples must still reach it (the library keeps
# them until it can connect).
#
# Usage: python phases.py [EARLY_SECONDS [LATE_SECONDS]]  (CPU s, 1.5 each)
# Prints one JSON line with the measured shares of the two functions.
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import sys
import time

try:
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock


def early(seconds):
    end = cpu_clock() + seconds
    x = 0
    while cpu_clock() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


def late(seconds):
    end = cpu_clock() + seconds
    x = 0
    while cpu_clock() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


def main():
    early_s = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    late_s = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    t0 = cpu_clock()
    early(early_s)
    t1 = cpu_clock()
    late(late_s)
    t2 = cpu_clock()
    total = t2 - t0
    print(json.dumps({"shares": {"early": (t1 - t0) / total,
                                 "late": (t2 - t1) / total},
                      "seconds": {"early": t1 - t0, "late": t2 - t1}},
                     sort_keys=True))


if __name__ == "__main__":
    main()
