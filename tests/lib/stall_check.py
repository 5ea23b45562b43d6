#!/usr/bin/env python3
"""stall_check.py - how long an attach held up a main thread that ticks
every millisecond (tests/targets/attach_ticker.py), for
tests/e2e/attach_stall.bats.

Usage: stall_check.py LIMIT_MS FILE...

Each FILE is one ticker's record: "script NS", then its ticks (ns). The
stall is the gap between ticks that holds the moment the target began
the attach script: the sleep it was in, the interpreter's run of the
script, and whatever the script made the thread wait for. It is set
against the same ticker's gaps before that moment (from its second 0.2 s
on: the first ticks include the start-up), side by side in one run, so
that a machine busy with other work raises both: the excess is the stall
less the median gap before. Prints one line per file; exits 1 when the
smallest excess of all files is above LIMIT_MS (every attach held the
thread up; one ticker whose stall met some other program's burst does
not decide), or when a file has no script or too few ticks before it.
"""
import sys


def read(path):
    with open(path) as f:
        first = f.readline().split()
        ticks = [int(line) for line in f if line.strip()]
    return int(first[1]), ticks


def quantile(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, int(len(sorted_vals) * q))]


def main():
    limit = float(sys.argv[1])
    excesses = []
    bad = False
    for path in sys.argv[2:]:
        script, ticks = read(path)
        if script < 0 or len(ticks) < 2:
            print("%s: no attach script ran" % path)
            bad = True
            continue
        t0 = ticks[0] + 200_000_000
        before = sorted(b - a for a, b in zip(ticks, ticks[1:])
                        if t0 <= a and b < script)
        stall = [b - a for a, b in zip(ticks, ticks[1:])
                 if a <= script < b]
        if len(before) < 200 or not stall:
            print("%s: %d gaps before the attach, %s" %
                  (path, len(before), "its gap" if stall else "none over it"))
            bad = True
            continue
        med = quantile(before, 0.5)
        excess = (stall[0] - med) / 1e6
        excesses.append(excess)
        print("%s: before the attach %d gaps, median %.2f ms, p99 %.2f ms, "
              "longest %.2f ms; the gap over the attach script %.2f ms "
              "(+%.2f ms)" % (path, len(before), med / 1e6,
                              quantile(before, 0.99) / 1e6, before[-1] / 1e6,
                              stall[0] / 1e6, excess))
    if bad or not excesses:
        return 1
    best = min(excesses)
    print("least excess %.2f ms (limit %.2f ms)" % (best, limit))
    return 0 if best <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
