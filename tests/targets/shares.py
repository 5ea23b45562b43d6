# shares.py - three functions that take known shares of CPU time, measured
# by the program itself.
#
# Used by tests/e2e/truth.bats: profiled at 250 Hz, each function's share of
# the samples (cumulative, among the three) must be within 3 points of the
# share this program measures with a CPU clock around every call.
#
# Usage: python shares.py [SECONDS]   (CPU seconds, default 4)
# Prints one JSON line: {"shares": {name: fraction}, "seconds": {...}, ...}
#
# Runs on Python 2.7 and 3.6+. The three loops have the same body, and
# call sizes are drawn at random (seeded) in the ratio 5:3:2, so that no
# call pattern can line up with the sampling period (aliasing). Calls last
# 5 to 45 ms: with calls much shorter than the sampling period, each call
# is a coin flip and 400 samples carry a ~2 point error of their own.
from __future__ import print_function

import json
import random
import sys
import time

try:
    # 3.7+: this thread's CPU time, exactly what a per-thread CPU timer
    # samples.
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock  # 2.7: the process's CPU time


def share_fifty(n):
    x = 0
    i = 0
    while i < n:
        x = (x * 31 + i) % 1000003
        i += 1
    return x


def share_thirty(n):
    x = 0
    i = 0
    while i < n:
        x = (x * 31 + i) % 1000003
        i += 1
    return x


def share_twenty(n):
    x = 0
    i = 0
    while i < n:
        x = (x * 31 + i) % 1000003
        i += 1
    return x


def calibrate():
    """Loop iterations per CPU millisecond (same body as above)."""
    n = 20000
    while True:
        t0 = cpu_clock()
        x = 0
        i = 0
        while i < n:
            x = (x * 31 + i) % 1000003
            i += 1
        dt = cpu_clock() - t0
        if dt > 0.02:
            return n / (dt * 1000.0)
        n *= 2


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    per_ms = calibrate()
    rng = random.Random(1234)
    plan = [(share_fifty, 5), (share_thirty, 3), (share_twenty, 2)]
    spent = dict((f.__name__, 0.0) for f, _ in plan)
    calls = dict((f.__name__, 0) for f, _ in plan)
    start = cpu_clock()
    while cpu_clock() - start < seconds:
        for f, weight in plan:
            # 10 ms per weight unit on average (5 to 15 ms): calls long
            # next to the 10 ms sampling period, so that each call's
            # count is off by less than one sample, not by a coin flip.
            n = int(per_ms * weight * 5.0 * (1.0 + 2.0 * rng.random()))
            t0 = cpu_clock()
            f(n)
            spent[f.__name__] += cpu_clock() - t0
            calls[f.__name__] += 1
    total = sum(spent.values())
    print(json.dumps({
        "shares": dict((k, v / total) for k, v in spent.items()),
        "seconds": spent,
        "calls": calls,
        "cpu_total": cpu_clock() - start,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
