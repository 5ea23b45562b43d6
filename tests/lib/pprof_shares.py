#!/usr/bin/env python3
"""pprof_shares.py - read a profile through the real `go tool pprof -raw`
and answer the questions the end-to-end tests ask about it.

The decoding is Go's (an independent reader of the pprof format); this
script only parses the text that `go tool pprof -raw` prints (pprof's
Profile.String(): "Samples:" lines of values and location ids, leaf first,
then "Locations" lines "ID: 0xADDR [M=N] NAME FILE:LINE s=START").

INPUT is a profile (.pb.gz, decoded with `go tool pprof -symbolize=none
-raw`) or a file already holding that text. Subcommands:

  funcs INPUT                  per function (name, file, start line):
                               cumulative and flat share of all samples
  lines INPUT FUNC [--file F]  where FUNC's samples are: line, count, share;
                               and how often FUNC was the leaf
  folded INPUT [--lines]       folded stacks, root first: "a;b;c COUNT"
  labels INPUT KEY             label KEY's values and their sample counts
  compare INPUT TRUTH --tol PP [--sd K]  shares among TRUTH's functions (TRUTH: JSON
                               with {"shares": {func: fraction}}) against
                               the profile's; fails if any differs by more
                               than PP percentage points
  expect-line INPUT FUNC LINE [--min F] [--min-share S] [--file F]
                               fails unless at least F (default 0.9) of
                               FUNC's samples are at LINE with FUNC as the
                               leaf, and FUNC has at least S of all samples
  label-shares INPUT KEY TRUTH --tol PP [--index N]
                               each value of label KEY's share of all
                               samples (value "" for samples without KEY)
                               against TRUTH's {"shares": {value: fraction}};
                               fails if any differs by more than PP points
                               or the profile has a value TRUTH lacks;
                               --index: weigh by the Nth sample value
                               (0-based) instead of samples/count;
                               --labelled: among the samples that have
                               KEY only (and TRUTH's values other than "")
  roots INPUT --root NAME[@FILE]... [--file F] [--max-truncated S]
                               where stacks start: the samples per root
                               frame (its name, and file); fails if a
                               Python root is none of the NAMEs (in a file
                               ending in FILE, when given), or more than S
                               (default 0.02) of the samples start at
                               [truncated]; other pseudo-frames ([lost:
                               ...], [no Python frame]) are roots of their
                               own and pass. --file: only the stacks with
                               a frame in a file ending in F
  summary INPUT                sample types, totals, period, comments
  threads INPUT                per (thread_id, thread_name) label pair:
                               "TID<TAB>NAME<TAB>SAMPLES" ("<none>" when a
                               sample lacks the label)
  count INPUT [FUNC...] [--where KEY=VALUE]...
                               samples under each FUNC (cumulative) among
                               the samples whose labels match every
                               --where, "FUNC<TAB>N"; then "*<TAB>N", all
                               matching samples; --value: sum the second
                               value (e.g. cpu/nanoseconds) instead

A sample's weight is its samples/count value (the first value if there is
no such type). "Cumulative" counts a sample once for every function that
appears anywhere in its stack. Exit status 0, or 1 when a check fails, 2 on
bad input. Python 3.5+ (the system python3), never run under LD_PRELOAD.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

SAMPLE_RE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*):\s*((?:\d+\s*)*)$")
LABEL_RE = re.compile(r"(\S+?):\[(.*?)\](?=\s|$)")
LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-fA-F]+) (?:M=\d+ )?(?:\[F\] )?(.*)$")
CONT_RE = re.compile(r"^ {13}(\S.*)$")
# NAME FILE:LINE s=START[(SYSTEM NAME)]. A Python function's name has no
# space, a pseudo-frame's is in brackets ("[lost: ring full]"); a file may
# have spaces ("<frozen importlib._bootstrap>") or be empty.
LINE_RE = re.compile(r"^(\[[^\]]*\]|\S+) (.*?):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")


class Frame(object):
    __slots__ = ("name", "file", "line", "start")

    def __init__(self, name, file, line, start):
        self.name, self.file, self.line, self.start = name, file, line, start


class Profile(object):
    def __init__(self):
        self.comments = []
        self.period_type = None
        self.period = None
        self.sample_types = []
        self.samples = []  # (values, [loc ids], {label: value})
        self.locations = {}  # id -> [Frame], innermost first

    def weight_index(self):
        for i, t in enumerate(self.sample_types):
            if t.replace("[dflt]", "") == "samples/count":
                return i
        return 0

    def stacks(self):
        """Yields (weight, [Frame] leaf first, labels)."""
        wi = self.weight_index()
        for values, locs, labels in self.samples:
            frames = []
            for lid in locs:
                frames.extend(self.locations.get(lid, [Frame("??", "", 0, 0)]))
            yield values[wi], frames, labels

    def total(self):
        return sum(w for w, _, _ in self.stacks())


def parse_raw(text):
    p = Profile()
    section = None
    last_loc = None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            p.comments.append(line[len("Comment: "):])
            continue
        if line.startswith("PeriodType: "):
            p.period_type = line[len("PeriodType: "):]
            continue
        if line.startswith("Period: "):
            p.period = int(line[len("Period: "):])
            continue
        if line == "Samples:":
            section = "samples-header"
            continue
        if line == "Locations":
            section = "locations"
            continue
        if line == "Mappings":
            section = "mappings"
            continue
        if section == "samples-header":
            p.sample_types = line.split()
            section = "samples"
            continue
        if section == "samples":
            m = SAMPLE_RE.match(line)
            if m:
                values = [int(v) for v in m.group(1).split()]
                locs = [int(v) for v in m.group(2).split()]
                p.samples.append((values, locs, {}))
                continue
            if p.samples and line.strip():
                for k, v in LABEL_RE.findall(line.strip()):
                    p.samples[-1][2][k] = v
            continue
        if section == "locations":
            m = LOC_RE.match(line)
            if m:
                last_loc = int(m.group(1))
                p.locations[last_loc] = []
                rest = m.group(3)
            else:
                m = CONT_RE.match(line)
                if not m or last_loc is None:
                    continue
                rest = m.group(1)
            lm = LINE_RE.match(rest)
            if lm:
                p.locations[last_loc].append(
                    Frame(lm.group(1), lm.group(2), int(lm.group(3)),
                          int(lm.group(4))))
            elif rest.strip():
                p.locations[last_loc].append(Frame(rest.strip(), "", 0, 0))
    if not p.sample_types:
        raise ValueError("no 'Samples:' section: not `go tool pprof -raw` "
                         "output")
    return p


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    if head == b"\x1f\x8b" or not _looks_textual(path):
        out = subprocess.run(
            ["go", "tool", "pprof", "-symbolize=none", "-raw", path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if out.returncode != 0:
            raise ValueError("go tool pprof -raw %s failed: %s"
                             % (path, out.stderr.decode("utf-8", "replace")))
        text = out.stdout.decode("utf-8", "replace")
    else:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    return parse_raw(text)


def _looks_textual(path):
    with open(path, "rb") as f:
        chunk = f.read(512)
    return b"\0" not in chunk and (b"Samples:" in chunk or
                                   b"PeriodType" in chunk or
                                   b"Period:" in chunk or
                                   chunk.startswith(b"Comment"))


def func_table(p):
    """(name, file, start) -> [cum, flat]. Functions are told apart by
    file and start line too: every module has a "<module>"."""
    table = collections.OrderedDict()
    for w, frames, _ in p.stacks():
        seen = set()
        for i, fr in enumerate(frames):
            key = (fr.name, fr.file, fr.start)
            row = table.setdefault(key, [0, 0])
            if key not in seen:
                row[0] += w
                seen.add(key)
            if i == 0:
                row[1] += w
    return table


def cum_under(p, names):
    """Samples whose stack contains each name, and any of them."""
    per = dict((n, 0) for n in names)
    anyof = 0
    for w, frames, _ in p.stacks():
        present = set(fr.name for fr in frames) & set(names)
        for n in present:
            per[n] += w
        if present:
            anyof += w
    return per, anyof


def func_lines(p, name, file=None):
    """Line histogram of FUNC's innermost frame (in FILE, if given), and
    how much of it was at the leaf."""
    lines = collections.Counter()
    leaf = collections.Counter()
    n = 0
    for w, frames, _ in p.stacks():
        for i, fr in enumerate(frames):
            if fr.name == name and (file is None or fr.file == file):
                lines[fr.line] += w
                if i == 0:
                    leaf[fr.line] += w
                n += w
                break
    return n, lines, leaf


def cmd_funcs(p, args):
    total = p.total() or 1
    table = func_table(p)
    print("%8s %8s %8s  %s" % ("cum%", "flat%", "samples", "function"))
    for (name, file, start), (cum, flat) in sorted(
            table.items(), key=lambda kv: -kv[1][0]):
        print("%7.2f%% %7.2f%% %8d  %s %s:%d" % (
            100.0 * cum / total, 100.0 * flat / total, cum, name, file,
            start))
    return 0


def cmd_lines(p, args):
    n, lines, leaf = func_lines(p, args.func, args.file)
    total = p.total()
    print("function %s: %d of %d samples" % (args.func, n, total))
    for line, c in sorted(lines.items(), key=lambda kv: -kv[1]):
        print("  line %5d: %6d  %6.2f%%  (leaf %d)" % (
            line, c, 100.0 * c / n, leaf[line]))
    return 0 if n else 1


def cmd_folded(p, args):
    agg = collections.Counter()
    for w, frames, _ in p.stacks():
        parts = []
        for fr in reversed(frames):
            parts.append("%s:%d" % (fr.name, fr.line) if args.lines
                         else fr.name)
        agg[";".join(parts)] += w
    for stack, c in sorted(agg.items(), key=lambda kv: -kv[1]):
        print("%s %d" % (stack, c))
    return 0


def cmd_labels(p, args):
    agg = collections.Counter()
    for w, _, labels in p.stacks():
        agg[labels.get(args.key, "<none>")] += w
    for v, c in sorted(agg.items(), key=lambda kv: -kv[1]):
        print("%s %d" % (v, c))
    return 0


def cmd_compare(p, args):
    with open(args.truth) as f:
        truth = json.load(f)["shares"]
    names = sorted(truth)
    per, anyof = cum_under(p, names)
    tsum = float(sum(truth.values()))
    ok = True
    print("%-16s %8s %8s %8s %8s" % ("function", "program", "profile",
                                     "diff", "samples"))
    for n in names:
        want = 100.0 * truth[n] / tsum
        got = 100.0 * per[n] / anyof if anyof else 0.0
        # --sd K: the tolerance widens to K standard deviations of a
        # share of `anyof` independent samples (what a sampling profile's
        # counts cannot do better than, however right they are)
        tol = args.tol
        if args.sd and anyof:
            p_ = want / 100.0
            tol = max(tol, args.sd * 100.0 * (p_ * (1 - p_) / anyof) ** 0.5)
        bad = abs(got - want) > tol
        ok = ok and not bad
        print("%-16s %7.2f%% %7.2f%% %+7.2f %8d%s" % (
            n, want, got, got - want, per[n],
            "  <-- off by more than %.2f points" % tol if bad else ""))
    print("samples under these functions: %d of %d" % (anyof, p.total()))
    if anyof < args.min_samples:
        print("too few samples (want at least %d)" % args.min_samples)
        ok = False
    return 0 if ok else 1


def cmd_expect_line(p, args):
    n, lines, leaf = func_lines(p, args.func, args.file)
    total = p.total()
    ok = True
    at = leaf[args.line]
    share = float(n) / total if total else 0.0
    print("function %s: %d of %d samples (%.1f%%); at line %d as leaf: "
          "%d (%.1f%%)" % (args.func, n, total, 100 * share, args.line, at,
                           100.0 * at / n if n else 0.0))
    for line, c in sorted(lines.items(), key=lambda kv: -kv[1]):
        print("  line %5d: %6d (leaf %d)" % (line, c, leaf[line]))
    if n == 0 or share < args.min_share:
        print("expected %s to have at least %.0f%% of all samples"
              % (args.func, 100 * args.min_share))
        ok = False
    elif float(at) / n < args.min:
        print("expected at least %.0f%% of %s's samples at line %d with "
              "%s as the leaf" % (100 * args.min, args.func, args.line,
                                  args.func))
        ok = False
    return 0 if ok else 1


def cmd_threads(p, args):
    agg = collections.Counter()
    for w, _, labels in p.stacks():
        agg[(labels.get("thread_id", "<none>"),
             labels.get("thread_name", "<none>"))] += w
    for (tid, name), c in sorted(agg.items(), key=lambda kv: -kv[1]):
        print("%s\t%s\t%d" % (tid, name, c))
    return 0


def cmd_label_shares(p, args):
    with open(args.truth) as f:
        truth = json.load(f)["shares"]
    vi = p.weight_index() if args.index is None else args.index
    if args.labelled:
        truth.pop("", None)
        t = sum(truth.values())
        truth = dict((k, v / t) for k, v in truth.items())
    agg = collections.Counter()
    for values, _, labels in p.samples:
        v = labels.get(args.key, "")
        if v or not args.labelled:
            agg[v] += values[vi] if vi < len(values) else 0
    total = sum(agg.values())
    if total <= 0:
        print("no samples")
        return 1
    bad = 0
    print("%-20s %8s %8s" % (args.key, "profile", "program"))
    for v in sorted(set(truth) | set(agg)):
        got = 100.0 * agg[v] / total
        want = 100.0 * truth.get(v, 0.0)
        # a value the program's own model leaves out (asyncio_tasks.py's
        # main task, which runs only to start the others and to end: on
        # a loaded machine a preemption there is 1% of the run) is held
        # to the same tolerance around 0
        off = abs(got - want) > args.tol
        bad += off
        print("%-20s %7.1f%% %7.1f%%%s" % (v or "(none)", got, want,
                                          "  <-- off" if off else ""))
    print("samples weighed: %d" % total)
    return 1 if bad else 0


def cmd_count(p, args):
    where = []
    for kv in args.where or []:
        k, sep, v = kv.partition("=")
        if not sep:
            print("--where wants KEY=VALUE, not %r" % kv, file=sys.stderr)
            return 2
        where.append((k, v))
    vi = 1 if args.value else p.weight_index()
    per = collections.Counter()
    total = 0
    for values, locs, labels in p.samples:
        if any(labels.get(k) != v for k, v in where):
            continue
        w = values[vi] if vi < len(values) else 0
        total += w
        names = set()
        for lid in locs:
            names.update(fr.name for fr in p.locations.get(lid, []))
        for f in args.funcs:
            if f in names:
                per[f] += w
    for f in args.funcs:
        print("%s\t%d" % (f, per[f]))
    print("*\t%d" % total)
    return 0


def cmd_roots(p, args):
    allowed = [r.partition("@")[::2] for r in args.root]
    agg = collections.Counter()
    total = 0
    for w, frames, _ in p.stacks():
        if args.file and not any(fr.file.endswith(args.file)
                                 for fr in frames):
            continue
        total += w
        if frames:
            agg[(frames[-1].name, frames[-1].file)] += w
    bad = 0
    for (name, file), c in sorted(agg.items(), key=lambda kv: -kv[1]):
        ok = name.startswith("[") or any(
            name == n and file.endswith(f) for n, f in allowed)
        if not ok:
            bad += c
        print("%s\t%s\t%s\t%d" % ("ok" if ok else "BAD", name, file, c))
    trunc = sum(c for (name, _), c in agg.items() if name == "[truncated]")
    share = float(trunc) / total if total else 0.0
    print("roots: %d samples, %d at a root that is not a thread's first "
          "frame, %d (%.2f%%) [truncated]" % (total, bad, trunc, 100 * share))
    if not total:
        print("roots: no samples", file=sys.stderr)
        return 1
    return 1 if bad or share > args.max_truncated else 0


def cmd_summary(p, args):
    print("sample types: %s" % " ".join(p.sample_types))
    print("period type: %s" % p.period_type)
    print("period: %s" % p.period)
    print("samples: %d in %d stacks" % (p.total(), len(p.samples)))
    print("value totals: %s" % " ".join(
        "%s=%d" % (t.replace("[dflt]", ""),
                   sum(v[i] for v, _, _ in p.samples if i < len(v)))
        for i, t in enumerate(p.sample_types)))
    print("locations: %d" % len(p.locations))
    for c in p.comments:
        print("comment: %s" % c)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    s = sub.add_parser("funcs")
    s.add_argument("input")
    s = sub.add_parser("lines")
    s.add_argument("input")
    s.add_argument("func")
    s.add_argument("--file", help="only FUNC's frames in this file")
    s = sub.add_parser("folded")
    s.add_argument("input")
    s.add_argument("--lines", action="store_true")
    s = sub.add_parser("labels")
    s.add_argument("input")
    s.add_argument("key")
    s = sub.add_parser("compare")
    s.add_argument("input")
    s.add_argument("truth")
    s.add_argument("--tol", type=float, default=3.0)
    s.add_argument("--min-samples", type=int, default=50)
    s.add_argument("--sd", type=float, default=0.0)
    s = sub.add_parser("expect-line")
    s.add_argument("input")
    s.add_argument("func")
    s.add_argument("line", type=int)
    s.add_argument("--min", type=float, default=0.9)
    s.add_argument("--min-share", type=float, default=0.1)
    s.add_argument("--file", help="only FUNC's frames in this file")
    s = sub.add_parser("label-shares")
    s.add_argument("input")
    s.add_argument("key")
    s.add_argument("truth")
    s.add_argument("--tol", type=float, required=True)
    s.add_argument("--index", type=int)
    s.add_argument("--labelled", action="store_true")
    s = sub.add_parser("roots")
    s.add_argument("input")
    s.add_argument("--root", action="append", required=True)
    s.add_argument("--file")
    s.add_argument("--max-truncated", type=float, default=0.02)
    s = sub.add_parser("summary")
    s.add_argument("input")
    s = sub.add_parser("threads")
    s.add_argument("input")
    s = sub.add_parser("count")
    s.add_argument("input")
    s.add_argument("funcs", nargs="*")
    s.add_argument("--where", action="append")
    s.add_argument("--value", action="store_true")
    args = ap.parse_args(argv)
    if not args.cmd:
        ap.print_help()
        return 2
    try:
        p = load(args.input)
    except (OSError, ValueError) as e:
        print("pprof_shares.py: %s" % e, file=sys.stderr)
        return 2
    return {
        "funcs": cmd_funcs, "lines": cmd_lines, "folded": cmd_folded,
        "labels": cmd_labels, "compare": cmd_compare,
        "label-shares": cmd_label_shares,
        "expect-line": cmd_expect_line, "summary": cmd_summary,
        "threads": cmd_threads, "count": cmd_count, "roots": cmd_roots,
    }[args.cmd](p, args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
