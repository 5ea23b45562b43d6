#!/usr/bin/env python3
"""pprof_raw.py - summarize a profile as decoded by the real `go tool pprof`.

Runs `go tool pprof -symbolize=none -raw FILE` (Go's own decoder is the
independent reader of our output) and parses the text it prints
(pprof's Profile.String(): sample lines "COUNT VALUE: LOC LOC ...", leaf
first, each followed by label lines "key:[value] ...", then "Locations"
lines "ID: 0xADDR M=N NAME FILE:LINE s=START").

  pprof_raw.py summary FILE    one fact per line, easy to grep:
      total N                  sum of the first value (samples/count)
      value N                  sum of the second value
      type TYPE/UNIT ...       sample types
      flat FUNC N              samples with FUNC as the leaf
      stack F1;F2;...;LEAF N   root first
      label KEY=VALUE N        samples carrying that label
      line FUNC FILE:LINE      each location
      comment TEXT
  pprof_raw.py threads FILE    one line per sample, for the thread labels:
      thread ID NAME N STACK   NAME "-" when the sample has no thread_name;
                               STACK root first, ";"-joined
Exit status 1 if go tool pprof fails.
"""
import collections
import re
import subprocess
import sys


def decode(path):
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw",
                        path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr)
        sys.exit(1)
    return r.stdout


def parse(text):
    samples, locs, comments, types = [], {}, [], []
    section = None
    for line in text.splitlines():
        if line.startswith("Comment: "):
            comments.append(line[len("Comment: "):])
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
            types = line.split()
            section = "samples"
            continue
        if section == "samples":
            m = re.match(r"^\s+(-?\d+)\s+(-?\d+): ([\d ]*)$", line)
            if m:
                samples.append({"count": int(m.group(1)),
                                "value": int(m.group(2)),
                                "locs": [int(x) for x in m.group(3).split()],
                                "labels": {}})
                continue
            for k, v in re.findall(r"(\S+?):\[([^\]]*)\]", line):
                samples[-1]["labels"][k] = v
            continue
        if section == "locations":
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*)$", line)
            if m:
                name, fileline, _start = m.group(2).rsplit(" ", 2)
                locs[int(m.group(1))] = (name, fileline)
    return types, samples, locs, comments


def summary(path):
    types, samples, locs, comments = parse(decode(path))
    out = []
    out.append("type " + " ".join(types))
    out.append("total %d" % sum(s["count"] for s in samples))
    out.append("value %d" % sum(s["value"] for s in samples))
    flat = collections.Counter()
    stacks = collections.Counter()
    labels = collections.Counter()
    for s in samples:
        names = [locs[l][0] for l in s["locs"]]
        if names:
            flat[names[0]] += s["count"]
        stacks[";".join(reversed(names))] += s["count"]
        for k, v in s["labels"].items():
            labels["%s=%s" % (k, v)] += s["count"]
    out += ["flat %s %d" % kv for kv in sorted(flat.items())]
    out += ["stack %s %d" % kv for kv in sorted(stacks.items())]
    out += ["label %s %d" % kv for kv in sorted(labels.items())]
    out += ["line %s %s" % v for v in sorted(set(locs.values()))]
    out += ["comment " + c for c in comments]
    print("\n".join(out))


def threads(path):
    _types, samples, locs, _comments = parse(decode(path))
    for s in samples:
        lab = s["labels"]
        names = [locs[l][0] for l in s["locs"]]
        print("thread %s %s %d %s" % (lab.get("thread_id", "-"),
                                      lab.get("thread_name", "-") or "-",
                                      s["count"],
                                      ";".join(reversed(names)) or "-"))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("summary", "threads"):
        sys.stderr.write(__doc__)
        return 2
    (summary if sys.argv[1] == "summary" else threads)(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
