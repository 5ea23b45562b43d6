#!/usr/bin/env python3
"""pprof_pb.py - read a gzipped pprof profile with a decoder of its own.

A small protobuf reader written from proto/profile.proto (not from the
collector's code), for what `go tool pprof -raw` prints ambiguously or not
at all: the profile's time range, and which process each sample belongs to
(-raw prints labels as key:[value], which a command line with "]" in it
breaks). The tests still use go tool pprof as the reference reader of the
profiles; this only joins samples to their labels.

  pprof_pb.py times FILE     time_nanos N / duration_nanos N / period N
  pprof_pb.py bypid FILE     per pid, one fact per line:
      PID total N            samples (first value) of that pid
      PID func NAME N        samples whose stack has function NAME
      PID leaf NAME N        samples whose leaf is NAME
      PID label KEY=VALUE N  samples with that label (pid itself excluded)
  pprof_pb.py pids FILE      the pids with samples, one a line
  pprof_pb.py comments FILE  the profile's comments, one a line (every
                             process, with samples or not: "pid N ...")
Exit status 1 on a file that does not decode.
"""
import collections
import gzip
import sys


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


def fields(buf):
    """(field number, wire type, value) of one message; value is an int
    for varints and fixed types, bytes for length-delimited ones."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def ints(wt, v):
    """A repeated integer field's values, packed or not."""
    if wt != 2:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def decode(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    prof = {"samples": [], "strings": [], "locs": {}, "funcs": {},
            "time_nanos": 0, "duration_nanos": 0, "period": 0,
            "comments": []}
    for num, wt, v in fields(raw):
        if num == 2:
            s = {"locs": [], "values": [], "labels": []}
            for n2, w2, v2 in fields(v):
                if n2 == 1:
                    s["locs"] += ints(w2, v2)
                elif n2 == 2:
                    s["values"] += [signed(x) for x in ints(w2, v2)]
                elif n2 == 3:
                    lab = dict((n3, v3) for n3, _, v3 in fields(v2))
                    s["labels"].append(lab)
            prof["samples"].append(s)
        elif num == 4:
            loc = {"id": 0, "funcs": []}
            for n2, _, v2 in fields(v):
                if n2 == 1:
                    loc["id"] = v2
                elif n2 == 4:
                    line = dict((n3, v3) for n3, _, v3 in fields(v2))
                    loc["funcs"].append(line.get(1, 0))
            prof["locs"][loc["id"]] = loc
        elif num == 5:
            fn = dict((n2, v2) for n2, _, v2 in fields(v))
            prof["funcs"][fn.get(1, 0)] = fn
        elif num == 6:
            prof["strings"].append(v.decode("utf-8"))
        elif num == 9:
            prof["time_nanos"] = signed(v)
        elif num == 10:
            prof["duration_nanos"] = signed(v)
        elif num == 12:
            prof["period"] = signed(v)
        elif num == 13:
            prof["comments"] += ints(wt, v)
    prof["comments"] = [prof["strings"][i] for i in prof["comments"]]
    return prof


def sample_view(prof, s):
    """(labels as {key: value}, function names leaf first)."""
    st = prof["strings"]
    labels = {}
    for lab in s["labels"]:
        key = st[lab.get(1, 0)]
        labels[key] = st[lab[2]] if lab.get(2) else signed(lab.get(3, 0))
    names = []
    for lid in s["locs"]:
        for fid in prof["locs"][lid]["funcs"]:
            names.append(st[prof["funcs"][fid].get(2, 0)])
    return labels, names


def bypid(prof):
    out = collections.Counter()
    for s in prof["samples"]:
        labels, names = sample_view(prof, s)
        pid = labels.get("pid", "?")
        n = s["values"][0]
        out["%s total" % pid] += n
        for name in set(names):
            out["%s func %s" % (pid, name)] += n
        if names:
            out["%s leaf %s" % (pid, names[0])] += n
        for k, v in labels.items():
            if k != "pid":
                out["%s label %s=%s" % (pid, k, v)] += n
    return ["%s %d" % (k, v) for k, v in sorted(out.items())]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("times", "bypid", "pids",
                                                   "comments"):
        sys.stderr.write(__doc__)
        return 2
    try:
        prof = decode(sys.argv[2])
    except (OSError, ValueError, IndexError, KeyError,
            UnicodeDecodeError) as e:
        sys.stderr.write("pprof_pb.py: %s: %s\n" % (sys.argv[2], e))
        return 1
    if sys.argv[1] == "times":
        for k in ("time_nanos", "duration_nanos", "period"):
            print("%s %d" % (k, prof[k]))
    elif sys.argv[1] == "bypid":
        print("\n".join(bypid(prof)))
    elif sys.argv[1] == "comments":
        print("\n".join(prof["comments"]))
    else:
        pids = set()
        for s in prof["samples"]:
            labels, _ = sample_view(prof, s)
            if s["values"][0] and "pid" in labels:
                pids.add(labels["pid"])
        print("\n".join(str(p) for p in sorted(pids)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
