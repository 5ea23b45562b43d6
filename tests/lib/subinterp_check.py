#!/usr/bin/env python3
"""subinterp_check.py - a profile of tests/targets/subinterp.py against
what the program measured itself (its JSON line), for chains.bats.

  subinterp_check.py MODE PROFILE TRUTH [--tol PP]

MODE cpu: main_work's and work's shares of the samples under either
within PP points (default 5) of the program's CPU clocks. MODE wall:
work's wall time in the profile within 15% of the program's (its calls'
perf_counter time); each worker thread's sampled wall time at most the
time it could have lived (worker_life, plus 10% and 50 ms): a thread
sampled once per tick, in the interpreter it runs. Both: every worker
thread named in the profile (thread_name) as the program named it.
Exit status 0, 1 when a check fails, 2 on bad input. Reads the profile
through tests/lib/pprof_shares.py (go tool pprof -raw).
"""

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_shares  # noqa: E402


def wall_of(p):
    """The index of the time value (wall nanoseconds) of p's samples."""
    for i, t in enumerate(p.sample_types):
        if "nanoseconds" in t:
            return i
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["cpu", "wall"])
    ap.add_argument("profile")
    ap.add_argument("truth")
    ap.add_argument("--tol", type=float, default=5.0)
    args = ap.parse_args(argv)
    with open(args.truth) as f:
        truth = json.load(f)
    p = pprof_shares.load(args.profile)
    ok = True
    by_name = collections.Counter()
    ns_by_name = collections.Counter()
    work = collections.Counter()
    vi = wall_of(p)
    wi = p.weight_index()
    for values, locs, labels in p.samples:
        frames = []
        for lid in locs:
            frames.extend(p.locations.get(lid, []))
        names = set(fr.name for fr in frames)
        thread = labels.get("thread_name", "<none>")
        by_name[thread] += values[wi]
        if vi is not None:
            ns_by_name[thread] += values[vi]
        for fn in ("main_work", "work"):
            if fn in names:
                work[fn] += values[wi]
                if vi is not None:
                    work[fn + "_ns"] += values[vi]
    for name in truth["names"]:
        n = by_name.get(name, 0)
        print("thread %-32s %6d samples%s" % (
            name, n, "" if n else "  <-- not in the profile"))
        ok = ok and n > 0
    if args.mode == "cpu":
        want = truth["shares"]
        tw = float(sum(want.values()))
        tg = float(work["main_work"] + work["work"])
        for fn in sorted(want):
            w = 100.0 * want[fn] / tw
            g = 100.0 * work[fn] / tg if tg else 0.0
            bad = abs(g - w) > args.tol
            ok = ok and not bad
            print("%-10s program %6.2f%% profile %6.2f%% (%d samples)%s" % (
                fn, w, g, work[fn],
                "  <-- off by more than %g points" % args.tol if bad else ""))
        if tg < 60:
            print("too few samples under main_work and work: %d" % tg)
            ok = False
    else:
        got = work["work_ns"] / 1e9
        want = truth["work_wall"]
        bad = abs(got - want) > 0.15 * want
        ok = ok and not bad
        print("work wall: program %.3f s, profile %.3f s%s" % (
            want, got, "  <-- off by more than 15%" if bad else ""))
        bound = 1.1 * truth["worker_life"] + 0.05
        for name in truth["names"]:
            s = ns_by_name.get(name, 0) / 1e9
            bad = s > bound
            ok = ok and not bad
            print("thread %-32s %.3f s sampled, lived at most %.3f s%s" % (
                name, s, truth["worker_life"],
                "  <-- sampled more than it lived" if bad else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
