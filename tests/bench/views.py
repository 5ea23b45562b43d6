#!/usr/bin/env python3
"""views.py - `make bench` part 4: time and peak memory of `pyprof
flamegraph` and `pyprof top` on a profile with 100,000 distinct stacks.

usage: tests/bench/views.py [--stacks N] [--rounds R] [--keep DIR]

Generates the profile itself (a pprof protobuf, gzipped, written here with
the standard library: varints and length-delimited fields), shaped like a
big program's: 4,000 functions in 300 files, stacks 8 to 40 deep that
share prefixes (each frame is drawn from a few likely callees of the one
below it), sample counts with a heavy head and a long tail (Zipf-like), so
that most stacks are narrower than a pixel, as in real profiles. Then runs
each view R times (default 5) and prints the median wall time and the
largest peak RSS (getrusage of the child), plus the SVG's size and how
many frames it draws. Goal: under a second each.
"""
import argparse
import gzip
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def packed(num, vals):
    return field_bytes(num, b"".join(varint(v) for v in vals))


def generate(n_stacks, seed=1):
    rnd = random.Random(seed)
    n_funcs, n_files = 4000, 300
    strings = [""]
    index = {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    out = bytearray()
    for t, u in (("samples", "count"), ("cpu", "nanoseconds")):
        out += field_bytes(1, field_varint(1, s(t)) + field_varint(2, s(u)))
    for f in range(n_funcs):
        fn = (field_varint(1, f + 1) + field_varint(2, s("func_%d" % f)) +
              field_varint(3, s("mod%d.py:func_%d" % (f % n_files, f))) +
              field_varint(4, s("/app/pkg%d/mod%d.py" % (f % 17,
                                                         f % n_files))) +
              field_varint(5, 10 * (f // n_files) + 1))
        out += field_bytes(5, fn)
        loc = (field_varint(1, f + 1) +
               field_bytes(4, field_varint(1, f + 1) +
                           field_varint(2, 10 * (f // n_files) + 3)))
        out += field_bytes(4, loc)
    seen = set()
    while len(seen) < n_stacks:
        depth = rnd.randint(8, 40)
        frame = rnd.randrange(8)  # a few entry points
        stack = [frame]
        for _ in range(depth - 1):
            # A few likely callees per caller: shared prefixes.
            frame = (frame * 2654435761 + rnd.randrange(6) * 97 + 1) \
                % n_funcs
            stack.append(frame)
        t = tuple(stack)
        if t in seen:
            continue
        seen.add(t)
        count = max(1, int(1000 / (1 + len(seen) * rnd.random()) ** 0.8))
        smp = (packed(1, [f + 1 for f in reversed(t)]) +
               packed(2, [count, count * 10000000]) +
               field_bytes(3, field_varint(1, s("pid")) +
                           field_varint(3, 4242)))
        out += field_bytes(2, smp)
    for x in strings:
        out += field_bytes(6, x.encode())
    out += field_varint(9, 1700000000000000000)
    out += field_bytes(11, field_varint(1, s("cpu")) +
                       field_varint(2, s("nanoseconds")))
    out += field_varint(12, 10000000)
    # The strings added after the table was written: none (s() above is
    # only called before the table); check.
    assert len(strings) == len(index)
    return gzip.compress(bytes(out), 6)


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if status != 0:
        sys.exit("bench: %s failed (%d)" % (" ".join(cmd), status))
    return dt, ru.ru_maxrss / 1024.0  # MB


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stacks", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep")
    a = ap.parse_args()
    pyprof = os.path.join(os.environ.get("PYPROF_BUILD",
                                         os.path.join(TOP, "build")),
                          "pyprof")
    d = a.keep or tempfile.mkdtemp(prefix="pyprof-bench.")
    os.makedirs(d, exist_ok=True)
    prof = os.path.join(d, "big.pb.gz")
    t0 = time.perf_counter()
    data = generate(a.stacks)
    with open(prof, "wb") as f:
        f.write(data)
    print("  profile: %d distinct stacks, %.1f MB gzipped (generated in "
          "%.1fs)" % (a.stacks, len(data) / 1e6, time.perf_counter() - t0))
    svg = os.path.join(d, "big.svg")
    for name, cmd in (
            ("flamegraph", [pyprof, "flamegraph", prof, "-o", svg]),
            ("top", [pyprof, "top", "-n", "30", prof]),
            ("top --by line", [pyprof, "top", "--by", "line", "-n", "30",
                               prof]),
            ("folded", [pyprof, "convert", prof, "--format", "folded",
                        "-o", os.path.join(d, "big.folded")])):
        times, mems = [], []
        for _ in range(a.rounds):
            dt, mb = run(cmd)
            times.append(dt)
            mems.append(mb)
        print("  %-14s median %.3fs (min %.3fs, max %.3fs), peak RSS "
              "%.0f MB" % (name, statistics.median(times), min(times),
                           max(times), max(mems)))
    text = open(svg, encoding="utf-8").read()
    print("  flame graph: %.1f MB SVG, %d frames drawn, %d merged \"...\" "
          "frames" % (len(text) / 1e6, text.count("<g data-p="),
                      text.count('data-m="1"')))
    if not a.keep:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


if __name__ == "__main__":
    main()
