# attach_shares.py - three functions that take known shares of CPU time,
# each call timed by the program itself, for a program that is attached
# to while it runs (tests/e2e/attach.bats).
#
# Usage: python attach_shares.py SECONDS CALLS_FILE
# Prints "ready" once calibrated, then "done" after SECONDS of wall time,
# and writes CALLS_FILE: a JSON list of [wall_start, wall_end, name,
# cpu_seconds], one per call (wall times on CLOCK_MONOTONIC, the clock
# `pyprof ctl` reports sampling's start and stop on), so that the shares
# of the attach's window can be computed (tests/lib/attach_window.py).
#
# The loops and the 5:3:2 plan are those of shares.py (calls of 5 to 45 ms
# drawn at random, seeded: no pattern that lines up with the sampling
# period). 3.14+ (the interpreters pyprof can attach to).
import json
import random
import sys
import time


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
        t0 = time.thread_time()
        share_twenty(n)
        dt = time.thread_time() - t0
        if dt > 0.02:
            return n / (dt * 1000.0)
        n *= 2


def main():
    seconds = float(sys.argv[1])
    per_ms = calibrate()
    rng = random.Random(1234)
    plan = [(share_fifty, 5), (share_thirty, 3), (share_twenty, 2)]
    calls = []
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for f, weight in plan:
            n = int(per_ms * weight * 5.0 * (1.0 + 2.0 * rng.random()))
            w0 = time.monotonic()
            t0 = time.thread_time()
            f(n)
            calls.append([w0, time.monotonic(), f.__name__,
                          time.thread_time() - t0])
    with open(sys.argv[2], "w") as out:
        json.dump(calls, out)
    print("done")


if __name__ == "__main__":
    main()
