#!/usr/bin/env bats
# split.bats - Python, native and system time (issue 42, docs/reading.md
# "Python, native and system time"): every CPU sample's label time,
# pyprof top --split, and the views that carry it elsewhere (3.x): convert
# --split's [native] and [system] leaves, the collector's /debug/pprof/top,
# go tool pprof -tagfocus=time=native.
#
# tests/targets/split.py has a function of each kind by construction:
# py_only (the interpreter), native_nogil (zlib, the GIL released),
# native_gil (sorted, the GIL held), sys_random (getrandom) and sys_read
# (a file's pages copied from the page cache), and mixed, which does
# exactly one py_only's and one native_nogil's work per call: its Python
# share among its Python and native time is py_only's time over the two
# (read from the same profile). Each pure function must be at least 90%
# of its kind (refused, where the kernel's ticks label it, a floor from
# their count: split_check); mixed within 5 points (or 3 standard deviations of the
# difference of the two shares, when wider: at 100 Hz). With perf counters
# (the default), which tell the kernel's part by their grid; refused
# (tests/lib/noperf.c: the threads' CPU clocks), by the kernel's own ticks
# (preload/sample/ticklabel.h), at 1 kHz and 100 Hz; with CPU timers, by
# the ticks since each sample.
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

setup() {
	common_setup
	noperf_build
}

teardown() {
	common_teardown
}

# split_check PROF FUNCS...: each FUNC given as NAME=KIND has at least
# 90% of its samples labelled time=KIND; mixed's split as constructed.
# With TICKS_HZ=HZ (the sampling rate; perf refused), a label comes from
# the kernel's 4 ms ticks around the sample, not from the sample alone: a
# function's labels are as many independent draws as the ticks that fell
# in it (a 140-sample function at 1 kHz: 35), so its floor is 3 standard
# deviations of that many draws below a 95% share (the ticks at its two
# ends, shared with its neighbours), when that is below 90% (84% for 35).
split_check() {
	"$PP_HOST_PYTHON" - "$PP_SHARES" "$@" <<'PY'
import os, subprocess, sys
shares, prof = sys.argv[1], sys.argv[2]
def count(funcs, kind=None):
    cmd = [sys.executable, shares, "count", prof] + funcs
    if kind:
        cmd += ["--where", "time=" + kind]
    out = subprocess.check_output(cmd).decode()
    return dict((l.split("\t")[0], int(l.split("\t")[1]))
                for l in out.splitlines())
names = [a.split("=")[0] for a in sys.argv[3:]] + ["mixed", "py_only",
                                                   "native_nogil"]
allc = count(names)
kinds = dict((k, count(names, k)) for k in ("python", "native", "system"))
bad = False
for a in sys.argv[3:]:
    name, kind = a.split("=")
    n = allc.get(name, 0)
    got = kinds[kind].get(name, 0)
    share = float(got) / n if n else 0.0
    floor = 0.9
    if os.environ.get("TICKS_HZ") and n:
        ticks = n * 250.0 / float(os.environ["TICKS_HZ"])
        floor = min(0.9, 0.95 - 3 * (0.95 * 0.05 / ticks) ** 0.5)
    row = " ".join("%s %5.1f%%" % (k, 100.0 * kinds[k].get(name, 0) / n if n
                                   else 0) for k in ("python", "native",
                                                      "system"))
    print("%-13s %5d samples: %s" % (name, n, row))
    if n < 20 or share < floor:
        print("  <-- want at least %.1f%% %s" % (100 * floor, kind))
        bad = True
py, nat = kinds["python"].get("py_only", 0), kinds["native"].get("native_nogil", 0)
mp, mn = kinds["python"].get("mixed", 0), kinds["native"].get("mixed", 0)
want = 100.0 * py / (py + nat) if py + nat else 0
got = 100.0 * mp / (mp + mn) if mp + mn else 0
# 5 points, or 3 standard deviations of the difference of two shares of
# that many samples when that is wider (at 100 Hz: a few hundred)
p = want / 100.0
sd = (p * (1 - p) / max(mp + mn, 1) + p * (1 - p) / max(py + nat, 1)) ** 0.5
tol = max(5.0, 300.0 * sd)
print("mixed: Python %.1f%% of its Python and native time, constructed %.1f%%"
      " (tolerance %.1f points)" % (got, want, tol))
if mp + mn < 20 or abs(got - want) > tol:
    print("  <-- want within %.1f points" % tol)
    bad = True
sys.exit(1 if bad else 0)
PY
}

# record_split NAME EXE HZ SECONDS [PREFIX...]: split.py's profile in
# $T/NAME.pb.gz (calls 5 times longer at 100 Hz: SCALE).
record_split() {
	local name=$1 exe=$2 hz=$3 secs=$4 scale=1
	shift 4
	((hz < 250)) && scale=5
	PYPROF_HZ=$hz "$@" "$PP_PYPROF" record -o "$T/$name.pb.gz" -- "$exe" \
		"$PP_TARGETS/split.py" "$secs" "$T/$name.dat" "$scale" \
		>"$T/$name.out" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "record failed"; }
	tail -1 "$T/$name.out"
	go tool pprof -comments "$T/$name.pb.gz" | grep -m1 "CPU time from"
}

all_kinds() {
	quiet record_split "$1" "$2" 1000 2 env PYPROF_CPU_SOURCE=perf
	split_check "$T/$1.pb.gz" py_only=python native_nogil=native \
		native_gil=native sys_random=system sys_read=system
}

@test "1.1 perf counters at 1 kHz, every interpreter: each function's time of its kind, mixed as constructed" {
	for_each_python all_kinds
}

slow_kinds() {
	quiet record_split "$1" "$2" 100 6 env PYPROF_CPU_SOURCE=perf
	split_check "$T/$1.pb.gz" py_only=python native_nogil=native \
		native_gil=native sys_random=system sys_read=system
}

@test "1.2 at 100 Hz" {
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.15)" for_each_python slow_kinds
}

refused_kinds() {
	quiet record_split "$1" "$2" 1000 2 "$NOPERF" EACCES
	grep -q "perf_event_open refused" "$T/$1.err" ||
		fail "perf_event_open was not refused"
	TICKS_HZ=1000 split_check "$T/$1.pb.gz" py_only=python native_nogil=native \
		native_gil=native sys_random=system sys_read=system
}

@test "1.3 perf_event_open refused (the default source): every kind told apart by the kernel's ticks, every interpreter" {
	PYPROF_LOG=info for_each_python refused_kinds
}

refused_slow() {
	quiet record_split "$1" "$2" 100 6 "$NOPERF" ENOSYS
	TICKS_HZ=100 split_check "$T/$1.pb.gz" py_only=python native_nogil=native \
		native_gil=native sys_random=system sys_read=system
}

@test "1.4 refused at 100 Hz" {
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.11 3.15)" for_each_python refused_slow
}

timer_kinds() {
	quiet record_split "$1" "$2" 250 4 env PYPROF_CPU_SOURCE=timer
	split_check "$T/$1.pb.gz" py_only=python native_nogil=native \
		native_gil=native sys_random=system sys_read=system
}

@test "1.5 CPU timers (PYPROF_CPU_SOURCE=timer) at 250 Hz: the kernel's part by its ticks" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.8 3.14)" for_each_python timer_kinds
}

# top_agrees PROF: pyprof top --split's columns are the labels' shares,
# per function and per line.
top_agrees() {
	local prof=$1 by
	for by in function line; do
		"$PP_PYPROF" top --split --by "$by" -n 12 "$prof" >"$T/top.$by"
		cat "$T/top.$by"
	done
	"$PP_HOST_PYTHON" - "$PP_SHARES" "$prof" "$T/top.function" <<'PY'
import re, subprocess, sys
shares, prof, top = sys.argv[1:4]
def count(funcs, kind=None):
    cmd = [sys.executable, shares, "count", prof] + funcs
    if kind:
        cmd += ["--where", "time=" + kind]
    out = subprocess.check_output(cmd).decode()
    return dict((l.split("\t")[0], int(l.split("\t")[1]))
                for l in out.splitlines())
rows = []
for line in open(top):
    m = re.match(r"\s*\S+\s+\S+%\s+\S+%\s+\S+\s+(\S+)%\s+(\S+)%\s+(\S+)%\s+(\S+)%\s+(\S+)", line)
    if m:
        rows.append((m.group(5), [float(m.group(i)) for i in (2, 3, 4)]))
if len(rows) < 5:
    sys.exit("too few rows in top --split")
# the program's own functions (count adds up every function of a name:
# main, <module> and the like are several)
own = ("py_body", "nat_body", "native_gil", "sys_random", "sys_read",
       "mixed", "py_only", "native_nogil")
rows = [r for r in rows if r[0] in own]
if len(rows) < 4:
    sys.exit("too few of the program's functions in top --split")
names = [r[0] for r in rows]
total = int(subprocess.check_output(
    [sys.executable, shares, "count", prof]).decode().split()[-1])
bad = False
for name, cols in rows:
    for k, col in zip(("python", "native", "system"), cols):
        want = 100.0 * count([name], k).get(name, 0) / total
        if abs(want - col) > 0.01 + 1e-9:
            print("%s %s: top says %.2f%%, the labels %.2f%%" % (name, k, col, want))
            bad = True
sys.exit(1 if bad else 0)
PY
	# per line: each line's columns add up to its cum% (every sample of
	# ours has a time label)
	awk 'NR > 3 { c = $5 + 0; s = $6 + $7 + $8; d = c - s; if (d > 0.05 || d < -0.05) { print "line: " $0; bad = 1 } } END { exit bad }' "$T/top.line"
}

# flame_agrees PROF: the flame graph colours each frame by its split
# (data-t: its python, native and system values) and those values are
# the labels' own.
flame_agrees() {
	local prof=$1
	"$PP_PYPROF" flamegraph "$prof" -o "$T/f.svg"
	grep -q '<g id="legend">.*python.*native.*system' "$T/f.svg" ||
		fail "no legend"
	"$PP_HOST_PYTHON" - "$PP_SHARES" "$prof" "$T/f.svg" <<'PY'
import re, subprocess, sys
shares, prof, svg = sys.argv[1:4]
text = open(svg).read()
colours = {"python": (90, 140, 225), "native": (245, 170, 60),
           "system": (215, 60, 60)}
frames = re.findall(r'data-n="([^"]*)"[^>]*data-t="(\d+),(\d+),(\d+)"'
                    r'[^>]*><title>[^<]*</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"',
                    text)
seen = {}
bad = False
for name, a, b, c, r, g, bl in frames:
    v = [int(a), int(b), int(c)]
    s = float(sum(v))
    if s <= 0:
        continue
    want = [sum(colours[k][j] * v[i] / s
                for i, k in enumerate(("python", "native", "system")))
            for j in range(3)]
    if any(abs(w - int(x)) > 1 for w, x in zip(want, (r, g, bl))):
        print("%s: fill rgb(%s,%s,%s), its split makes %s" % (name, r, g, bl, want))
        bad = True
    seen.setdefault(name, [0, 0, 0])
    seen[name] = [x + y for x, y in zip(seen[name], v)]
for name, kind in (("py_only", "python"), ("native_gil", "native"),
                   ("sys_random", "system")):
    out = subprocess.check_output([sys.executable, shares, "count", prof, name,
                                   "--where", "time=" + kind, "--value"]).decode()
    want = int(out.splitlines()[0].split("\t")[1])
    got = seen.get(name, [0, 0, 0])[("python", "native", "system").index(kind)]
    print("%s: %s %d ns in the flame graph, %d in the labels" % (name, kind, got, want))
    if got != want:
        bad = True
sys.exit(1 if bad else 0)
PY
}

@test "2.1 top --split and --by line give the labels' numbers; the flame graph is coloured by them, with a legend" {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	quiet record_split t "$exe" 1000 2 env PYPROF_CPU_SOURCE=perf
	top_agrees "$T/t.pb.gz"
	flame_agrees "$T/t.pb.gz"
	run_capture bad "$PP_PYPROF" top --split --by-label pid "$T/t.pb.gz"
	assert_eq 2 "$RC" "--split with --by-label"
}

# py311: the interpreter the single-interpreter tests run.
py311() {
	pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}'
}

# leaves_agree PROF: convert --split's [native] and [system] leaves, in
# speedscope's JSON and in folded stacks, weigh what top --split prints
# for each function: the stacks holding it that end in [native] (or
# [system]), over every stack's weight, are its native (system) column;
# the leaves are only ever leaves.
leaves_agree() {
	local prof=$1
	"$PP_PYPROF" convert "$prof" --format speedscope --split -o "$T/s.json"
	"$PP_PYPROF" convert "$prof" --format folded --split \
		--sample-type cpu -o "$T/s.folded"
	"$PP_PYPROF" top --split "$prof" >"$T/top" # every row: mixed has no flat time
	cat "$T/top"
	"$PP_HOST_PYTHON" - "$T/s.json" "$T/s.folded" "$T/top" <<'PY'
import json, re, sys
ss, folded, top = sys.argv[1:4]
kinds = ("[native]", "[system]")
doc = json.load(open(ss))
if "(split: [native], [system] leaves)" not in doc["name"]:
    sys.exit("the file's name does not say it is split: %r" % doc["name"])
names = [f["name"] for f in doc["shared"]["frames"]]
# stacks as names, leaf last, with their weights, from both files
stacks = []
for prof in doc["profiles"]:
    for st, w in zip(prof["samples"], prof["weights"]):
        stacks.append(([names[i] for i in st], w, "speedscope"))
for line in open(folded):
    path, w = line.rstrip("\n").rsplit(" ", 1)
    # "name (file)": the name alone, as top's rows and speedscope's frames
    stacks.append(([re.sub(r" \(.*\)$", "", f) for f in path.split(";")],
                   int(w), "folded"))
rows = {}
for line in open(top):
    m = re.match(r"\s*\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s+(\S+)%\s+(\S+)%\s+(\S+)%\s+(\S+)", line)
    if m:
        rows[m.group(4)] = (float(m.group(2)), float(m.group(3)))
bad = False
for src in ("speedscope", "folded"):
    mine = [(s, w) for s, w, f in stacks if f == src]
    total = sum(w for s, w in mine)
    for s, w in mine:
        if any(k in s[:-1] for k in kinds):
            print("%s: a split frame that is no leaf: %s" % (src, s))
            bad = True
    for name in ("nat_body", "native_gil", "py_body", "sys_random",
                 "sys_read", "mixed"):
        if name not in rows:
            print("%s not in top --split" % name)
            bad = True
            continue
        for k, col in zip(kinds, rows[name]):
            got = 100.0 * sum(w for s, w in mine
                              if s[-1] == k and name in s[:-1]) / total
            print("%-10s %-10s %s %6.2f%%, top --split %6.2f%%" % (
                src, name, k, got, col))
            if abs(got - col) > 0.005 + 1e-9:
                bad = True
    n = sum(1 for s, w in mine if s[-1] in kinds)
    if n == 0:
        print("%s: no [native] or [system] leaf" % src)
        bad = True
sys.exit(1 if bad else 0)
PY
	# Without --split the file is as it was: no such frame, its own name.
	"$PP_PYPROF" convert "$prof" --format speedscope -o "$T/plain.json"
	! grep -q '"\[native\]"\|split:' "$T/plain.json" ||
		fail "--split's frames without --split"
}

@test "3.1 convert --split: speedscope's and folded stacks' [native] and [system] leaves weigh top --split's columns" {
	quiet record_split t "$(py311)" 1000 2 env PYPROF_CPU_SOURCE=perf
	leaves_agree "$T/t.pb.gz"
	run_capture bad "$PP_PYPROF" convert "$T/t.pb.gz" --format svg --split
	assert_eq 2 "$RC" "--split with --format svg"
	grep -q -- "--split goes with --format folded or speedscope" "$T/bad.err" ||
		fail "no reason for --split with svg: $(cat "$T/bad.err")"
}

@test "3.2 the HTTP index links /debug/pprof/top, whose table is top --split's of the same window (and --confidence's)" {
	local port token base exe i
	exe=$(py311)
	collector_start --http 0
	port=$(http_port "$T/collector.log")
	token=$(cat "$SOCK.http-token")
	base=http://pyprof:$token@127.0.0.1:$port
	# The program waits on a FIFO (no CPU, so no sample) until both
	# windows are open, works 2 s and exits: both windows hold every
	# sample of its work and nothing else.
	mkfifo "$T/go"
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$SOCK PYPROF_HZ=1000 "$exe" -c '
import runpy, sys
print("waiting"); sys.stdout.flush()
open(sys.argv[1]).read()
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$T/go" \
		"$PP_TARGETS/split.py" 2 "$T/s.dat" >"$T/app.out" 2>&1 3>&- &
	local app=$!
	wait_for_line "$T/app.out" waiting
	for ((i = 0; i < 100; i++)); do
		curl -s "$base/debug/pprof/" >"$T/index.html"
		grep -q "data-pid=\"$app\"" "$T/index.html" && break
		sleep 0.05
	done
	grep -q "<a class=\"top\" href=\"top?seconds=30&amp;pid=$app&amp;confidence=95\">top (split, 95%)</a>" \
		"$T/index.html" || fail "no top (split, 95%) link in the index: $(cat "$T/index.html")"
	grep -q '<a id="all-top" href="top?seconds=30&amp;confidence=95">top (split, 95%)</a>' "$T/index.html" ||
		fail "no all-processes top link with intervals in the index"
	sleep 0.3 # the library's last samples before it blocked
	curl -s -o "$T/w.pb.gz" "$base/debug/pprof/profile?seconds=5&pid=$app" 3>&- &
	local c1=$!
	curl -s -o "$T/top.html" "$base/debug/pprof/top?seconds=5&pid=$app&n=40&confidence=90" 3>&- &
	local c2=$!
	for ((i = 0; i < 100; i++)); do
		curl -s "$base/debug/pprof/" | grep -q '2 profiles being taken' && break
		sleep 0.05
	done
	echo go >"$T/go"
	wait "$app" || fail "the program failed: $(cat "$T/app.out")"
	wait "$c1" "$c2"
	"$PP_PYPROF" top --split --confidence 90 -n 40 "$T/w.pb.gz" >"$T/top.cli"
	"$PP_HOST_PYTHON" -c '
import html, re, sys
page = open(sys.argv[1]).read()
m = re.search(r"<pre id=\"top\">(.*)</pre>", page, re.S)
sys.stdout.write(html.unescape(m.group(1)) if m else page)' \
		"$T/top.html" >"$T/top.http"
	cat "$T/top.http"
	grep -q ' python  native  system  function' "$T/top.http" ||
		fail "no split columns on /debug/pprof/top"
	grep -q '^Intervals: 90%' "$T/top.http" || fail "no intervals at 90%"
	grep -q 'py_body' "$T/top.http" || fail "split.py's functions are not in it"
	diff "$T/top.cli" "$T/top.http" || fail "/debug/pprof/top differs from pyprof top --split"
	run_capture bad curl -s -i "$base/debug/pprof/top?seconds=1&n=0"
	grep -q '^HTTP/1.1 400' "$T/bad.out" || fail "n=0 accepted"
	grep -q "n must be a number of rows from 1 to 100000, not '0'" "$T/bad.out" ||
		fail "n=0: $(cat "$T/bad.out")"
	run_capture bad curl -s -i "$base/debug/pprof/top?seconds=1&confidence=100"
	grep -q "confidence must be a level from 50 to 99.99 (percent), not '100'" "$T/bad.out" ||
		fail "confidence=100: $(cat "$T/bad.out")"
}

@test "3.3 go tool pprof -tagfocus=time=native keeps only the native samples" {
	quiet record_split t "$(py311)" 1000 2 env PYPROF_CPU_SOURCE=perf
	go tool pprof -symbolize=none -traces -tagfocus=time=native "$T/t.pb.gz" \
		>"$T/traces" 2>/dev/null
	# every trace's time label native, and there are some: split.py's
	# native calls make 10 to 30 distinct traces (by line and labels),
	# fewer on a busy machine (17 and 18 in one CI run, 26 alone)
	awk '/^ *time: / { n++; if ($2 != "native") { print "not native: " $0; bad = 1 } }
		END { if (n < 5) { print n " traces"; bad = 1 } exit bad }' "$T/traces"
	shares labels "$T/t.pb.gz" time | grep -q '^python' ||
		fail "no python samples for the filter to leave out"
}

@test "3.4 convert --split --timeline: the records' flags give the same [native] and [system] time as the profile's labels" {
	collector_start --output "$T/m.pb.gz" --timeline "$T/tl"
	PYPROF_HZ=1000 PYPROF_CPU_SOURCE=perf profiled "$(py311)" "$PP_TARGETS/split.py" 1 "$T/s.dat" \
		>"$T/app.out" 2>&1 || fail "split.py failed: $(cat "$T/app.out")"
	collector_stop
	"$PP_PYPROF" convert "$T/m.pb.gz" --format speedscope --split -o "$T/p.json"
	"$PP_PYPROF" convert "$T/m.pb.gz" --timeline "$T/tl" --format speedscope \
		--split -o "$T/t.json"
	"$PP_HOST_PYTHON" - "$T/p.json" "$T/t.json" <<'PY'
import collections, json, sys
def kinds(path):
    doc = json.load(open(path))
    names = [f["name"] for f in doc["shared"]["frames"]]
    c = collections.Counter()
    for p in doc["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            leaf = names[s[-1]] if s else ""
            c[leaf if leaf in ("[native]", "[system]") else "other"] += w
    return c
p, t = kinds(sys.argv[1]), kinds(sys.argv[2])
print("profile: %s\ntimeline: %s" % (dict(p), dict(t)))
sys.exit(0 if p == t and p["[native]"] > 0 and p["[system]"] > 0 else 1)
PY
}

@test "3.5 convert --format gecko: the Firefox Profiler's categories Python, Native and System weigh what the labels and top --split say" {
	collector_start --output "$T/m.pb.gz" --timeline "$T/tl"
	PYPROF_HZ=1000 PYPROF_CPU_SOURCE=perf profiled "$(py311)" "$PP_TARGETS/split.py" 1 "$T/s.dat" \
		>"$T/app.out" 2>&1 || fail "split.py failed: $(cat "$T/app.out")"
	collector_stop
	"$PP_PYPROF" convert "$T/m.pb.gz" --timeline "$T/tl" --format gecko -o "$T/g.json"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/gecko_check.py" "$T/g.json" >"$T/gecko.json" ||
		fail "not a valid processed profile"
	# the profile's own counts: per value of the label time, and each
	# function's cumulative split (top --split, in samples)
	"$PP_PYPROF" top --by-label time --sample-type samples "$T/m.pb.gz" >"$T/bylabel"
	"$PP_PYPROF" top --split --sort cum --sample-type samples "$T/m.pb.gz" >"$T/split"
	cat "$T/bylabel"
	"$PP_HOST_PYTHON" - "$T/g.json" "$T/gecko.json" "$T/bylabel" "$T/split" <<'PY'
import json, re, sys
doc = json.load(open(sys.argv[1]))
summ = json.loads(open(sys.argv[2]).read())
names = [c["name"] for c in doc["meta"]["categories"]]
for want in ("Python", "Native", "System"):
    assert want in names, "no category %s: %s" % (want, names)
# every category of the legend has its colour
assert all(c.get("color") for c in doc["meta"]["categories"])
got = {}
for t in summ["threads"]:
    for k, w in t["categories"].items():
        got[k] = got.get(k, 0) + w
labels = {}
for line in open(sys.argv[3]):
    m = re.match(r"^\s*(\d+)\s+[0-9.]+%\s+\d+\s+(python|native|system|\(none\))$", line)
    if m:
        labels[m.group(2)] = int(m.group(1))
print("gecko categories:", got, "labels:", labels)
for cat, lab in (("Python", "python"), ("Native", "native"), ("System", "system")):
    # a sample with no time label (its kind unknown: now and then one)
    # is drawn in its leaf's category, Python for Python code
    extra = labels.get("(none)", 0) if cat == "Python" else 0
    assert labels.get(lab, 0) <= got.get(cat, 0) <= labels.get(lab, 0) + extra, \
        "%s weighs %d, time=%s has %d samples (%d unlabeled)" % (
            cat, got.get(cat, 0), lab, labels.get(lab, 0), extra)
assert labels.get("native", 0) > 0 and labels.get("system", 0) > 0, "no native or system samples"
# per function: the samples with it on the stack, by category, as
# shares of all, against top --split's python/native/system columns
total = sum(sum(t["weights"]) for t in summ["threads"])
split = {}
for line in open(sys.argv[4]):
    m = re.match(r"^.*?([0-9.]+)%\s+([0-9.]+)%\s+([0-9.]+)%\s+(\S+)\s+\S*split\.py:\d+$", line)
    if m:
        split[m.group(4)] = [float(m.group(i)) for i in (1, 2, 3)]
checked = 0
for fn in ("py_only", "native_nogil", "native_gil", "sys_random", "sys_read", "mixed"):
    if fn not in split:
        continue
    c = {"Python": 0, "Native": 0, "System": 0}
    for t in summ["threads"]:
        for st, cat, w in zip(t["stacks"], t["sample_categories"], t["weights"]):
            if fn in st and cat in c:
                c[cat] += w
    mine = [100.0 * c[k] / total for k in ("Python", "Native", "System")]
    print("%-13s gecko %s  top --split %s" % (fn, ["%.2f" % x for x in mine], split[fn]))
    assert all(abs(a - b) <= 0.011 for a, b in zip(mine, split[fn])), fn
    checked += 1
assert checked >= 4, "only %d functions in top --split's table" % checked
PY
}
