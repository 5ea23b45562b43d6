#!/usr/bin/env python3
"""ctl_checks.py - helpers for tests/e2e/ctl.bats (sampling on demand).

  field CTL_OUTPUT PID KEY     the value of KEY on PID's line of the
                               output of `pyprof ctl` ("pid=P ... KEY=V")
  cpu-between LOG START STOP   CPU ns the program of tests/targets/
                               dormant.py used between two CLOCK_MONOTONIC
                               instants, from its own "MONO_NS CPU_NS"
                               lines (linear between two lines)
  close WHAT GOT WANT TOL      fails (status 1) unless GOT is within TOL
                               (a fraction) of WANT; prints both

Python 3.5+ (the system python3), never run under LD_PRELOAD.
"""
import sys


def field(path, pid, key):
    for line in open(path):
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if kv.get("pid") == pid:
            if key not in kv:
                sys.exit("no %s on pid %s's line: %s" % (key, pid, line))
            print(kv[key].strip('"'))
            return
    sys.exit("no line for pid %s in %s" % (pid, path))


def cpu_at(points, t):
    if t <= points[0][0]:
        return points[0][1]
    for (t0, c0), (t1, c1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * (t - t0) / max(t1 - t0, 1)
    return points[-1][1]


def cpu_between(log, start, stop):
    points = []
    for line in open(log):
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            points.append((int(parts[0]), int(parts[1])))
    if len(points) < 2:
        sys.exit("%s: too few clock lines" % log)
    if not points[0][0] <= int(start) < int(stop) <= points[-1][0]:
        sys.exit("%s: window %s..%s not inside the log (%d..%d)"
                 % (log, start, stop, points[0][0], points[-1][0]))
    print(int(cpu_at(points, int(stop)) - cpu_at(points, int(start))))


def close(what, got, want, tol):
    got, want, tol = float(got), float(want), float(tol)
    ok = want > 0 and abs(got - want) <= tol * want
    print("%s: got %.0f, want %.0f (%+.1f%%, tolerance %.0f%%): %s"
          % (what, got, want, 100 * (got - want) / want if want else 0,
             100 * tol, "ok" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "field":
        field(*args)
    elif cmd == "cpu-between":
        cpu_between(*args)
    elif cmd == "close":
        close(*args)
    else:
        sys.exit("unknown subcommand " + cmd)


main()
