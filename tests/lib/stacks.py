#!/usr/bin/env python3
"""stacks.py - the exact stacks of tests/targets/stacks/ programs: what each
program declares, and whether a profile has it.

A program declares its stack in "# @expect" lines (root first) and where it
runs in an "# @python" line; tests/targets/stacks/README.md has the syntax.
This script resolves the declaration for one Python version (tags to line
numbers, qualified names to what that version's profile shows) and compares
it with a profile read through the real `go tool pprof -raw`
(tests/lib/pprof_shares.py parses its text).

  applies PROGRAM VERSION      exit 0 if PROGRAM runs on VERSION ("3.11"),
                               1 (and why) if not
  expect PROGRAM VERSION       the expected stack, root first: NAME FILE:LINE
  check PROGRAM VERSION PROFILE [--path P] [--min-share S] [--min-samples N]
                               fails unless at least S (default 0.5) of all
                               samples, and at least N (default 20), have
                               exactly the expected stack, root to leaf;
                               prints the stack, the count and the most
                               common stacks. P: the program's path as it
                               was run (default PROGRAM), which is the file
                               the profile names.

Names: from 3.11 the profile shows co_qualname, which is what programs
declare; before 3.11 it shows co_name, the last dotted part of the
qualified name ("Klass.method" -> "method", "f.<locals>.<lambda>" ->
"<lambda>"). Exit status 0, 1 when a check fails, 2 on bad input. Runs on
the host's python3, never under LD_PRELOAD.
"""

import argparse
import collections
import io
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_shares  # noqa: E402

TAG_RE = re.compile(r"#\s*@(\w+)\s*$")
EXPECT_RE = re.compile(r"^#\s*@expect(?:\[([0-9.]*)-([0-9.]*)\])?\s+(.*?)\s*$")
PYTHON_RE = re.compile(r"^#\s*@python\s+([0-9.]*)-([0-9.]*)\s*$")
FRAME_RE = re.compile(
    r"^(\S+)(?:\s+in\s+(\S+))?\s+@(\w+)(?:-@(\w+))?(?:\s+x(\d+))?$")

GAP = "..."


class Bad(Exception):
    pass


def version(text):
    """"3.11" -> (3, 11); "" -> None."""
    if not text:
        return None
    try:
        parts = tuple(int(p) for p in text.split("."))
    except ValueError:
        raise Bad("bad version %r" % text)
    if len(parts) < 2:
        parts = parts + (0,)
    return parts[:2]


def in_range(v, lo, hi):
    return (lo is None or v >= lo) and (hi is None or v <= hi)


class Program(object):
    def __init__(self, path):
        self.path = path
        with io.open(path, encoding="utf-8") as f:
            self.lines = f.read().splitlines()
        self.tags = collections.defaultdict(list)
        self.expect = []  # (lo, hi, text, line number)
        self.python = (None, None)
        for n, line in enumerate(self.lines, 1):
            m = EXPECT_RE.match(line)
            if m:
                self.expect.append((version(m.group(1)), version(m.group(2)),
                                    m.group(3), n))
                continue
            m = PYTHON_RE.match(line)
            if m:
                self.python = (version(m.group(1)), version(m.group(2)))
                continue
            m = TAG_RE.search(line)
            if m:
                self.tags[m.group(1)].append(n)
        if not self.expect:
            raise Bad("%s declares no stack (# @expect lines)" % path)

    def tag(self, name, where):
        lines = self.tags.get(name, [])
        if len(lines) != 1:
            raise Bad("%s:%d: tag @%s is on %d lines, not exactly one"
                      % (self.path, where, name, len(lines)))
        return lines[0]

    def applies(self, v):
        return in_range(v, *self.python)

    def stack(self, v, path):
        """The expected stack on version V, root first: GAP or
        (name, file, line). PATH is the program's file as the profile
        names it."""
        out = []
        for lo, hi, text, n in self.expect:
            if not in_range(v, lo, hi):
                continue
            if text == GAP:
                out.append(GAP)
                continue
            m = FRAME_RE.match(text)
            if not m:
                raise Bad("%s:%d: cannot read '@expect %s'"
                          % (self.path, n, text))
            qualname, file, tag, base, times = m.groups()
            line = self.tag(tag, n)
            if base:
                line -= self.tag(base, n)
            frame = (name_on(qualname, v), file or path, line)
            out.extend([frame] * int(times or 1))
        return out


def name_on(qualname, v):
    """What the profile calls a function of this qualified name on V."""
    if v >= (3, 11):
        return qualname
    return qualname.rsplit(".", 1)[-1]


def matches(pattern, frames, own_file):
    """Does FRAMES (root first, (name, file, line)) match PATTERN whole?
    A GAP matches one or more frames of files other than OWN_FILE."""
    if GAP not in pattern:
        return pattern == frames
    # ok[i][j]: pattern[i:] matches frames[j:].
    np, nf = len(pattern), len(frames)
    ok = [[False] * (nf + 1) for _ in range(np + 1)]
    ok[np][nf] = True
    for i in range(np - 1, -1, -1):
        for j in range(nf - 1, -1, -1):
            if pattern[i] == GAP:
                if frames[j][1] != own_file:
                    ok[i][j] = ok[i + 1][j + 1] or ok[i][j + 1]
            else:
                ok[i][j] = pattern[i] == frames[j] and ok[i + 1][j + 1]
    return ok[0][0]


def describe(frames, own_file):
    """A stack on one line, root first: runs of a frame are "xN", files
    other than OWN_FILE are named."""
    parts = []
    for fr in frames:
        if fr == GAP:
            s = GAP
        else:
            name, file, line = fr
            s = "%s:%d" % (name, line)
            if file and file != own_file:
                s = "%s (%s)" % (s, file)
        if parts and parts[-1][0] == s:
            parts[-1][1] += 1
        else:
            parts.append([s, 1])
    text = " > ".join(s if n == 1 else "%s x%d" % (s, n) for s, n in parts)
    if len(text) > 400:  # start-up stacks (imports) run long
        text = text[:120] + " ... " + text[-260:]
    return text


def first_difference(pattern, frames):
    """Where FRAMES first departs from a gap-free PATTERN, in words."""
    for i, (want, got) in enumerate(zip(pattern, frames)):
        if want != got:
            return ("frame %d from the root: expected %s %s:%d, got %s %s:%d"
                    % ((i,) + want + got))
    if len(frames) < len(pattern):
        return ("the stack ends after %d frames; expected %d, next %s %s:%d"
                % ((len(frames), len(pattern)) + pattern[len(frames)]))
    return ("the stack goes on after the %d expected frames: %s %s:%d"
            % ((len(pattern),) + frames[len(pattern)]))


def cmd_applies(prog, v, args):
    if prog.applies(v):
        return 0
    lo, hi = prog.python
    print("%s runs on Python %s to %s, not %s" % (
        os.path.basename(prog.path),
        ".".join(map(str, lo)) if lo else "any",
        ".".join(map(str, hi)) if hi else "any",
        ".".join(map(str, v))))
    return 1


def cmd_expect(prog, v, args):
    for fr in prog.stack(v, args.path or prog.path):
        print(GAP if fr == GAP else "%s %s:%d" % fr)
    return 0


def cmd_check(prog, v, args):
    path = args.path or prog.path
    pattern = prog.stack(v, path)
    p = pprof_shares.load(args.profile)
    stacks = collections.Counter()
    for w, frames, _ in p.stacks():
        stacks[tuple((f.name, f.file, f.line) for f in reversed(frames))] += w
    total = sum(stacks.values())
    hit = sum(c for s, c in stacks.items() if matches(pattern, list(s), path))
    share = float(hit) / total if total else 0.0
    print("Python %s, %s: expected stack (%d frames, root first):"
          % (".".join(map(str, v)), os.path.basename(path), len(pattern)))
    print("  " + describe(pattern, path))
    print("samples with exactly this stack: %d of %d (%.1f%%)"
          % (hit, total, 100 * share))
    print("most common stacks:")
    for s, c in stacks.most_common(4):
        print("  %5d  %s" % (c, describe(s, path)))
    ok = True
    if hit < args.min_samples or share < args.min_share:
        print("FAIL: expected at least %d samples and %.0f%% of all"
              % (args.min_samples, 100 * args.min_share))
        if stacks and GAP not in pattern:
            top = list(stacks.most_common(1)[0][0])
            if top != pattern:
                print("the most common stack differs at " +
                      first_difference(pattern, top))
        ok = False
    return 0 if ok else 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    for name in ("applies", "expect", "check"):
        s = sub.add_parser(name)
        s.add_argument("program")
        s.add_argument("version")
        if name == "check":
            s.add_argument("profile")
            s.add_argument("--min-share", type=float, default=0.5)
            s.add_argument("--min-samples", type=int, default=20)
        s.add_argument("--path", help="the program's path as it was run")
    args = ap.parse_args(argv)
    if not args.cmd:
        ap.print_help()
        return 2
    try:
        prog = Program(args.program)
        v = version(args.version)
        return {"applies": cmd_applies, "expect": cmd_expect,
                "check": cmd_check}[args.cmd](prog, v, args)
    except (Bad, OSError, ValueError) as e:
        print("stacks.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
