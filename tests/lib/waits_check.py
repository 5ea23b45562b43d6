#!/usr/bin/env python3
"""waits_check.py - checks on block and mutex profiles, as decoded by the
real `go tool pprof -raw` (tests/e2e/waits.bats), against the truth the
target computed from its own clock.

  waits_check.py locks BLOCK MUTEX TRUTH.json
    tests/targets/waits_locks.py. Both profiles have Go's sample types
    contentions/count and delay/nanoseconds. Among the program's four
    functions (each counted where it is on the stack; waits for the GIL,
    whose stacks end in "[GIL]", left out: the program's measure is of
    the lock), the block profile's share of delay per function within 3
    points of the program's measure, and its total within 15%; the mutex
    profile's share per holding function within 5 points of the overlap
    truth.
  waits_check.py locks-window BLOCK MUTEX LOG.json
    The same checks for profiles of a window (the collector's
    /debug/pprof/block and /mutex): the truth is computed from the
    program's log (waits_locks.py SECONDS LOG) over the profiles' span
    (time_nanos, duration_nanos), as the profiles count: a wait in the
    window it ended in, whole; a hold's charge in the window of its
    release (both profiles must cover the same span, to the second).
  waits_check.py locks-between BLOCK MUTEX LOG.json START_NS END_NS
    The same over [START_NS, END_NS) of CLOCK_MONOTONIC (the program's
    perf_counter): `pyprof ctl start --waits` and `ctl stop` (their
    since_mono_ns), for files that hold only the waits in between.
  waits_check.py gil BLOCK MUTEX TRUTH.json
    tests/targets/waits_gil.py: nap's waits for the GIL (stacks through
    nap ending in "[GIL]") within 20% of the oversleep the program
    measured beside the loop less the one it has alone; at least 90% of
    that charged to spin in the mutex profile ("[GIL]" stacks through
    spin).
  waits_check.py pushed TRUTH.json DIR
    waits_locks.py run with its "labels" argument under a collector that
    pushed to tests/lib/pyroscope_receiver.py, which recorded every
    request in DIR (NNNN.json, NNNN.pb.gz). The block windows (series
    __name__ "block", sent as the Go SDK sends them: the form's
    sample_type_config names contentions and delay block_count and
    block_duration, units lock_samples and lock_nanoseconds) and the
    mutex windows (mutex, mutex_count, mutex_duration), summed over the
    windows, pass the checks of "locks"; every sample through one of the
    program's four functions carries the label role=<that function> (the
    waiter's on block samples, the holder's on mutex samples), a
    thread_id and a thread_name. Prints "KIND contentions delay" totals
    per kind for the caller to compare with the OTLP windows.
  waits_check.py async BLOCK TRUTH.json
    tests/targets/waits_async.py: the lock waits of each asyncio task
    (stacks through serve, not ending in "[GIL]") carry its label
    endpoint=/a or /b, none is without one, and each endpoint's delay is
    within 15% (or 2 ms) of what the task measured.
Exit status 1 with a reason on the first failed check.
"""
import datetime
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_raw  # noqa: E402

TYPES = ["contentions/count", "delay/nanoseconds"]


def fail(msg):
    sys.stderr.write("waits_check: %s\n" % msg)
    sys.exit(1)


_decoded = {}


def decode(path):
    """go tool pprof -raw's text for path, once."""
    if path not in _decoded:
        _decoded[path] = pprof_raw.decode(path)
    return _decoded[path]


def load(path, labels=None):
    """[(names leaf first, count, value)]; with a list labels, each
    sample's labels appended to it."""
    types, samples, locs, _ = pprof_raw.parse(decode(path))
    if types != TYPES:
        fail("%s: sample types %s, expected %s" % (path, types, TYPES))
    out = []
    for s in samples:
        out.append(([locs[l][0] for l in s["locs"]], s["count"], s["value"]))
        if labels is not None:
            labels.append(s["labels"])
    return out


def delay_of(samples, func, gil):
    """ns of the samples with func on the stack, ending in [GIL] or not."""
    return sum(v for names, _, v in samples
               if func in names and (names[:1] == ["[GIL]"]) == gil)


def shares(d):
    total = sum(d.values())
    return {k: (100.0 * v / total if total else 0.0) for k, v in d.items()}


def compare(what, got, want, points):
    gs, ws = shares(got), shares(want)
    print("%s: %s" % (what, ", ".join(
        "%s %.1f%% (truth %.1f%%)" % (k, gs[k], ws[k]) for k in sorted(ws))))
    for k in sorted(ws):
        if abs(gs[k] - ws[k]) > points:
            fail("%s: %s has %.1f%% of the delay, the program measured "
                 "%.1f%% (more than %g points apart)"
                 % (what, k, gs[k], ws[k], points))


def locks(block_path, mutex_path, truth_path, block=None, mutex=None):
    truth = json.load(open(truth_path))
    names = sorted(truth["block"])
    if block is None:
        block, mutex = load(block_path), load(mutex_path)
    got_b = {f: delay_of(block, f, False) / 1e9 for f in names}
    got_m = {f: delay_of(mutex, f, False) / 1e9 for f in names}
    compare("block", got_b, truth["block"], 3)
    tb, wb = sum(got_b.values()), sum(truth["block"].values())
    print("block total: %.3f s (truth %.3f s)" % (tb, wb))
    if not wb or abs(tb - wb) > 0.15 * wb:
        fail("block: total %.3f s, the program measured %.3f s (more than "
             "15%% apart)" % (tb, wb))
    compare("mutex", got_m, truth["mutex"], 5)


def span(path):
    """The profile's [start, end) in Unix seconds, from go tool pprof's
    Time: and Duration: lines."""
    text = decode(path)
    t = re.search(r"^Time: (\d+-\d+-\d+ \d+:\d+:\d+)(\.\d+)? ([+-]\d{4})",
                  text, re.M)
    d = re.search(r"^Duration: (\S+)", text, re.M)
    if not t or not d:
        fail("%s: no Time: or Duration: in go tool pprof -raw" % path)
    start = datetime.datetime.strptime(t.group(1) + " " + t.group(3),
                                       "%Y-%m-%d %H:%M:%S %z").timestamp()
    start += float(t.group(2) or 0)
    dur = 0.0
    for num, unit in re.findall(r"([\d.]+)(h|ms|us|µs|ns|m|s)", d.group(1)):
        dur += float(num) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3,
                             "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]
    return start, start + dur


def locks_span(block_path, mutex_path, log, s, e):
    """The locks checks over [s, e) of the program's clock."""
    names = sorted(set(x[0] for x in log))
    block_truth = dict.fromkeys(names, 0.0)
    mutex_truth = dict.fromkeys(names, 0.0)
    # (its threads may start just after the window opens: they waited
    # for nothing before)
    if not log or min(x[1] for x in log) > s + 0.5 or \
            max(x[3] for x in log) < e:
        fail("the program did not run through the window: it ran %.3f to "
             "%.3f, the window is %.3f to %.3f (its perf_counter)"
             % (min(x[1] for x in log) if log else 0,
                max(x[3] for x in log) if log else 0, s, e))
    for name, t0, t1, _ in log:
        if s <= t1 < e:
            block_truth[name] += t1 - t0
    # waits that can overlap a hold released in the window
    near = [x for x in log if x[2] >= s - 1 and x[1] < e]
    for hname, _, a, r in log:
        if not s <= r < e:
            continue
        for name, t0, t1, _ in near:
            if name != hname:
                mutex_truth[hname] += max(0.0, min(r, t1) - max(a, t0))
    block, mutex = load(block_path), load(mutex_path)
    got_b = {f: delay_of(block, f, False) / 1e9 for f in names}
    got_m = {f: delay_of(mutex, f, False) / 1e9 for f in names}
    print("window: %.3f s" % (e - s))
    compare("block", got_b, block_truth, 3)
    tb, wb = sum(got_b.values()), sum(block_truth.values())
    print("block total: %.3f s (truth %.3f s)" % (tb, wb))
    if not wb or abs(tb - wb) > 0.15 * wb:
        fail("block: total %.3f s, the program measured %.3f s in the "
             "window (more than 15%% apart)" % (tb, wb))
    compare("mutex", got_m, mutex_truth, 5)


def locks_window(block_path, mutex_path, log_path):
    data = json.load(open(log_path))
    s0, e0 = span(block_path)
    s1, e1 = span(mutex_path)
    if abs(s0 - s1) > 1 or abs(e0 - e1) > 1:
        fail("the block and mutex windows differ: %.3f-%.3f and %.3f-%.3f"
             % (s0, e0, s1, e1))
    # Unix time to the program's clock (perf_counter)
    locks_span(block_path, mutex_path, data["log"], s0 - data["offset"],
               e0 - data["offset"])


def locks_between(block_path, mutex_path, log_path, start_ns, end_ns):
    data = json.load(open(log_path))
    locks_span(block_path, mutex_path, data["log"], int(start_ns) / 1e9,
               int(end_ns) / 1e9)


def gil(block_path, mutex_path, truth_path):
    truth = json.load(open(truth_path))
    block, mutex = load(block_path), load(mutex_path)
    waited = delay_of(block, "nap", True) / 1e9
    want = truth["gil"]
    charged = delay_of(mutex, "spin", True) / 1e9
    print("nap waited %.3f s for the GIL (truth %.3f s); spin charged "
          "%.3f s" % (waited, want, charged))
    if want <= 0 or abs(waited - want) > 0.2 * want:
        fail("gil: nap waited %.3f s for the GIL, the program's oversleep "
             "says %.3f s (more than 20%% apart)" % (waited, want))
    if charged < 0.9 * waited:
        fail("gil: spin was charged %.3f s, under 90%% of nap's %.3f s"
             % (charged, waited))


SDK = {"block": {"contentions": ("block_count", "lock_samples"),
                  "delay": ("block_duration", "lock_nanoseconds")},
        "mutex": {"contentions": ("mutex_count", "lock_samples"),
                  "delay": ("mutex_duration", "lock_nanoseconds")}}


def pushed(truth_path, rec_dir):
    names = sorted(json.load(open(truth_path))["block"])
    got = {"block": [], "mutex": []}
    n = {"block": 0, "mutex": 0}
    for path in sorted(glob.glob(os.path.join(rec_dir, "*.json"))):
        rec = json.load(open(path))
        kind = rec.get("series", {}).get("__name__")
        if rec["status"] != 200 or kind not in got:
            continue
        n[kind] += 1
        sdk = dict((t, (rec["display_names"].get(t), rec["units"].get(t)))
                   for t in ("contentions", "delay"))
        if sdk != SDK[kind]:
            fail("%s: a %s window's sample_type_config %s, not the Go "
                 "SDK's %s" % (path, kind, sdk, SDK[kind]))
        labels = []
        samples = load(path[:-len(".json")] + ".pb.gz", labels)
        for (stack, c, v), lab in zip(samples, labels):
            mine = [f for f in names if f in stack]
            if not mine:
                continue
            if lab.get("role") != mine[0]:
                fail("%s: a %s sample through %s has role=%s"
                     % (path, kind, mine[0], lab.get("role")))
            if not lab.get("thread_id") or not lab.get("thread_name"):
                fail("%s: a %s sample without thread_id or thread_name: "
                     "%s" % (path, kind, lab))
        got[kind].extend(samples)
    for kind in ("block", "mutex"):
        if not n[kind]:
            fail("no %s window arrived" % kind)
        print("%s %d %d" % (kind, sum(c for _, c, _ in got[kind]),
                            sum(v for _, _, v in got[kind])))
    print("windows: %d block, %d mutex" % (n["block"], n["mutex"]))
    locks(None, None, truth_path, got["block"], got["mutex"])


def by_task(block_path, truth_path):
    truth = json.load(open(truth_path))
    labels = []
    samples = load(block_path, labels)
    got = dict.fromkeys(truth, 0.0)
    for (names, _, v), lab in zip(samples, labels):
        if "serve" not in names or names[:1] == ["[GIL]"]:
            continue
        e = lab.get("endpoint")
        if e not in got:
            fail("a wait in serve labelled endpoint=%s, not one of %s"
                 % (e, sorted(truth)))
        got[e] += v / 1e9
    for e in sorted(truth):
        print("%s: %.4f s (the task measured %.4f s)" % (e, got[e], truth[e]))
        if abs(got[e] - truth[e]) > max(0.15 * truth[e], 0.002):
            fail("%s waited %.4f s by its labels, %.4f s by its own clock"
                 % (e, got[e], truth[e]))


def main():
    modes = {"locks": locks, "locks-window": locks_window, "gil": gil,
             "locks-between": locks_between, "pushed": pushed,
             "async": by_task}
    two = sys.argv[1:2] in (["pushed"], ["async"])
    if sys.argv[1:2] == ["locks-between"] and len(sys.argv) == 7:
        pass
    elif len(sys.argv) != (4 if two else 5) or sys.argv[1] not in modes:
        sys.stderr.write(__doc__)
        return 2
    modes[sys.argv[1]](*sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
