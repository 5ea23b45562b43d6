#!/usr/bin/env python3
"""attach_window.py - the shares a program measured itself during a window.

Usage: attach_window.py CALLS_FILE T0 T1
CALLS_FILE is attach_shares.py's list of [wall_start, wall_end, name,
cpu_seconds]; T0 and T1 bound the window (CLOCK_MONOTONIC seconds: the
since_mono_ns that `pyprof ctl start` and `stop` answer, / 1e9). Each call counts
with the part of its CPU time that falls inside the window (in proportion
to the part of its wall time that does). Prints {"shares": {name:
fraction}, "seconds": {name: cpu}} as pprof_shares.py's compare reads it.
"""
import json
import sys


def main():
    calls = json.load(open(sys.argv[1]))
    t0, t1 = float(sys.argv[2]), float(sys.argv[3])
    spent = {}
    for start, end, name, cpu in calls:
        inside = min(end, t1) - max(start, t0)
        if inside <= 0 or end <= start:
            continue
        spent[name] = spent.get(name, 0.0) + cpu * inside / (end - start)
    total = sum(spent.values())
    if total <= 0:
        sys.exit("no call inside the window")
    print(json.dumps({"shares": {k: v / total for k, v in spent.items()},
                      "seconds": spent}, sort_keys=True))


if __name__ == "__main__":
    main()
