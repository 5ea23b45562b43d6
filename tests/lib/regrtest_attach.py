#!/usr/bin/env python3
"""regrtest_attach.py - CPython's regression tests give the same results,
test by test, when `pyprof attach` comes and goes N times while they run
(tests/e2e/regrtest.bats).

    regrtest_attach.py --python PY --pyprof PYPROF --work DIR
        [--attaches 20] [--reruns 2] [--test-timeout 120] MODULE...

Two runs of `PY regrtest_outcomes.py ... -v MODULE...` side by side, in
one process each (no -j: the tests run where the attach goes): one left
alone, one that `PYPROF attach PID --duration 1` profiles N times, a
second apart, from one second after it started (CPU mode: the per-thread
timers and their signals, the more intrusive mode). Every attach must
exit 0 and write a profile, at least half of them with samples (a second
in which the tests only wait has no CPU time); all N must happen while
the tests run (the first one loads the library, the others find it
dormant).
Then every test's outcome (ok, SKIP, FAIL, ERROR, XFAIL, XPASS, or a hang:
a START with nothing after it) must be the same in both runs, and both
must reach regrtest's end with the same exit status. A test whose
outcomes differ is run plainly RERUNS more times (regrtest --match):
only when those plain runs disagree among themselves or with the first
is it excused, as FLAKY (printed, not a failure), as
regrtest_compare.py does. Prints the figures (tests, attaches, seconds);
exit status 1 with the reasons on a difference.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUTCOMES = os.path.join(HERE, "regrtest_outcomes.py")


def env_plain():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PYPROF_") or k == "LD_PRELOAD":
            del env[k]
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start(args, name, modules, match=None):
    tsv = os.path.join(args.work, name + ".tsv")
    log = os.path.join(args.work, name + ".log")
    cmd = [args.python, OUTCOMES, tsv, str(args.test_timeout), "-v"]
    if match:
        mf = os.path.join(args.work, name + ".match")
        with open(mf, "w") as f:
            f.write("".join(m + "\n" for m in match))
        cmd += ["--matchfile", mf]
    cmd += modules
    lf = open(log, "wb")
    p = subprocess.Popen(cmd, env=env_plain(), stdin=subprocess.DEVNULL,
                         stdout=lf, stderr=subprocess.STDOUT,
                         cwd=args.work, start_new_session=True)
    p.tsv, p.log, p.lf, p.t0 = tsv, log, lf, time.time()
    return p


def finish(p, timeout):
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = "killed"
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.wait()
    p.lf.close()
    outcomes, started, ended = {}, [], False
    if os.path.exists(p.tsv):
        with open(p.tsv, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 2:
                    continue
                tid, what = parts[0], parts[1]
                if what == "END":
                    ended = True
                elif what == "START":
                    started.append(tid)
                else:
                    outcomes.setdefault(tid, set()).add(what)
    for tid in started:
        outcomes.setdefault(tid, {"hang"})
    return {"rc": rc, "outcomes": outcomes, "ended": ended,
            "secs": time.time() - p.t0}


def attach_loop(args, p, done):
    """Attaches args.attaches times while p runs; appends to done a
    (seconds, status, message) per attach."""
    time.sleep(1.0)
    for i in range(args.attaches):
        if p.poll() is not None:
            return
        prof = os.path.join(args.work, "attach.%d.pb.gz" % i)
        t0 = time.time()
        r = subprocess.run([args.pyprof, "attach", str(p.pid),
                            "--duration", "1", "--timeout", "30",
                            "-o", prof], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True)
        msg = r.stderr.strip().splitlines()
        done.append((time.time() - t0, r.returncode,
                     msg[-1] if msg else ""))
        if r.returncode != 0:
            return
        time.sleep(1.0)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--pyprof", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--attaches", type=int, default=20)
    ap.add_argument("--reruns", type=int, default=2)
    ap.add_argument("--test-timeout", type=int, default=120)
    ap.add_argument("--process-timeout", type=int, default=1500)
    ap.add_argument("modules", nargs="+")
    args = ap.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)

    plain_p = start(args, "plain", args.modules)
    att_p = start(args, "attached", args.modules)
    done = []
    th = threading.Thread(target=attach_loop, args=(args, att_p, done))
    th.start()
    plain = finish(plain_p, args.process_timeout)
    att = finish(att_p, args.process_timeout)
    th.join()

    errors = []
    secs = [d[0] for d in done]
    print("attaches: %d of %d succeeded; each took %.1f to %.1f s" %
          (sum(1 for d in done if d[1] == 0), args.attaches,
           min(secs) if secs else 0, max(secs) if secs else 0))
    counts = []
    for i, (s, rc, msg) in enumerate(done):
        m = re.search(r"wrote .* \((\d+) samples?,", msg)
        if rc != 0 or not m:
            errors.append("attach %d exited with %d: %s" % (i + 1, rc, msg))
        else:
            counts.append(int(m.group(1)))
    print("samples per attach (CPU time, 1 s windows): %s" % counts)
    # a window in which the tests only waited has no CPU time to show;
    # most must have some, or the library was not sampling
    if len(counts) == len(done) and \
            sum(1 for c in counts if c > 0) * 2 < args.attaches:
        errors.append("fewer than half of the attaches wrote samples")
    if len(done) < args.attaches and not errors:
        errors.append("the tests ended after %d attaches of %d (%.0f s)" %
                      (len(done), args.attaches, att["secs"]))
    print("plain: %d tests, exit %s, %.0f s; attached: %d tests, exit %s, "
          "%.0f s" % (len(plain["outcomes"]), plain["rc"], plain["secs"],
                      len(att["outcomes"]), att["rc"], att["secs"]))
    for name, r in (("plain", plain), ("attached", att)):
        if not r["ended"]:
            errors.append("the %s run did not reach regrtest's end "
                          "(exit %s)" % (name, r["rc"]))
    if plain["rc"] != att["rc"]:
        errors.append("regrtest's exit status: %s plain, %s attached" %
                      (plain["rc"], att["rc"]))
    tids = sorted(set(plain["outcomes"]) | set(att["outcomes"]))
    differ = [t for t in tids if plain["outcomes"].get(t, {"absent"}) !=
              att["outcomes"].get(t, {"absent"})]
    flaky = []
    if differ:
        runs = [start(args, "rerun%d" % k, args.modules,
                      match=differ)
                for k in range(args.reruns)]
        reruns = [finish(p, args.process_timeout) for p in runs]
        for t in differ:
            seen = [plain["outcomes"].get(t, {"absent"})] + \
                [r["outcomes"].get(t, {"absent"}) for r in reruns]
            if any(s != seen[0] for s in seen[1:]):
                flaky.append(t)
                print("FLAKY %s: plain %s, attached %s, plain reruns %s" %
                      (t, sorted(seen[0]),
                       sorted(att["outcomes"].get(t, {"absent"})),
                       [sorted(s) for s in seen[1:]]))
            else:
                errors.append("%s: %s plain (%d times), %s attached" %
                              (t, sorted(seen[0]), len(seen),
                               sorted(att["outcomes"].get(t, {"absent"}))))
    print("tests compared: %d, the same: %d, flaky: %d" %
          (len(tids), len(tids) - len(differ), len(flaky)))
    for e in errors:
        print("FAIL: " + e)
    print("logs: " + args.work)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
