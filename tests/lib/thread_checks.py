#!/usr/bin/env python3
"""thread_checks.py - the checks of tests/e2e/threads.bats, each comparing
a profile (read through `go tool pprof -raw`, by pprof_shares.py) with what
the target program measured itself (its last stdout line, JSON).

  cpu-total PROFILE TRUTH --rel R --fixed-ms F
        the profile's CPU total (sum of cpu/nanoseconds, every sample)
        against TRUTH's process_cpu (getrusage) less its library_cpu (the
        profiler's own threads, when TRUTH has it): fails if they differ by
        more than R * process_cpu + F ms
  rate PROFILE TRUTH --hz N --func F [--tol T]
        samples under F against N * TRUTH's cpu: fails if off by more
        than T (a fraction, default 0.1), or if a profile comment says
        the achieved rate is more than T away from N
  names PROFILE TRUTH [--max-unnamed U]
        every thread TRUTH lists (names, tids) shows in the profile with
        its thread_id and exactly its name; no other thread_id; at most U
        (default 0.1) of the samples without a thread_name
  rename PROFILE TRUTH [--min-new M]
        the samples of before_rename carry TRUTH's old name, those of
        after_rename mostly (at least M, default 0.4) the new one, both
        under the same thread_id
  gil PROFILE TRUTH --seconds S
        every sample of gil_compute, gil_c (C code, GIL released) and
        gil_sleep has a gil label; gil_sleep and gil_c are mostly
        released, gil_compute held at least as often as it was measured
        computing
  blocked CONTROL --plain P... --profiled P... [--sleep-tol-ms D]
        runs of tests/targets/blocked.py: CONTROL (with --control) must
        count EINTRs on every call (the counting works); the plain and
        the profiled runs must count the same (none), no other error, and
        sleep as accurately (median and p90 oversleep of the best run on
        each side within D ms, default 1)
  per-thread WHOLE PART...
        each PART (a per-thread profile) holds samples of one thread_id
        only, whose name and number its file name carries; together they
        hold exactly the samples of WHOLE per thread

Exit status 0, 1 when a check fails, 2 on bad input. Python 3.5+, never
run under LD_PRELOAD.
"""

import argparse
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_shares  # noqa: E402


def truth(path):
    """The last line of a target's stdout, as JSON."""
    with open(path) as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    if not lines:
        raise ValueError("%s is empty" % path)
    return json.loads(lines[-1])


def value_total(p, kind):
    for i, t in enumerate(p.sample_types):
        if t.replace("[dflt]", "").startswith(kind + "/"):
            return sum(v[i] for v, _, _ in p.samples if i < len(v))
    raise ValueError("no %s sample type in %s" % (kind, p.sample_types))


def under(p, func, where=None):
    """Samples (count) with func in their stack and labels matching where."""
    n = 0
    for w, frames, labels in p.stacks():
        if where and any(labels.get(k) != v for k, v in where.items()):
            continue
        if any(fr.name == func for fr in frames):
            n += w
    return n


def by_label(p, func, key):
    c = collections.Counter()
    for w, frames, labels in p.stacks():
        if any(fr.name == func for fr in frames):
            c[labels.get(key, "<none>")] += w
    return c


def verdict(ok, why):
    print(("ok: " if ok else "FAIL: ") + why)
    return ok


# ---- the checks -----------------------------------------------------------


def cmd_cpu_total(a):
    p = pprof_shares.load(a.profile)
    t = truth(a.truth)
    sampled = value_total(p, "cpu") / 1e9
    # --user: for a source that counts user time only (perf_event
    # counters with exclude_kernel, past the tick with PYPROF_NATIVE;
    # docs/environment.md, "Rates"): compare like with like.
    kernel = float(t["process_user_cpu" if a.user else "process_cpu"])
    # the profiler's own threads (named pyprof-*: its agent, and beside
    # perf counters the CPU-clock thread) are in getrusage but are none
    # of the program's work
    if not a.user:
        kernel -= float(t.get("library_cpu", 0.0))
    allowed = a.rel * kernel + a.fixed_ms / 1000.0
    diff = sampled - kernel
    print("sampled CPU %.3f s, kernel (getrusage%s) %.3f s, difference "
          "%+.3f s (%+.1f%%), allowed +-%.3f s" % (
              sampled, ", user" if a.user else "", kernel, diff, 100 * diff / kernel if kernel else 0,
              allowed))
    return verdict(abs(diff) <= allowed and kernel > 0,
                   "CPU totals agree" if abs(diff) <= allowed
                   else "CPU totals differ by more than allowed")


ACHIEVED_RE = re.compile(r"sampling rate asked (\d+) Hz, achieved (\d+) Hz")


def cmd_rate(a):
    p = pprof_shares.load(a.profile)
    t = truth(a.truth)
    got = under(p, a.func)
    want = a.hz * float(t["cpu"])
    ok = True
    print("%s: %d samples; %d Hz x %.3f s of CPU = %.0f expected "
          "(%+.1f%%)" % (a.func, got, a.hz, t["cpu"], want,
                         100.0 * (got - want) / want if want else 0))
    # a sample per period of the thread's CPU: however exact, a count
    # over a span of CPU is off by the period's phase at either end, one
    # sample, which is more than the tolerance when the span is short (a
    # busy host gives the program little CPU in its wall seconds)
    ok &= verdict(want > 0 and abs(got - want) <= max(a.tol * want, 1.0),
                  "sample count within %.0f%% (or one sample) of rate x "
                  "CPU time" % (100 * a.tol))
    for c in p.comments:
        m = ACHIEVED_RE.search(c)
        if m:
            print("comment: %s" % c)
            asked, achieved = int(m.group(1)), int(m.group(2))
            ok &= verdict(abs(achieved - asked) <= a.tol * asked,
                          "achieved rate %d Hz vs asked %d Hz" % (
                              achieved, asked))
    return ok


def cmd_names(a):
    p = pprof_shares.load(a.profile)
    t = truth(a.truth)
    want = dict((n, t["tids"].get(n)) for n in t["names"])
    names_of = collections.defaultdict(collections.Counter)
    total = unnamed = 0
    for w, _, labels in p.stacks():
        tid = labels.get("thread_id")
        if tid is None:
            continue
        total += w
        name = labels.get("thread_name")
        if name is None:
            unnamed += w
            continue
        names_of[int(tid)][name] += w
    ok = True
    print("%-10s %-28s %s" % ("thread_id", "expected name", "names seen"))
    for n, tid in sorted(want.items(), key=lambda kv: str(kv[1])):
        seen = names_of.get(tid, {})
        print("%-10s %-28s %s" % (tid, n, dict(seen)))
        if list(seen) != [n]:
            ok = verdict(False, "thread %s: expected exactly the name %r"
                         % (tid, n))
    extra = set(names_of) - set(want.values())
    if extra:
        ok = verdict(False, "threads the program does not have: %s, named "
                     "%s" % (sorted(extra),
                             [dict(names_of[x]) for x in sorted(extra)]))
    print("threads in the profile: %d named (program: %d); samples without "
          "a name: %d of %d" % (len(names_of), len(want), unnamed, total))
    if total == 0 or unnamed > a.max_unnamed * total:
        ok = verdict(False, "more than %.0f%% of the samples have no "
                     "thread_name" % (100 * a.max_unnamed))
    return verdict(ok, "%d threads with their exact names" % len(want)) \
        if ok else False


def cmd_rename(a):
    p = pprof_shares.load(a.profile)
    t = truth(a.truth)
    old, new = t["old"], t["new"]
    ok = True
    tids = collections.Counter()
    rows = {}
    for func in ("before_rename", "after_rename"):
        c = by_label(p, func, "thread_name")
        rows[func] = c
        print("%s: %s" % (func, dict(c)))
        for w, frames, labels in p.stacks():
            if any(fr.name == func for fr in frames):
                tids[labels.get("thread_id")] += w
    before, after = rows["before_rename"], rows["after_rename"]
    nb, na = sum(before.values()), sum(after.values())
    if len(tids) != 1:
        ok = verdict(False, "the worker's samples carry %d thread_ids: %s"
                     % (len(tids), dict(tids)))
    if nb < 10 or na < 10:
        return verdict(False, "too few samples (%d before, %d after)"
                       % (nb, na))
    # A sample is named when the agent drains it (every 20 ms), so a
    # sample taken just before the rename may carry the new name.
    ok &= verdict(before[new] <= max(2, 0.03 * nb),
                  "before_rename: %d of %d samples carry the new name"
                  % (before[new], nb))
    ok &= verdict(before[old] >= 0.8 * nb,
                  "before_rename: %d of %d samples carry the old name "
                  "(want 80%%)" % (before[old], nb))
    ok &= verdict(after[new] >= a.min_new * na,
                  "after_rename: %d of %d samples carry the new name "
                  "(want %.0f%%; names are read every 500 ms)"
                  % (after[new], na, 100 * a.min_new))
    return ok


def cmd_gil(a):
    p = pprof_shares.load(a.profile)
    t = truth(a.truth)
    ok = True
    rows = {}
    for func in ("gil_compute", "gil_c", "gil_sleep"):
        c = by_label(p, func, "gil")
        rows[func] = c
        n = sum(c.values())
        print("%-12s %4d samples: held %4d, released %4d, no label %4d; "
              "CPU %.3f s" % (func, n, c["held"], c["released"], c["<none>"],
                              t["cpu"].get(func, 0.0)))
        if n < 20:
            ok = verdict(False, "%s: too few samples" % func)
            continue
        if c["<none>"]:
            ok = verdict(False, "%s: %d samples without a gil label"
                         % (func, c["<none>"]))
    if not ok:
        return False
    share = lambda func, v: float(rows[func][v]) / sum(rows[func].values())
    ok &= verdict(share("gil_sleep", "released") >= 0.95,
                  "gil_sleep released in %.0f%% of its samples (want 95%%)"
                  % (100 * share("gil_sleep", "released")))
    ok &= verdict(share("gil_c", "released") >= 0.8,
                  "gil_c released in %.0f%% of its samples (want 80%%)"
                  % (100 * share("gil_c", "released")))
    # A Python thread computes only while it holds the GIL, so it must be
    # seen holding it at least in the share of time it was measured on
    # CPU (it may hold it longer: preempted by other programs, or while
    # the thread in C waits for it).
    busy = min(1.0, t["cpu"].get("gil_compute", 0.0) / a.seconds)
    ok &= verdict(share("gil_compute", "held") >= busy - 0.15,
                  "gil_compute held in %.0f%% of its samples; it computed "
                  "%.0f%% of the time (want at least that - 15 points)"
                  % (100 * share("gil_compute", "held"), 100 * busy))
    return ok


def cmd_blocked(a):
    control = truth(a.control)
    plain = [truth(f) for f in a.plain]
    prof = [truth(f) for f in a.profiled]
    ok = True
    print("%-10s %-30s %-24s %s" % ("run", "EINTR (read/nanosleep/poll)",
                                    "oversleep median/p90 ms", "errors"))
    runs = [("control", control)] + \
        [("plain%d" % i, r) for i, r in enumerate(plain, 1)] + \
        [("profiled%d" % i, r) for i, r in enumerate(prof, 1)]
    for name, r in runs:
        e = r["eintr"]
        print("%-10s %-30s %-24s %s" % (
            name, "%d / %d / %d" % (e["read"], e["nanosleep"], e["poll"]),
            "%.3f / %.3f" % (r["sleep"]["median_ms"], r["sleep"]["p90_ms"]),
            r["other_errors"] or "-"))
    calls = ("read", "nanosleep", "poll")
    ok &= verdict(all(control["eintr"][c] >= 1 for c in calls),
                  "control run: an EINTR counted on every call (the "
                  "counting works)")
    ok &= verdict(all(r["eintr"] == plain[0]["eintr"] for r in plain + prof),
                  "same EINTR counts without and with the library")
    ok &= verdict(not any(r["other_errors"] for r in plain + prof),
                  "no other error")
    # Other programs on the machine only ever delay a wake-up: compare the
    # best of the runs on each side.
    for k in ("median_ms", "p90_ms"):
        d = min(r["sleep"][k] for r in prof) - min(r["sleep"][k]
                                                   for r in plain)
        ok &= verdict(d <= a.sleep_tol_ms,
                      "time.sleep(0.01) oversleep %s, best run each: "
                      "%+.3f ms with the library (allowed +%.1f)"
                      % (k, d, a.sleep_tol_ms))
    return ok


def file_name_of(thread_name):
    """What the collector makes of a thread name in a file name: each
    byte of its UTF-8 outside [A-Za-z0-9_-] becomes '_', 64 at most."""
    out = re.sub(rb"[^A-Za-z0-9_-]", b"_",
                 thread_name.encode("utf-8"))[:64].decode("ascii")
    return out if out.strip("_") else None


TID_RE = re.compile(r"\.tid(\d+)(?:\.([A-Za-z0-9_-]+))?\.pb\.gz$")


def cmd_per_thread(a):
    whole = pprof_shares.load(a.whole)
    per_tid = collections.Counter()
    names = collections.defaultdict(set)
    for w, _, labels in whole.stacks():
        if "thread_id" in labels:
            per_tid[int(labels["thread_id"])] += w
            if "thread_name" in labels:
                names[int(labels["thread_id"])].add(labels["thread_name"])
    ok = True
    seen = set()
    for path in a.parts:
        m = TID_RE.search(os.path.basename(path))
        if not m:
            ok = verdict(False, "%s: no .tid<N>[.<name>].pb.gz in the "
                         "name" % path)
            continue
        tid = int(m.group(1))
        part = pprof_shares.load(path)
        tids = collections.Counter()
        for w, _, labels in part.stacks():
            tids[labels.get("thread_id", "<none>")] += w
        got = sum(tids.values())
        print("%s: thread_ids %s; the whole profile has %d samples of "
              "thread %d" % (os.path.basename(path), dict(tids),
                             per_tid.get(tid, 0), tid))
        if list(tids) != [str(tid)]:
            ok = verdict(False, "%s holds samples of other threads" % path)
        if got != per_tid.get(tid, 0):
            ok = verdict(False, "%s: %d samples, the whole profile has %d "
                         "for thread %d" % (path, got, per_tid.get(tid, 0),
                                             tid))
        want_name = m.group(2)
        named = [n for n in names.get(tid, ()) if file_name_of(n)]
        if named and want_name is None:
            ok = verdict(False, "%s: the thread has a name, the file name "
                         "does not" % path)
        if want_name is not None and not any(
                file_name_of(n) == want_name for n in names.get(tid, ())):
            ok = verdict(False, "%s: %r is none of the thread's names %s"
                         % (path, want_name, sorted(names.get(tid, ()))))
        seen.add(tid)
    missing = set(per_tid) - seen
    if missing:
        ok = verdict(False, "no per-thread file for threads %s"
                     % sorted(missing))
    return verdict(ok, "%d per-thread profiles, each with only its "
                   "thread's samples" % len(seen)) if ok else False


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    s = sub.add_parser("cpu-total")
    s.add_argument("profile")
    s.add_argument("truth")
    s.add_argument("--rel", type=float, required=True)
    s.add_argument("--fixed-ms", type=float, required=True)
    s.add_argument("--user", action="store_true",
                   help="compare with user time only")
    s = sub.add_parser("rate")
    s.add_argument("profile")
    s.add_argument("truth")
    s.add_argument("--hz", type=int, required=True)
    s.add_argument("--func", required=True)
    s.add_argument("--tol", type=float, default=0.1)
    s = sub.add_parser("names")
    s.add_argument("profile")
    s.add_argument("truth")
    s.add_argument("--max-unnamed", type=float, default=0.1)
    s = sub.add_parser("rename")
    s.add_argument("profile")
    s.add_argument("truth")
    s.add_argument("--min-new", type=float, default=0.4)
    s = sub.add_parser("gil")
    s.add_argument("profile")
    s.add_argument("truth")
    s.add_argument("--seconds", type=float, required=True)
    s = sub.add_parser("blocked")
    s.add_argument("control")
    s.add_argument("--plain", nargs="+", required=True)
    s.add_argument("--profiled", nargs="+", required=True)
    s.add_argument("--sleep-tol-ms", type=float, default=1.0)
    s = sub.add_parser("per-thread")
    s.add_argument("whole")
    s.add_argument("parts", nargs="+")
    a = ap.parse_args(argv)
    if not a.cmd:
        ap.print_help()
        return 2
    fn = {"cpu-total": cmd_cpu_total, "rate": cmd_rate, "names": cmd_names,
          "rename": cmd_rename, "gil": cmd_gil, "blocked": cmd_blocked,
          "per-thread": cmd_per_thread}[a.cmd]
    try:
        return 0 if fn(a) else 1
    except (OSError, ValueError, KeyError) as e:
        print("thread_checks.py: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
