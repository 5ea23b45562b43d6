#!/usr/bin/env python3
"""heap_check.py - checks on heap profiles, as decoded by the real
`go tool pprof -raw` (tests/e2e/heap.bats).

  heap_check.py known PROFILE OUT.json [--truth TRUTH.json] [--big-line N]
      [--tol 0.10] [--rate R] [--python2]
    The profile of tests/targets/heap_known.py: Go's heap sample types
    (inuse_space the default), period_type space/bytes, period R; per
    function (anywhere on the stack), the unbiased estimates against the
    truth: big_buffer allocated 100 MiB (within tol) at line N and none of
    it in use; small_objects in use as tracemalloc measured it (TRUTH, 3.x)
    within tol; churn allocated but (nearly) nothing of it in use; with
    "numpy" in OUT, numpy_array 200 MiB allocated and in use within tol.
    No allocation is charged to a thread without Python (pyprof's own
    threads allocate; they must not be counted).
    --python2: 2.7 has no allocator API; only what malloc sees is checked
    (the bytearray), and small_objects must not reach tol of its size.
  heap_check.py peak PROFILE OUT.json RECORD.err [--tol 0.12]
    The profile of tests/targets/heap_peak.py: peak_space of hold and
    temporaries within tol of what the program counted, third absent from
    the peak (0) and in use within tol, hold and temporaries not in use;
    `pyprof record`'s last line (in RECORD.err) says the peak: within 2%
    of the profile's peak_space total (the copy's slack is 1/64) and
    within tol of what the program held then (plus the interpreter's own,
    at most 32 MiB), at a wall-clock time between the program's
    peak_from and peak_to (+1 s: the library sends every 20 ms, a busy
    machine later), and its "s after the start" from a start no later
    than the program's own.
  heap_check.py values PROFILE FUNC
    alloc_objects alloc_space inuse_objects inuse_space peak_objects
    peak_space of FUNC (cum).
  heap_check.py top PROFILE FUNC
    FUNC holds the most memory in use (cum, among the program's functions).
  heap_check.py grows BASE NEW FUNC MIN_BYTES
    FUNC's memory in use grew by at least MIN_BYTES from BASE to NEW.
Exit status 1 with a reason on the first failed check.
"""
import json
import re
import subprocess
import sys
import time

TYPES = ["alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
         "inuse_space/bytes", "peak_objects/count", "peak_space/bytes"]


def fail(msg):
    sys.stderr.write("heap_check: %s\n" % msg)
    sys.exit(1)


def decode(path):
    r = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-raw",
                        path], capture_output=True, text=True)
    if r.returncode != 0:
        fail("go tool pprof -raw %s: %s" % (path, r.stderr.strip()))
    prof = {"types": [], "samples": [], "locs": {}, "period": None,
            "period_type": None}
    section = None
    for line in r.stdout.splitlines():
        if line.startswith("PeriodType: "):
            prof["period_type"] = line.split(": ", 1)[1]
        elif line.startswith("Period: "):
            prof["period"] = int(line.split(": ", 1)[1])
        elif line == "Samples:":
            section = "header"
        elif line == "Locations":
            section = "locations"
        elif line == "Mappings":
            section = "mappings"
        elif section == "header":
            prof["types"] = line.split()
            section = "samples"
        elif section == "samples":
            m = re.match(r"^\s+(-?\d+(?:\s+-?\d+)*): ([\d ]*)$", line)
            if m:
                prof["samples"].append(
                    ([int(v) for v in m.group(1).split()],
                     [int(x) for x in m.group(2).split()]))
        elif section == "locations":
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*)$", line)
            if m:
                name, fileline, _start = m.group(2).rsplit(" ", 2)
                prof["locs"][int(m.group(1))] = (name, fileline)
    return prof


def values(prof, func, leaf_line=None):
    """Sums of the six values over samples with func on the stack (each
    sample once); with leaf_line, only where func's frame is at that
    line."""
    tot = [0] * len(TYPES)
    for vals, locs in prof["samples"]:
        frames = [prof["locs"][l] for l in locs]
        hit = [f for f in frames if f[0] == func]
        if not hit:
            continue
        if leaf_line is not None and not any(
                f[1].endswith(":%d" % leaf_line) for f in hit):
            continue
        for i in range(len(TYPES)):
            tot[i] += vals[i]
    return tot


def within(got, want, tol, what):
    if want <= 0:
        fail("%s: no truth to compare with (%d)" % (what, want))
    err = abs(got - want) / float(want)
    print("%s: %d vs %d (%.1f%%)" % (what, got, want, 100 * err))
    if err > tol:
        fail("%s: %d is %.1f%% off %d (tolerance %.0f%%)" %
             (what, got, 100 * err, want, 100 * tol))


def check_types(prof, rate):
    names = [t.replace("[dflt]", "") for t in prof["types"]]
    if names != TYPES:
        fail("sample types %s, expected %s" % (prof["types"], TYPES))
    if not prof["types"][3].endswith("[dflt]"):
        fail("inuse_space is not the default sample type: %s" %
             prof["types"])
    if prof["period_type"] != "space bytes":
        fail("period type %r, expected 'space bytes'" % prof["period_type"])
    if rate is not None and prof["period"] != rate:
        fail("period %s, expected the rate %d" % (prof["period"], rate))


def cmd_known(argv):
    path, out_path = argv[0], argv[1]
    opts = {"--truth": None, "--big-line": None, "--tol": "0.10",
            "--rate": None}
    py2 = False
    i = 2
    while i < len(argv):
        if argv[i] == "--python2":
            py2 = True
            i += 1
            continue
        opts[argv[i]] = argv[i + 1]
        i += 2
    tol = float(opts["--tol"])
    prof = decode(path)
    check_types(prof, int(opts["--rate"]) if opts["--rate"] else None)
    out = json.load(open(out_path))
    big = out["big"]
    line = int(opts["--big-line"]) if opts["--big-line"] else None
    b = values(prof, "big_buffer", line)
    within(b[1], big, tol, "big_buffer alloc_space (line %s)" % line)
    if b[3] > big * 0.01:
        fail("big_buffer: %d bytes still in use, it was freed" % b[3])
    s = values(prof, "small_objects")
    if py2:
        # 2.7 has no allocator API: pymalloc's small objects show only as
        # the arenas (256 KiB) malloc gives it, charged to the allocation
        # that needed a new one, and the list's array of pointers
        print("small_objects in use (2.7, malloc only): %d" % s[3])
        if s[3] < out["small"] * 8:
            fail("small_objects: %d in use on 2.7, less than its list of "
                 "pointers alone" % s[3])
    else:
        within(s[3], out["small_bytes"], tol, "small_objects inuse_space")
        if opts["--truth"]:
            # tracemalloc's second opinion on the program's own measure
            tm = json.load(open(opts["--truth"]))["inuse"]["small_objects"]
            within(tm, out["small_bytes"], 0.01,
                   "tracemalloc vs sys.getsizeof for small_objects")
        c = values(prof, "churn")
        print("churn: alloc_space %d, inuse_space %d" % (c[1], c[3]))
        if c[1] < 200000 * 40:
            fail("churn: %d bytes allocated, it made 200,000 objects" % c[1])
        if c[3] > 0.1 * c[1]:
            fail("churn: %d of %d bytes still in use, all was dropped" %
                 (c[3], c[1]))
    if "numpy" in out:
        n = values(prof, "numpy_array")
        within(n[1], out["numpy"], tol, "numpy_array alloc_space")
        within(n[3], out["numpy"], tol, "numpy_array inuse_space")
    for vals, locs in prof["samples"]:
        names = [prof["locs"][l][0] for l in locs]
        if "[non-Python thread]" in names and any(vals):
            fail("%s charged to a thread without Python: pyprof's own "
                 "allocations counted?" % vals)


UNITS = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
PEAK_LINE = re.compile(
    r"^pyprof: heap peak: ([\d.]+)(B|kB|MB|GB) in use, ([\d.]+) s after "
    r"the start \((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC\)$")


def cmd_peak(argv):
    import calendar
    path, out_path, err_path = argv[0], argv[1], argv[2]
    tol = float(argv[4]) if len(argv) > 4 and argv[3] == "--tol" else 0.12
    prof = decode(path)
    check_types(prof, None)
    out = json.load(open(out_path))
    h, t, th = (values(prof, f) for f in ("hold", "temporaries", "third"))
    within(h[5], out["hold"], tol, "hold peak_space")
    within(t[5], out["temporaries"], tol, "temporaries peak_space")
    within(th[3], out["third"], tol, "third inuse_space")
    if th[4] or th[5]:
        fail("third is in the peak (%d objects, %d bytes): it came after"
             % (th[4], th[5]))
    for name, v, n in (("hold", h, out["hold"]),
                       ("temporaries", t, out["temporaries"])):
        if v[3] > 0.01 * n:
            fail("%s: %d bytes in use at the end, it was dropped" %
                 (name, v[3]))
    lines = open(err_path).read().splitlines()
    if not lines or not lines[-1].startswith("pyprof: heap peak: "):
        fail("record's last line is not the heap peak: %r" %
             (lines[-1] if lines else ""))
    m = PEAK_LINE.match(lines[-1])
    if not m:
        fail("cannot read the peak line: %r" % lines[-1])
    said = float(m.group(1)) * UNITS[m.group(2)]
    total = sum(vals[5] for vals, _ in prof["samples"])
    print("peak line: %s; profile's peak_space total %d" % (lines[-1],
                                                            total))
    if abs(said - total) > 0.02 * total:
        fail("the line says %d bytes, the profile's peak %d" %
             (said, total))
    held = out["hold"] + out["temporaries"]
    if not held * (1 - tol) <= said <= held * (1 + tol) + (32 << 20):
        fail("the line says %d bytes; the program held %d" % (said, held))
    wall = calendar.timegm(time.strptime(m.group(4)[:19],
                                         "%Y-%m-%d %H:%M:%S")) + \
        float(m.group(4)[19:])
    print("peak at %.3f; the program's peak from %.3f to %.3f" %
          (wall, out["peak_from"], out["peak_to"]))
    if not out["peak_from"] - 0.1 <= wall <= out["peak_to"] + 1.0:
        fail("the peak's time %.3f is not when the program held most "
             "(%.3f to %.3f)" % (wall, out["peak_from"], out["peak_to"]))
    start = wall - float(m.group(3))
    if not out["start"] - 10 <= start <= out["start"] + 0.01:
        fail("the line's start (%.3f) is not before the program's (%.3f)"
             % (start, out["start"]))


def cmd_top(argv):
    prof = decode(argv[0])
    func = argv[1]
    funcs = set(prof["locs"][l][0] for _, locs in prof["samples"]
                for l in locs)
    best = max(((values(prof, f)[3], f) for f in funcs
                if not f.startswith("<") and not f.startswith("[")))
    print("most in use: %s (%d bytes); %s: %d" %
          (best[1], best[0], func, values(prof, func)[3]))
    if best[1] != func:
        fail("%s holds the most memory in use, not %s" % (best[1], func))


def cmd_grows(argv):
    base, new, func, min_bytes = argv[0], argv[1], argv[2], int(argv[3])
    a = values(decode(base), func)[3]
    b = values(decode(new), func)[3]
    print("%s in use: %d -> %d" % (func, a, b))
    if b - a < min_bytes:
        fail("%s grew by %d bytes, expected at least %d" %
             (func, b - a, min_bytes))


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    cmd, argv = sys.argv[1], sys.argv[2:]
    if cmd == "known":
        cmd_known(argv)
    elif cmd == "values":
        print(" ".join(str(v) for v in values(decode(argv[0]), argv[1])))
    elif cmd == "top":
        cmd_top(argv)
    elif cmd == "peak":
        cmd_peak(argv)
    elif cmd == "grows":
        cmd_grows(argv)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
