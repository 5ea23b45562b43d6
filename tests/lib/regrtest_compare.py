#!/usr/bin/env python3
"""regrtest_compare.py - CPython's own regression tests, without and with
libpyprof.so preloaded: every test must have the same outcome.

    regrtest_compare.py --python EXE --lib LIB --socket SOCK --profiles DIR
                        --work DIR [--hz N] [--env K=V]...
                        [--variant NAME=HZ[,K=V...]]... [--jobs N]
                        [--reruns N]
                        [--test-timeout S] [--budget S]
                        MODULE[:IGNORE...]...

Each MODULE (a module of the test package, such as test_threading or
test_asyncio.test_locks; after it, ":"-separated regrtest --ignore
patterns for that module's tests, e.g. test_subprocess:ProcessTestCaseNoPoll)
is run by EXE's own regression test driver, once plainly and once with LD_PRELOAD=LIB, PYPROF_SOCKET=SOCK, PYPROF_HZ=N
(default 10000, the highest rate the library accepts) and each --env
K=V (PYPROF_HEAP_RATE=512KiB for heap profiling), each in a process of
its own through tests/lib/regrtest_outcomes.py, which records every test's
outcome (ok, SKIP, FAIL, ERROR, XFAIL, XPASS; see that file). The plain and
the preloaded run of a module start together, so that both see the same
load; --jobs processes run at a time (default 4: these modules mostly sleep
and wait for child processes, so 4 fit on 2 cores).

A module may name the variants it runs under: MODULE@NAME[,NAME...]
(before its ignore patterns); without, it runs under every one.

Several preloaded configurations against one plain run: each --variant
NAME=HZ[,K=V...] is a preloaded run of every module at PYPROF_HZ=HZ with
those variables (--env's too), compared with the same plain run, which is
then made once for all of them (e.g. --variant 100hz=100 --variant
all=1000,PYPROF_HEAP_RATE=512KiB,PYPROF_WAITS=1). Without --variant, one
preloaded run named "pyprof" at --hz.

A test that runs longer than --test-timeout seconds (default 30; the longest of these tests takes 4 s plainly here) is a HANG:
faulthandler prints every thread's traceback into the log and ends that
process. A process killed by a signal leaves its last test a CRASH. The
tests it did not reach (those the other run of the module started) are
then run in a continuation process of the same kind, so that one hang does
not hide the rest of the module (at most 3 continuations).

The rule (what counts as a difference, what as flakiness):
  1. A test's outcome is the set of outcomes it reported (a test with a
     skipped subtest and a passing body is "SKIP+ok"), or HANG, CRASH(...)
     (also "ERROR, then CRASH(rc 1)": the process died right after it),
     or "missing" when that run never started it. When every test of a
     module agrees, the two processes' exit statuses are compared too, as
     the pseudo-test "<exit status>" (a death at exit, a doctest failure,
     regrtest's "env changed").
  2. Tests with the same outcome in both runs are done.
  3. Every test whose outcomes differ is run again, those tests only
     (regrtest --matchfile), --reruns times plainly (default 2) and once
     preloaded (not for a HANG: that would cost the whole timeout again);
     the plain reruns serve every variant that differs on that test.
  4. If the plain runs of that test (the first and the reruns) did not all
     give the same outcome, the interpreter is flaky on that test without
     the library: FLAKY, reported, not a failure.
  5. Otherwise the plain outcome is settled, and the preloaded run gave
     another: a DIFFERENCE, which fails the run, whatever the preloaded
     rerun gave (it is shown, to tell a steady difference from an
     intermittent one). Only the plain interpreter's own behaviour can
     excuse a test, never a good preloaded rerun.

--budget (default 420 s) bounds the whole: past it, no continuation or
rerun is started, and the differences found stand as they are.

The library must really be sampling: every preloaded module process must
leave a profile (the collector's <name>.<pid>.<time>.pb.gz in --profiles)
with samples, some of them in the test package's own files.

Prints one line per module, then each difference with the test's output
from both logs (kept in --work), then a verdict line. Exit status 0 when
there is no difference and every profile has samples, 1 otherwise, 2 on
bad usage. Runs on the host python3 (3.5+), never under the library. The
interpreter under test must be 3.8+ (regrtest's --matchfile/--ignorefile).
"""

import argparse
import concurrent.futures
import glob
import os
import resource
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUTCOMES = os.path.join(HERE, "regrtest_outcomes.py")
sys.path.insert(0, HERE)
import pprof_shares  # noqa: E402  (reads profiles through go tool pprof)

RC_ID = "<exit status>"
MAX_CONTINUATIONS = 3


class Run(object):
    """One regrtest process: a module, plain or preloaded, all its tests
    or only MATCH."""

    def __init__(self, args, spec, mode, tag, match=None):
        self.spec = spec
        parts = spec.split(":")
        module, self.ignore = parts[0], [p for p in parts[1:] if p]
        module = module.split("@")[0]
        self.module, self.mode, self.tag, self.match = module, mode, tag, match
        base = os.path.join(args.work, "%s.%s.%s" % (module, mode, tag))
        self.tsv, self.log = base + ".tsv", base + ".log"
        self.matchfile = base + ".match"
        self.rc = None  # int, "signal N" or "killed"
        self.pid = None
        self.secs = 0.0
        self.started = []  # test ids in START order
        self.ended = False  # regrtest got to its end (the <end> line)
        self.outcomes = {}  # test id -> set of outcomes
        self.details = {}  # test id -> [detail]

    def hung(self):
        if self.rc == "killed":
            return True
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                # faulthandler's "Timeout (0:01:00)!", after the test's
                # "name (id) ... " on the same line
                return any("Timeout (0:" in line for line in f)
        except OSError:
            return False

    def cut_short(self):
        """The test this process was in or after when it died or hung, or
        None if regrtest got to its end."""
        if self.ended or not self.started:
            return None
        return self.started[-1]


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PYPROF_") or k == "LD_PRELOAD":
            del env[k]
    # Unbuffered stdio, whatever the caller's environment: as CPython's
    # own CI runs these tests (--fast-ci adds -u), and as many containers
    # run Python (PYTHONUNBUFFERED=1). It matters: an unbuffered text
    # stream drops the rest of a write that a signal cut short.
    env["PYTHONUNBUFFERED"] = "1"
    return env


def parse_variant(text, base_env):
    """NAME=HZ[,K=V...] -> (name, hz, [K=V...]); ValueError if malformed."""
    name, eq, rest = text.partition("=")
    parts = rest.split(",")
    if not eq or not name or name == "plain" or not parts[0].isdigit():
        raise ValueError("--variant %r: NAME=HZ[,PYPROF_X=V...]" % text)
    for kv in parts[1:]:
        if "=" not in kv:
            raise ValueError("--variant %r: %r is no K=V" % (text, kv))
    return name, int(parts[0]), list(base_env) + parts[1:]


def run_one(args, run):
    env = clean_env()
    if run.mode != "plain":
        hz, extra = args.variants[run.mode]
        env["LD_PRELOAD"] = args.lib
        env["PYPROF_SOCKET"] = args.socket
        env["PYPROF_HZ"] = str(hz)
        for kv in extra:
            k, _, v = kv.partition("=")
            env[k] = v
    cmd = [args.python, OUTCOMES, run.tsv, str(args.test_timeout), "-v"]
    if run.match is not None:
        with open(run.matchfile, "w") as f:
            f.write("".join(m + "\n" for m in run.match))
        cmd += ["--matchfile", run.matchfile]
    if run.ignore:
        ignorefile = run.matchfile[:-len("match")] + "ignore"
        with open(ignorefile, "w") as f:
            f.write("".join(m + "\n" for m in run.ignore))
        cmd += ["--ignorefile", ignorefile]
    cmd.append(run.module)
    t0 = time.time()
    # The soft descriptor limit most systems give a process (1024; the
    # hard limit stays): with the two equal, a test that checks every
    # number below the limit (fd_status.py, 3.8-3.13) would see the
    # library's descriptors, which can only sit above it when the hard
    # limit leaves room (docs/limitations.md).
    def low_nofile():
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (min(1024, soft), hard))
    with open(run.log, "wb") as lf:
        lf.write(("+ %s\n" % " ".join(cmd)).encode())
        lf.flush()
        # A session of its own, so that a process that outlives its test
        # timeout is killed with all its children.
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                             stdout=lf, stderr=subprocess.STDOUT,
                             cwd=args.work, start_new_session=True,
                             preexec_fn=low_nofile)
        run.pid = p.pid
        try:
            run.rc = p.wait(timeout=args.process_timeout)
        except subprocess.TimeoutExpired:
            run.rc = "killed"
        # What the tests left behind (a hung grandchild) goes too.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
    run.secs = time.time() - t0
    if isinstance(run.rc, int) and run.rc < 0:
        run.rc = "signal %d" % -run.rc
    if os.path.exists(run.tsv):
        with open(run.tsv, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 2:
                    continue
                tid, what = parts[0], parts[1]
                if what == "END":
                    run.ended = True
                    continue
                if what == "START":
                    run.started.append(tid)
                    continue
                run.outcomes.setdefault(tid, set()).add(what)
                if len(parts) > 2 and parts[2]:
                    run.details.setdefault(tid, []).append(parts[2])
    return run


def run_all(args, runs):
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        list(ex.map(lambda r: run_one(args, r), runs))


class Result(object):
    """A module's tests in one mode: the first process and its
    continuations."""

    def __init__(self, first):
        self.first = first
        self.runs = [first]
        self.outcome = {}  # test id -> outcome string
        self.source = {}  # test id -> the Run that reported it
        self.started = set()

    def add(self, run):
        if run is not self.first:
            self.runs.append(run)
        for tid in run.started:
            self.started.add(tid)
            self.source.setdefault(tid, run)
        for tid, o in run.outcomes.items():
            self.outcome[tid] = "+".join(sorted(o))
            self.source[tid] = run
        last = run.cut_short()
        if last is not None:
            if run.hung():
                end = "HANG"
            else:
                end = "CRASH(rc %s)" % run.rc
            if last in self.outcome:  # it ended, then the process did
                end = "%s, then %s" % (self.outcome[last], end)
            self.outcome[last] = end
            self.source[last] = run

    def get(self, tid):
        if tid == RC_ID:
            return "rc=%s" % self.first.rc
        return self.outcome.get(tid, "missing")

    def secs(self):
        return sum(r.secs for r in self.runs)


def match_pattern(tid):
    # "setUpClass (test.x.Cls)": every test of test.x.Cls
    if " (" in tid and tid.endswith(")"):
        return tid[tid.index(" (") + 2:-1] + ".*"
    return tid


def find_profile(dirname, pid, deadline):
    """The collector's profile of PID, waiting for it until DEADLINE."""
    while True:
        # the CPU profile, not the heap, block or mutex profile beside it
        hits = [h for h in glob.glob(os.path.join(dirname,
                                                  "*.%d.*.pb.gz" % pid))
                if not h.endswith((".heap.pb.gz", ".block.pb.gz",
                                   ".mutex.pb.gz"))]
        if hits:
            return hits[0]
        if time.time() > deadline:
            return None
        time.sleep(0.1)


def check_profile(args, run, deadline):
    """(problem or '', note) for a preloaded process's profile."""
    f = find_profile(args.profiles, run.pid, deadline)
    if f is None:
        return "no profile for pid %d in %s" % (run.pid, args.profiles), \
            "no profile"
    try:
        p = pprof_shares.load(f)
    except ValueError as e:
        return "%s: %s" % (f, e), "unreadable profile"
    total = in_tests = lost = 0
    for w, frames, _ in p.stacks():
        total += w
        if any("/test/" in fr.file for fr in frames):
            in_tests += w
        if frames and frames[0].name.startswith("[lost"):
            lost += w
    note = "%d samples, %d in test/ files, %d lost" % (total, in_tests, lost)
    if total == 0 or in_tests == 0:
        return "%s: %s" % (os.path.basename(f), note), note
    return "", note


def excerpt(run, tid, outcome, n=30):
    """The lines of RUN's log that tell what happened to TID (its
    traceback, or faulthandler's dump for a hang), at most N."""
    try:
        with open(run.log, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    short = tid.split(" ")[0].rsplit(".", 1)[-1]
    if outcome == "HANG":
        for i, line in enumerate(lines):
            if "Timeout (0:" in line:
                return lines[max(0, i - 2):i + n]
    for i, line in enumerate(lines):
        if (line.startswith("FAIL: ") or line.startswith("ERROR: ")) and \
                short in line:
            out = [line]
            for more in lines[i + 1:i + n]:
                if more.startswith("=" * 20):
                    break
                out.append(more)
            return out
    for i, line in enumerate(lines):
        if short in line and " ... " in line:
            return lines[i:i + 6]
    return lines[-n:]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--hz", type=int, default=10000)
    ap.add_argument("--env", action="append", default=[],
                    metavar="PYPROF_X=V",
                    help="one more variable for the preloaded runs")
    ap.add_argument("--variant", action="append", default=[],
                    metavar="NAME=HZ[,PYPROF_X=V...]",
                    help="a preloaded configuration (repeatable)")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--reruns", type=int, default=2)
    ap.add_argument("--test-timeout", type=int, default=30)
    ap.add_argument("--process-timeout", type=int, default=300)
    ap.add_argument("--budget", type=int, default=420)
    ap.add_argument("modules", nargs="+")
    args = ap.parse_args(argv)
    args.variants = {}  # name -> (hz, [K=V...])
    names = []
    try:
        for v in args.variant or ["pyprof=%d" % args.hz]:
            name, hz, env = parse_variant(v, args.env)
            if name in args.variants:
                raise ValueError("--variant %s given twice" % name)
            args.variants[name] = (hz, env)
            names.append(name)
    except ValueError as e:
        ap.error(str(e))
    ways = {}  # module spec -> the variants it runs under
    for m in args.modules:
        head = m.split(":")[0]
        if "@" in head:
            want = head.split("@", 1)[1].split(",")
            for v in want:
                if v not in args.variants:
                    ap.error("%s: no --variant %s" % (m, v))
            ways[m] = [v for v in names if v in want]
        else:
            ways[m] = list(names)
    os.makedirs(args.work, exist_ok=True)
    # Started from a shell without job control, SIGINT may be ignored,
    # and an ignored signal stays ignored across exec: the tests of
    # KeyboardInterrupt would fail in both runs. Python's own handler here
    # means the default in the children.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.time()

    # 1. Every module, every way, the runs of a module side by side.
    res = {}
    first = []
    for m in args.modules:
        for mode in ["plain"] + ways[m]:
            r = Run(args, m, mode, "0")
            res[(m, mode)] = Result(r)
            first.append(r)
    run_all(args, first)
    for r in first:
        res[(r.spec, r.mode)].add(r)

    def over_budget(what):
        if time.time() - t0 < args.budget:
            return False
        print("over the %ds budget: %s skipped" % (args.budget, what))
        return True

    # 2. Continue past a hang or a crash.
    for k in range(1, MAX_CONTINUATIONS + 1):
        if over_budget("continuations after hangs and crashes"):
            break
        more = []
        for m in args.modules:
            modes = ["plain"] + ways[m]
            for mode in modes:
                mine = res[(m, mode)]
                last = mine.runs[-1]
                if last.cut_short() is None:
                    continue
                todo = sorted(set(t for o in modes if o != mode
                                  for t in res[(m, o)].started
                                  if t not in mine.started))
                if todo:
                    more.append(Run(args, m, last.mode, "0c%d" % k,
                                    [match_pattern(t) for t in todo]))
        if not more:
            break
        run_all(args, more)
        for r in more:
            res[(r.spec, r.mode)].add(r)

    print("all modules run %s in %.0fs" % (
        "both ways" if len(names) == 1 else "plainly and preloaded",
        time.time() - t0))

    # 3. Compare each variant with the plain runs.
    diffs = {}  # (module, variant) -> [test ids]
    bad_profiles = []
    # Every process has exited: the collector writes each profile as its
    # connection closes. 15 s for the last ones, in all.
    deadline = time.time() + 15
    for m in args.modules:
        a = res[(m, "plain")]
        for v in ways[m]:
            b = res[(m, v)]
            ids = sorted(set(a.outcome) | set(b.outcome))
            differ = [t for t in ids if a.get(t) != b.get(t)]
            if not differ and a.first.rc != b.first.rc:
                differ = [RC_ID]
            if differ:
                diffs[(m, v)] = differ
            notes = []
            for r in b.runs:
                err, note = check_profile(args, r, deadline)
                notes.append(note)
                if err:
                    bad_profiles.append("%s (%s): %s" % (m, v, err))
            counts = {}
            for t in ids:
                counts[a.get(t)] = counts.get(a.get(t), 0) + 1
            label = m.split(":")[0].split("@")[0]
            if len(names) > 1:
                label += " " + v
            print("%-28s %4d tests (%s) rc %s/%s %5.1fs/%5.1fs %s [%s]" % (
                label, len(ids),
                " ".join("%s %d" % (k, n) for k, n in sorted(counts.items())),
                a.first.rc, b.first.rc, a.secs(), b.secs(),
                "same" if not differ else "%d DIFFER" % len(differ),
                "; ".join(notes)))
    sys.stdout.flush()

    # 4. Rerun what differs: plainly --reruns times (once for every
    # variant that differs), each differing variant once.
    reruns = {}
    todo = []
    plain_todo = {}  # module -> (whole, set of match patterns)
    for (m, v), tids in sorted(diffs.items()):
        whole = tids == [RC_ID]
        match = None if whole else sorted(set(match_pattern(t)
                                              for t in tids))
        w, pats = plain_todo.get(m, (False, set()))
        plain_todo[m] = (w or whole, pats | set(match or []))
        if whole or any(res[(m, v)].get(t) != "HANG" for t in tids):
            no_hang = match if whole else sorted(set(
                match_pattern(t) for t in tids
                if res[(m, v)].get(t) != "HANG"))
            r = Run(args, m, v, "rerun1", no_hang)
            reruns[(m, v, 1)] = r
            todo.append(r)
    for m, (whole, pats) in sorted(plain_todo.items()):
        for i in range(1, args.reruns + 1):
            r = Run(args, m, "plain", "rerun%d" % i,
                    None if whole else sorted(pats))
            reruns[(m, "plain", i)] = r
            todo.append(r)
    if todo and over_budget("reruns (every difference stands)"):
        todo = []
        reruns = {}
    if todo:
        print("\nrerunning the %d differing test(s) of %d module(s)" % (
            len(set((m, t) for (m, _), ts in diffs.items() for t in ts)),
            len(plain_todo)))
        sys.stdout.flush()
        run_all(args, todo)

    def rerun_outcome(m, mode, i, t):
        r = reruns.get((m, mode, i))
        if r is None:
            return None
        one = Result(r)
        one.add(r)
        return one.get(t)

    n_diff = n_flaky = 0
    shown = 0  # tracebacks printed: the first few tell the story
    for (m, v), tids in sorted(diffs.items()):
        for t in tids:
            a, b = res[(m, "plain")], res[(m, v)]
            plain = [a.get(t)] + [
                o for o in (rerun_outcome(m, "plain", i, t)
                            for i in range(1, args.reruns + 1))
                if o is not None]
            pre = [b.get(t)]
            again = rerun_outcome(m, v, 1, t)
            if again is not None and b.get(t) != "HANG":
                pre.append(again)
            if len(set(plain)) > 1:
                n_flaky += 1
                verdict = "FLAKY without the library"
            else:
                n_diff += 1
                verdict = "DIFFERENCE"
            print("\n%s: %s %s%s" % (verdict, m.split(":")[0].split("@")[0], t,
                                      " (%s)" % v if len(names) > 1 else ""))
            print("    plain:   %s" % ", ".join(plain))
            print("    preload: %s" % ", ".join(pre))
            if verdict != "DIFFERENCE" or t == RC_ID:
                continue
            shown += 1
            for mode, r in (("plain", a), ("preload", b)):
                src = r.source.get(t, r.first)
                d = src.details.get(t)
                if d:
                    print("    %s detail: %s" % (mode, "; ".join(d)[:600]))
                if mode == "preload" and shown <= 12:
                    print("    --- preload log (%s):" % src.log)
                    for line in excerpt(src, t, r.get(t)):
                        print("    | " + line[:220])
    for e in bad_profiles:
        print("\nNO SAMPLES: %s" % e)
    print("\n%s: %d module(s), %d difference(s), %d flaky without the "
          "library, %d profile problem(s), %.0fs" % (
              args.python, len(args.modules), n_diff, n_flaky,
              len(bad_profiles), time.time() - t0))
    return 1 if n_diff or bad_profiles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
