# outside_shares.py - three functions with known shares of CPU time, for
# a profiler that reads the process from outside (tests/e2e/outside.bats:
# `pyprof record --pid`), on 2.7 and 3.6+.
#
# Usage: python outside_shares.py SECONDS GO_FILE
# Prints "ready", waits (sleeping) until GO_FILE exists, then runs the
# loops of shares.py (one body, call sizes drawn at random, seeded, in the
# ratio 5:3:2: 5 to 45 ms a call) for SECONDS of CPU, prints its own
# measure of each function's share as one JSON line (shares.py's) and
# exits: the profile's window is the program's whole measured run, and
# the profiler sees its target end.
from __future__ import print_function

import json
import os
import random
import sys
import time

try:
    cpu_clock = time.thread_time  # 3.7+
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
    seconds = float(sys.argv[1])
    go = sys.argv[2]
    per_ms = calibrate()
    print("ready")
    sys.stdout.flush()
    while not os.path.exists(go):
        time.sleep(0.002)
    rng = random.Random(1234)
    plan = [(share_fifty, 5), (share_thirty, 3), (share_twenty, 2)]
    spent = dict((f.__name__, 0.0) for f, _ in plan)
    start = cpu_clock()
    while cpu_clock() - start < seconds:
        for f, weight in plan:
            n = int(per_ms * weight * 5.0 * (1.0 + 2.0 * rng.random()))
            t0 = cpu_clock()
            f(n)
            spent[f.__name__] += cpu_clock() - t0
    total = sum(spent.values())
    print(json.dumps({
        "shares": dict((k, v / total) for k, v in spent.items()),
        "seconds": spent,
        "cpu_total": cpu_clock() - start,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
