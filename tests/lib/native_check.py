#!/usr/bin/env python3
"""native_check.py - questions tests/e2e/native.bats asks of a profile with
merged native and Python stacks (PYPROF_NATIVE).

The profile is decoded by the real `go tool pprof -symbolize=none -raw`
(an independent reader); this script parses that text: Samples (values,
location ids leaf first, labels), Locations ("ID: 0xADDR M=N NAME FILE:LINE
s=START" or no name for an address pprof could not name), Mappings
("N: START/LIMIT/OFFSET FILE BUILDID [FLAGS]"). A Python frame is in
mapping 1 at address 0 with a file; a native frame has an address in one of
the other mappings (or none); a pseudo-frame ("[merge failed]") is at
address 0 without a file.

Subcommands (INPUT: a .pb.gz, or a file holding the -raw text):

  numpy INPUT TRUTH --matmul-line N --sort-line N [--tol PP]
      a stack goes Python matmul (at its line), numpy's extension, then
      cblas_dgemm/dgemm_ by name; the share of samples in libblas, and of
      samples in numpy's code under the sort line, are each within PP
      points of the program's own shares (TRUTH: its JSON line)
  under INPUT --func F --line N --native REGEX [--min FRAC]
      of the samples whose innermost Python frame is F at line N, at least
      FRAC have, below it, a native frame whose name matches REGEX
      (REGEX "@mapping:TEXT" matches a frame in a mapping whose file
      contains TEXT, named or not; "@interp" one in the interpreter's own
      code: libpython, or the executable that links it)
  merged INPUT --pyonly INPUT2 [--max-unmerged FRAC] [--min-root FRAC]
         [--max-unknown FRAC] [--within F]
      at most FRAC of the samples carry a marker; at least --min-root of
      the others start (root) at the process's or a thread's entry point;
      the Python frames of the merged stacks, in order, are stacks of the
      Python-only profile INPUT2 (same program, run without native stacks),
      but for at most --max-unknown of them; with --within, only stacks
      through function F are compared (the program's steady work: stacks
      seen once, at import time, may be in one run and not the other)
  label INPUT [--tol PP]
      the share of samples labelled native=yes and the share whose merged
      stack ends (leaf) in native code outside the interpreter agree
      within PP points
  between INPUT --outer F --inner G --native REGEX
      prints how many samples have a native frame matching REGEX between
      Python frames F and G (F's the caller); with --expect-none or
      --expect-some to check

  depth INPUT
      prints the mean number of Python and of native frames per sample
      (the benchmark's depth; with PYPROF_NATIVE=all every native frame
      is there but the eval loop's, which its Python frames replace)

Exit status 0, 1 when a check fails, 2 on bad input. Python 3.5+, never
run under LD_PRELOAD.
"""

import argparse
import json
import os
import re
import subprocess
import sys

LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-fA-F]+) M=(\d+) ?(.*)$")
MAP_RE = re.compile(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*)(.*)$")
SAMPLE_RE = re.compile(r"^\s*(\d+)\s+(\d+): ([\d ]*)$")
LABEL_RE = re.compile(r"(\S+?):\[(.*?)\]")
PYLINE_RE = re.compile(r"^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")
ENTRY_RE = re.compile(r"^(_start|__libc_start_main.*|__libc_start_call_main|__clone3?|"
                      r"clone3?|start_thread)$")
MARKERS = ("[merge failed]", "[native stack truncated]",
           "[native unwind failed]")


class Frame(object):
    __slots__ = ("addr", "mapping", "name", "file", "line")

    def __init__(self, addr, mapping, name, file, line):
        self.addr, self.mapping = addr, mapping
        self.name, self.file, self.line = name, file, line


class Profile(object):
    def __init__(self):
        self.samples = []  # (weight, [Frame root first], labels)
        self.locs = {}
        self.maps = {}     # id -> file


def read_raw(path):
    if path.endswith(".gz"):
        out = subprocess.check_output(
            ["go", "tool", "pprof", "-symbolize=none", "-raw", path],
            stderr=subprocess.DEVNULL)
        return out.decode("utf-8", "replace")
    with open(path) as f:
        return f.read()


def parse(path):
    text = read_raw(path)
    p = Profile()
    section = None
    raw_samples = []
    for line in text.splitlines():
        if line.startswith("Samples:"):
            section = "s"
            continue
        if line.startswith("Locations"):
            section = "l"
            continue
        if line.startswith("Mappings"):
            section = "m"
            continue
        if section == "s":
            m = SAMPLE_RE.match(line)
            if m:
                ids = [int(x) for x in m.group(3).split()]
                raw_samples.append([int(m.group(1)), ids, {}])
            elif raw_samples and line.startswith(" "):
                for k, v in LABEL_RE.findall(line):
                    raw_samples[-1][2][k] = v
        elif section == "l":
            m = LOC_RE.match(line)
            if not m:
                continue
            lid, addr, mid, rest = (int(m.group(1)), int(m.group(2), 16),
                                    int(m.group(3)), m.group(4).strip())
            name, file, ln = rest, "", 0
            pm = PYLINE_RE.match(rest)
            if pm:
                name, file, ln = pm.group(1), pm.group(2), int(pm.group(3))
            p.locs[lid] = Frame(addr, mid, name, file, ln)
        elif section == "m":
            m = MAP_RE.match(line)
            if m:
                p.maps[int(m.group(1))] = m.group(5)
    for w, ids, labels in raw_samples:
        frames = [p.locs[i] for i in reversed(ids) if i in p.locs]
        p.samples.append((w, frames, labels))
    if not p.samples:
        sys.stderr.write("no samples in %s\n" % path)
        sys.exit(2)
    return p


def is_python(f):
    return f.addr == 0 and f.mapping == 1 and f.file != ""


def is_marker(f):
    return f.addr == 0 and f.name in MARKERS


def total(p):
    return float(sum(w for w, _, _ in p.samples))


def map_file(p, f):
    return p.maps.get(f.mapping, "")


def is_interp_mapping(p, mid):
    f = p.maps.get(mid, "")
    return mid != 1 and (f == p.maps.get(1) or
                         os.path.basename(f).startswith("libpython"))


def frame_matches(p, f, pattern):
    if pattern == "@interp":
        return f.addr != 0 and is_interp_mapping(p, f.mapping)
    if pattern.startswith("@mapping:"):
        return f.addr != 0 and pattern[9:] in map_file(p, f)
    return f.addr != 0 and bool(re.search(pattern, f.name))


def fail(msg):
    print("FAIL: " + msg)
    return 1


def cmd_numpy(a):
    p = parse(a.input)
    truth = json.loads(open(a.truth).read().strip().splitlines()[-1])
    shares = truth["shares"]
    tot = total(p)
    chain = blas = sorted_ = 0
    for w, fr, _ in p.samples:
        in_blas = any(f.addr and "libblas" in map_file(p, f) for f in fr)
        blas += w if in_blas else 0
        for i, f in enumerate(fr):
            if is_python(f) and f.name == "matmul" and f.line == a.matmul_line:
                rest = fr[i + 1:]
                np_at = [j for j, g in enumerate(rest)
                         if g.addr and "_multiarray_umath" in map_file(p, g)]
                bl_at = [j for j, g in enumerate(rest)
                         if g.name in ("cblas_dgemm", "dgemm_")]
                if np_at and bl_at and min(np_at) < min(bl_at) and \
                        not any(is_python(g) for g in rest):
                    chain += w
            if is_python(f) and f.name == "sort" and f.line == a.sort_line:
                if any(g.addr and "_multiarray_umath" in map_file(p, g)
                       for g in fr[i + 1:]):
                    sorted_ += w
    got_blas, got_sort = blas / tot, sorted_ / tot
    print("samples %d; matmul line -> numpy -> BLAS by name: %d samples"
          % (tot, chain))
    print("BLAS share %.3f (program: matmul %.3f); numpy sort under the "
          "sort line %.3f (program: sort %.3f)"
          % (got_blas, shares["matmul"], got_sort, shares["sort"]))
    bad = 0
    if chain < 0.5 * blas or chain == 0:
        bad |= fail("most BLAS samples lack the Python matmul -> numpy -> "
                    "cblas_dgemm/dgemm_ chain")
    if abs(got_blas - shares["matmul"]) * 100 > a.tol:
        bad |= fail("BLAS share off by more than %g points" % a.tol)
    if abs(got_sort - shares["sort"]) * 100 > a.tol:
        bad |= fail("sort share off by more than %g points" % a.tol)
    return bad


def innermost_python(fr):
    for i in range(len(fr) - 1, -1, -1):
        if is_python(fr[i]):
            return i
    return -1


def cmd_under(a):
    p = parse(a.input)
    at = hit = 0
    names = {}
    for w, fr, _ in p.samples:
        i = innermost_python(fr)
        if i < 0 or fr[i].name != a.func or fr[i].line != a.line:
            continue
        at += w
        below = fr[i + 1:]
        for g in below:
            key = g.name or ("[%s]" % os.path.basename(map_file(p, g)))
            names[key] = names.get(key, 0) + w
        if any(frame_matches(p, g, a.native) for g in below):
            hit += w
    top = sorted(names.items(), key=lambda kv: -kv[1])[:8]
    print("%s:%d innermost in %d samples; %d with a native frame matching "
          "%r below; native frames below: %s"
          % (a.func, a.line, at, hit, a.native,
             ", ".join("%s %d" % kv for kv in top)))
    if at == 0:
        return fail("no sample has %s:%d as its innermost Python frame"
                    % (a.func, a.line))
    if hit < a.min * at:
        return fail("only %.2f of them (want %.2f)" % (hit / float(at), a.min))
    return 0


def py_projection(fr):
    return tuple(f.name for f in fr if is_python(f))


def cmd_merged(a):
    p = parse(a.input)
    q = parse(a.pyonly)
    tot = total(p)
    marked = sum(w for w, fr, _ in p.samples if any(is_marker(f) for f in fr))
    rooted = clean = 0
    roots = {}
    for w, fr, _ in p.samples:
        if any(is_marker(f) for f in fr) or not fr:
            continue
        if len(fr) == 1 and fr[0].addr == 0 and fr[0].name.startswith("[lost"):
            continue  # samples lost before they became stacks
        clean += w
        if ENTRY_RE.match(fr[0].name):
            rooted += w
        else:
            k = fr[0].name or ("[%s]" % os.path.basename(map_file(p, fr[0])))
            roots[k] = roots.get(k, 0) + w
    # Python frames in order: each merged stack's projection must be a
    # stack (or, at the root, the start of one) of the Python-only run.
    known = set()
    for w, fr, _ in q.samples:
        proj = tuple(f.name for f in fr if is_python(f) or f.addr == 0)
        for n in range(1, len(proj) + 1):
            known.add(proj[:n])
    seen = unknown = 0
    odd = {}
    for w, fr, _ in p.samples:
        proj = py_projection(fr)
        if not proj or (a.within and a.within not in proj):
            continue
        seen += w
        if proj not in known:
            unknown += w
            odd[proj] = odd.get(proj, 0) + w
    print("samples %d: %d marked (%.2f%%); %.1f%% of the others rooted at "
          "an entry point%s; %d of %d Python projections not in the "
          "Python-only profile"
          % (tot, marked, 100 * marked / tot,
             100.0 * rooted / clean if clean else 0,
             (" (others: %s)" % ", ".join("%s %d" % kv for kv in
                                          sorted(roots.items(),
                                                 key=lambda kv: -kv[1])[:5]))
             if roots else "", unknown, seen))
    for proj, w in sorted(odd.items(), key=lambda kv: -kv[1])[:3]:
        print("   not in the Python-only profile (%d): %s"
              % (w, " > ".join(proj)))
    bad = 0
    if marked > a.max_unmerged * tot:
        bad |= fail("%.2f%% of the samples could not be merged (limit %.2f%%)"
                    % (100 * marked / tot, 100 * a.max_unmerged))
    if clean and rooted < a.min_root * clean:
        bad |= fail("only %.1f%% rooted at an entry point"
                    % (100.0 * rooted / clean))
    if seen and unknown > a.max_unknown * seen:
        bad |= fail("%.1f%% of the Python projections are not stacks of "
                    "the Python-only profile" % (100.0 * unknown / seen))
    return bad


def cmd_label(a):
    p = parse(a.input)
    interp = set(mid for mid in p.maps if is_interp_mapping(p, mid))
    known = yes = leaf_native = 0
    for w, fr, labels in p.samples:
        if "native" not in labels or not fr:
            continue
        known += w
        yes += w if labels["native"] == "yes" else 0
        leaf = fr[-1]
        if leaf.addr != 0 and leaf.mapping not in interp:
            leaf_native += w
    if not known:
        return fail("no sample carries the native label")
    a_, b_ = yes / float(known), leaf_native / float(known)
    print("native=yes %.3f; merged stacks ending in native code outside "
          "the interpreter %.3f (of %d samples)" % (a_, b_, known))
    if abs(a_ - b_) * 100 > a.tol:
        return fail("they differ by more than %g points" % a.tol)
    return 0


def cmd_between(a):
    p = parse(a.input)
    n = 0
    for w, fr, _ in p.samples:
        for i, f in enumerate(fr):
            if not (is_python(f) and f.name == a.outer):
                continue
            for j in range(i + 1, len(fr)):
                if is_python(fr[j]):
                    if fr[j].name == a.inner and any(
                            frame_matches(p, g, a.native) for g in fr[i + 1:j]):
                        n += w
                    break
    print("%d samples with a native frame matching %r between %s and %s"
          % (n, a.native, a.outer, a.inner))
    if a.expect_none and n:
        return fail("expected none")
    if a.expect_some and not n:
        return fail("expected some")
    return 0


def cmd_depth(a):
    p = parse(a.input)
    tot = total(p)
    py = sum(w * sum(1 for f in fr if is_python(f)) for w, fr, _ in p.samples)
    nat = sum(w * sum(1 for f in fr if f.addr) for w, fr, _ in p.samples)
    print("%.0f %.0f" % (py / tot, nat / tot))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    s = sub.add_parser("numpy")
    s.add_argument("input")
    s.add_argument("truth")
    s.add_argument("--matmul-line", type=int, required=True)
    s.add_argument("--sort-line", type=int, required=True)
    s.add_argument("--tol", type=float, default=5)
    s = sub.add_parser("under")
    s.add_argument("input")
    s.add_argument("--func", required=True)
    s.add_argument("--line", type=int, required=True)
    s.add_argument("--native", required=True)
    s.add_argument("--min", type=float, default=0.5)
    s = sub.add_parser("merged")
    s.add_argument("input")
    s.add_argument("--pyonly", required=True)
    s.add_argument("--max-unmerged", type=float, default=0.01)
    s.add_argument("--min-root", type=float, default=0.99)
    s.add_argument("--max-unknown", type=float, default=0.01)
    s.add_argument("--within", default="")
    s = sub.add_parser("label")
    s.add_argument("input")
    s.add_argument("--tol", type=float, default=5)
    s = sub.add_parser("between")
    s.add_argument("input")
    s.add_argument("--outer", required=True)
    s.add_argument("--inner", required=True)
    s.add_argument("--native", required=True)
    s.add_argument("--expect-none", action="store_true")
    s.add_argument("--expect-some", action="store_true")
    s = sub.add_parser("depth")
    s.add_argument("input")
    a = ap.parse_args()
    fn = {"numpy": cmd_numpy, "under": cmd_under, "merged": cmd_merged,
          "label": cmd_label, "between": cmd_between,
          "depth": cmd_depth}.get(a.cmd)
    if not fn:
        ap.print_help()
        return 2
    return fn(a)


if __name__ == "__main__":
    sys.exit(main())
