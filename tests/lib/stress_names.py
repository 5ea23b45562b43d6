#!/usr/bin/env python3
"""stress_names.py - no sample of tests/targets/stress_code.py is
attributed to a wrong name or line.

    stress_names.py PROFILE NAMES_JSON

PROFILE is the run's profile (read through `go tool pprof -raw`, see
pprof_shares.py); NAMES_JSON what the run wrote about itself (see
stress_code.py). Every frame of every sample must be one of:
  - a pseudo-frame, "[...]" ([unknown], [lost: ...], [no Python frame],
    [non-Python thread], [truncated]): counted, [unknown] reported;
  - in stress_code.py: a name the file defines (qualified name on 3.11+),
    at a line of a code object of that name;
  - in "<stress_gen_N>": gen_N (the same N) or that file's <module>, at
    a line of that code (N % 5 blank lines come first, so each N % 5 has
    its own lines; the run wrote what the interpreter says they are);
  - in "<stress_lambda_N>": <lambda> or <module>, likewise;
  - in any other .py file (threading.py and the like), or a frozen module
    ("<frozen importlib._bootstrap>", read from the standard library's
    source): a name whose last part the file defines with "def" or
    "class", or <module>, <lambda>, <genexpr> or a comprehension, at a
    line the file has (or 0 for <module>: 3.11+ puts a module's first
    instruction there);
  - anything else (a frame with no .py file, e.g. native code) is counted
    and listed, not judged.
A name or line that breaks these rules is a wrong attribution: listed,
exit status 1. So is a profile where the activities did not show at all
(no sample in swap_alpha/swap_beta, in a gen_N, or in the exception
code): sampling must have happened for the check to mean anything.
Prints the counts, the [unknown] frames among them. Host python3 only.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_shares  # noqa: E402

GEN_RE = re.compile(r"^<stress_gen_(\d+)>$")
LAMBDA_RE = re.compile(r"^<stress_lambda_(\d+)>$")
FROZEN_RE = re.compile(r"^<frozen ([\w.]+)>$")
ANON = ("<module>", "<lambda>", "<genexpr>", "<listcomp>", "<dictcomp>",
        "<setcomp>")

_files = {}


def file_facts(path):
    """(defined names, number of lines) of a source file, or None."""
    if path not in _files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            _files[path] = None
        else:
            names = set(re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)",
                                   text, re.M))
            _files[path] = (names, text.count("\n") + 1)
    return _files[path]


def judge(fr, facts):
    """None if FR is a right attribution, else why not; or "other"."""
    name, path, line = fr.name, fr.file, fr.line
    base = os.path.basename(path)
    if base == os.path.basename(facts["file"]):
        lines = facts["defined"].get(name)
        if lines is None:
            return "stress_code.py defines no code object named %r" % name
        if line not in lines:
            return "line %d is not in %s (its lines: %s)" % (
                line, name, ",".join(str(x) for x in lines))
        return None
    for regex, kind, fn_name in ((GEN_RE, "gen", "gen_%d"),
                                 (LAMBDA_RE, "lambda", "<lambda>")):
        m = regex.match(path)
        if not m:
            continue
        n = int(m.group(1))
        if n >= facts["generated"]:
            return "%s: only %d were made" % (path, facts["generated"])
        own = fn_name % n if "%d" in fn_name else fn_name
        if name == own:
            key = kind
        elif name == "<module>":
            key = kind + "_module"
        else:
            return "%s holds %s, not %r" % (path, own, name)
        lines = facts["generated_lines"][key][n % facts["pad_mod"]]
        if line not in lines:
            return "%s: line %d is not in %s (its lines: %s)" % (
                path, line, name, ",".join(str(x) for x in lines))
        return None
    m = FROZEN_RE.match(path)
    if m:
        path = os.path.join(facts["stdlib"],
                            m.group(1).replace(".", "/") + ".py")
    if path.endswith(".py"):
        ff = file_facts(path)
        if ff is None:
            return "other"
        names, n_lines = ff
        last = name.split(".")[-1]
        if last not in names and last not in ANON:
            return "%s defines no %r" % (path, last)
        # 3.11+ puts a module's first instruction (RESUME) at line 0
        first = 0 if last == "<module>" else 1
        if not first <= line <= n_lines:
            return "%s has no line %d" % (path, line)
        return None
    return "other"


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    p = pprof_shares.load(argv[0])
    with open(argv[1]) as f:
        facts = json.load(f)
    facts["defined"] = dict((k, set(v)) for k, v in facts["defined"].items())

    total = 0
    pseudo = collections.Counter()
    other = collections.Counter()
    wrong = collections.Counter()
    seen = collections.Counter()  # samples per activity
    for w, frames, _ in p.stacks():
        total += w
        names = set()
        for fr in frames:
            if fr.name.startswith("["):
                pseudo[fr.name] += w
                continue
            why = judge(fr, facts)
            if why == "other":
                other["%s %s:%d" % (fr.name, fr.file, fr.line)] += w
            elif why:
                wrong["%s %s:%d: %s" % (fr.name, fr.file, fr.line, why)] += w
            names.add(fr.name)
        if names & {"swap_alpha", "swap_beta"}:
            seen["swap"] += w
        if any(n.startswith("gen_") for n in names):
            seen["generate"] += w
        if names & {"raiser", "with_finally", "thrown_into", "exceptions"}:
            seen["exceptions"] += w

    print("samples: %d; swap %d, generate %d, exceptions %d; %d code "
          "objects generated" % (total, seen["swap"], seen["generate"],
                                 seen["exceptions"], facts["generated"]))
    print("[unknown] frames: %d" % pseudo["[unknown]"])
    for k, v in sorted(pseudo.items()):
        if k != "[unknown]":
            print("pseudo-frame %s: %d" % (k, v))
    for k, v in other.most_common(10):
        print("not judged (no .py file): %s: %d" % (k, v))
    bad = False
    for k, v in wrong.most_common(30):
        print("WRONG: %s (%d samples)" % (k, v))
        bad = True
    for activity in ("swap", "generate", "exceptions"):
        if not seen[activity]:
            print("NO SAMPLES of the %s activity: the check means nothing"
                  % activity)
            bad = True
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
