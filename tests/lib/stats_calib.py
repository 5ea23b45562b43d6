#!/usr/bin/env python3
"""stats_calib.py - calibration of `pyprof top --intervals` and `pyprof diff
--test` against shares known by construction (tests/targets/stats_shares.py).

  record DIR NAME N GROW SECONDS THREADS HZ [JOBS]
        N recordings DIR/NAME.I.pb.gz (I = 1..N) of stats_shares.py, each
        with its truth DIR/NAME.I.json, JOBS at a time (default 1)
  coverage DIR NAME N
        how many of the 4N intervals (cum share of grow, a, b and c at 95%)
        hold the truth: prints "coverage K of M (P%)", one line per miss
  coverage-runs DIR NAME N K
        the same for `pyprof top` of K runs at once (N/K groups of K
        consecutive profiles), against the mean of their truths
  pairs DIR BEFORE AFTER N [--expect grow]
        `pyprof diff --test` on pairs (BEFORE.I, AFTER.I), I = 1..N; prints
        "changed K of N" (exit status 1), and with --expect FUNC "named K
        of N": pairs where FUNC is a real change and the largest one
  bench DIR [--quick]
        the calibration of docs/reading.md: 50 profiles (200 function-
        profiles) at 100 Hz and 1 kHz, 1 and 4 threads; 20 pairs with
        nothing changed; 20 pairs where grow goes from 10% to 15%

PYPROF is the pyprof binary (default build/pyprof beside tests/).
"""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
PYPROF = os.environ.get("PYPROF", os.path.join(TOP, "build", "pyprof"))
TARGET = os.path.join(TOP, "tests", "targets", "stats_shares.py")
FUNCS = ("grow", "a", "b", "c")
# one row of `pyprof top --intervals`: ... cum% [lo, hi] [lo, hi]  name
ROW = re.compile(r"\[\s*([\d.]+),\s*([\d.]+)\]\s+\[\s*([\d.]+),\s*([\d.]+)\]"
                 r"\s+(\S+)\s+(\S+)")


def record(d, name, n, grow, seconds, threads, hz, jobs=1):
    def one(i):
        base = os.path.join(d, "%s.%d" % (name, i))
        subprocess.run([PYPROF, "record", "--hz", str(hz), "-o",
                        base + ".pb.gz", "--", sys.executable, TARGET,
                        str(grow), str(seconds), str(threads),
                        str(1000 * i + hash(name) % 1000), base + ".json"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    with ThreadPoolExecutor(int(jobs)) as ex:
        list(ex.map(one, range(1, int(n) + 1)))


def intervals(*paths):
    """{func: (lo, hi)} of the cum share, in fractions, for FUNCS."""
    out = subprocess.run([PYPROF, "top", "--intervals"] + list(paths),
                         check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        m = ROW.search(line)
        if m and m.group(5) in FUNCS and m.group(6).endswith(
                "stats_shares.py:%s" % m.group(6).rsplit(":", 1)[-1]):
            got[m.group(5)] = (float(m.group(3)) / 100,
                               float(m.group(4)) / 100)
    return got


def coverage(d, name, n):
    k = m = 0
    for i in range(1, int(n) + 1):
        base = os.path.join(d, "%s.%d" % (name, i))
        truth = json.load(open(base + ".json"))["shares"]
        got = intervals(base + ".pb.gz")
        for f in FUNCS:
            m += 1
            lo, hi = got.get(f, (0.0, 0.0))
            if lo <= truth[f] <= hi:
                k += 1
            else:
                print("miss %s.%d %s: truth %.2f%%, interval [%.2f, %.2f]"
                      % (name, i, f, 100 * truth[f], 100 * lo, 100 * hi))
    print("coverage %s: %d of %d (%.1f%%)" % (name, k, m, 100.0 * k / m))
    return k, m


def coverage_runs(d, name, n, k):
    n, k = int(n), int(k)
    hit = m = 0
    for g in range(n // k):
        bases = [os.path.join(d, "%s.%d" % (name, g * k + i + 1))
                 for i in range(k)]
        truths = [json.load(open(b + ".json"))["shares"] for b in bases]
        got = intervals(*[b + ".pb.gz" for b in bases])
        for f in FUNCS:
            m += 1
            t = sum(x[f] for x in truths) / k
            lo, hi = got.get(f, (0.0, 0.0))
            if lo <= t <= hi:
                hit += 1
            else:
                print("miss %s group %d %s: truth %.2f%%, interval "
                      "[%.2f, %.2f]" % (name, g + 1, f, 100 * t, 100 * lo,
                                        100 * hi))
    print("coverage of %d runs %s: %d of %d (%.1f%%)"
          % (k, name, hit, m, 100.0 * hit / m))
    return hit, m


def pairs(d, before, after, n, expect=None):
    changed = named = 0
    for i in range(1, int(n) + 1):
        r = subprocess.run([PYPROF, "diff", "--test",
                            os.path.join(d, "%s.%d.pb.gz" % (before, i)),
                            "--",
                            os.path.join(d, "%s.%d.pb.gz" % (after, i))],
                           capture_output=True, text=True)
        if r.returncode not in (0, 1):
            sys.exit("pyprof diff --test failed: " + r.stderr)
        changed += r.returncode == 1
        rows = [l for l in r.stdout.splitlines() if l[:1] in "*!"]
        first = rows and re.search(r"\]\s+\S+\s+(\S+)", rows[0])
        if expect and first and first.group(1) == expect:
            named += 1
        elif expect:
            print("pair %d: %s not the first real change:\n%s"
                  % (i, expect, r.stdout))
        elif r.returncode == 1:
            print("pair %d: a change where there is none:\n%s"
                  % (i, r.stdout))
    print("changed %s/%s: %d of %d" % (before, after, changed, int(n)))
    if expect:
        print("named %s: %d of %d" % (expect, named, int(n)))
    return changed, named


def bench(d, quick=False):
    n = 10 if quick else 50
    npairs = 5 if quick else 20
    jobs = 2
    for hz in (100, 1000):
        for threads in (1, 4):
            name = "cov%d_%d" % (hz, threads)
            # a second of CPU in all: threads share the GIL
            record(d, name, n, 0.10, 1.0 / threads, threads, hz, jobs)
            coverage(d, name, n)
            coverage_runs(d, name, n, 5)
    record(d, "before", 2 * npairs, 0.10, 2.0, 1, 1000, jobs)
    record(d, "after", npairs, 0.15, 2.0, 1, 1000, jobs)
    os.makedirs(os.path.join(d, "null"), exist_ok=True)
    for i in range(1, npairs + 1):
        os.replace(os.path.join(d, "before.%d.pb.gz" % (npairs + i)),
                   os.path.join(d, "null.%d.pb.gz" % i))
    pairs(d, "before", "null", npairs)
    pairs(d, "before", "after", npairs, "grow")


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "record":
        record(*args)
    elif cmd == "coverage":
        coverage(*args)
    elif cmd == "coverage-runs":
        coverage_runs(*args)
    elif cmd == "pairs":
        expect = None
        if "--expect" in args:
            expect = args[args.index("--expect") + 1]
            args = args[:args.index("--expect")]
        pairs(*args, expect=expect)
    elif cmd == "bench":
        bench(args[0], "--quick" in args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
