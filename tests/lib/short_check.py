#!/usr/bin/env python3
"""short_check.py - checks the runs of tests/e2e/short.bats: N runs of a
short program (tests/targets/short_burn.py), each under its own
`pyprof record`, every one of which must report its process with its
samples.

  short_check.py DIR N

For each run I in 1..N, DIR holds rI.out (the program's stdout: "pid
PID"), rI.err (record's stderr), rI.ms (the milliseconds it burned) and
rI.pb.gz (the profile). A run passes when:
  - record's last line says "(S samples, 1 process, 0 dropped)" and no
    line warns (no "no Python process reported", no "a daemon?");
  - the profile names the program's pid in its comments (a process with
    no sample is listed too), every sample carries that pid, and the
    profile holds exactly the S samples the summary counted (and the D
    it dropped, as "[lost: ...]" samples: a faulted read is no failure).
Sampling starts with the program: over the runs that burned (10 ms at
1 kHz each), burn() holds at least half of the CPU they burned, and at
most MAX_EMPTY of them have no sample at all. The library's thread sees
the interpreter up within a millisecond on a quiet machine, but on a
loaded one (eight test runs on two CPUs: load 14) it can wait 10 ms or
more for a CPU, as long as such a program runs: 0 to 6 runs in 90 had
no sample there, with burn() at 94-96% of the CPU burned overall.
Prints one line of figures; exit status 1 with one line per failure.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e", "helpers"))
import pprof_pb  # noqa: E402

MAX_EMPTY = 10
HZ = 1000

SUMMARY = re.compile(r"^pyprof: wrote .* \((\d+) samples?, (\d+) "
                     r"process(?:es)?, (\d+) dropped\)$")


def read(path):
    with open(path) as f:
        return f.read()


def check_run(d, i, agg):
    """Failures of run i (a list of strings); adds to agg."""
    bad = []
    out, err = read("%s/r%d.out" % (d, i)), read("%s/r%d.err" % (d, i))
    ms = float(read("%s/r%d.ms" % (d, i)))
    m = re.search(r"^pid (\d+)$", out, re.M)
    if not m:
        return ["run %d: the program printed no pid: %r" % (i, out[-200:])]
    pid = int(m.group(1))
    lines = err.strip().splitlines()
    s = SUMMARY.match(lines[-1]) if lines else None
    if not s:
        return ["run %d (pid %d): no summary line: %r" % (i, pid, err[-300:])]
    n, procs, dropped = (int(x) for x in s.groups())
    if procs != 1:
        bad.append("run %d (pid %d): %s" % (i, pid, lines[-1]))
    for line in lines:
        if "warning" in line:
            bad.append("run %d (pid %d): %s" % (i, pid, line))
    prof = pprof_pb.decode("%s/r%d.pb.gz" % (d, i))
    if not any(c.startswith("pid %d command: " % pid)
               for c in prof["comments"]):
        bad.append("run %d: pid %d not in the profile's comments %r"
                   % (i, pid, prof["comments"]))
    total = burn = lost = 0
    for smp in prof["samples"]:
        labels, names = pprof_pb.sample_view(prof, smp)
        if labels.get("pid") != pid:
            bad.append("run %d: a sample of pid %r, not %d"
                       % (i, labels.get("pid"), pid))
        if names and names[0].startswith("[lost: "):
            lost += smp["values"][0]
            continue
        total += smp["values"][0]
        if "burn" in names:
            burn += smp["values"][0]
    if total != n or lost != dropped:
        bad.append("run %d (pid %d): %d samples and %d lost in the "
                   "profile, %d and %d in the summary"
                   % (i, pid, total, lost, n, dropped))
    agg["reported"] += not bad
    if ms > 0:
        if n < 1:
            agg["empty"].append("run %d (pid %d): burned %g ms, no sample"
                                % (i, pid, ms))
        agg["runs"] += 1
        agg["ms"] += ms
        agg["total"] += total
        agg["burn"] += burn
    return bad


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    d, n = sys.argv[1], int(sys.argv[2])
    agg = {"runs": 0, "ms": 0.0, "total": 0, "burn": 0, "empty": [],
           "reported": 0}
    bad = []
    for i in range(1, n + 1):
        bad += check_run(d, i, agg)
    want = agg["ms"] * HZ / 1000.0
    print("%d runs, %d reported with their samples; %d burned %g ms: %d "
          "samples, %d in burn() (%.0f%% of the CPU burned), %d without a "
          "sample" % (n, agg["reported"], agg["runs"], agg["ms"],
                      agg["total"], agg["burn"],
                      100.0 * agg["burn"] / want if want else 0,
                      len(agg["empty"])))
    if agg["burn"] < want / 2:
        bad.append("burn() has %d samples, less than half of the %d "
                   "periods burned" % (agg["burn"], want))
    if len(agg["empty"]) > MAX_EMPTY:
        bad += agg["empty"]
    for b in bad[:20]:
        print(b)
    if len(bad) > 20:
        print("... and %d more" % (len(bad) - 20))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
