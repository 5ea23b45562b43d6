#!/usr/bin/env bats
# views.bats - what people look at: `pyprof flamegraph`, `top`, `convert`,
# `diff`, `record --format`, and the opcode view, on profiles of real runs.
#
# Independent judges: xmllint (Debian's libxml2-utils) for the SVG's
# well-formedness; headless Chromium driven over the DevTools protocol
# (tests/lib/flame_cdp.py: real mouse events, the Search prompt answered)
# for zoom, search and tooltips; `go tool pprof` for the numbers top and
# folded must reproduce; speedscope's own schema (from its npm package,
# checked with python3-jsonschema) and its own importer (the package's
# release build in Chromium) for the speedscope export. Screenshots are
# kept in $PP_BUILD/test-artifacts/.
#
# Profiles come from Debian's python3 (the views do not depend on the
# interpreter), except the opcode test, which runs on every interpreter.

load ../lib/common

SPEEDSCOPE=$PP_ROOT/tests/node/node_modules/speedscope/dist/release
ARTIFACTS=$PP_BUILD/test-artifacts

setup_file() {
	local py=/usr/bin/python3
	[[ -x $py ]] || py=python3
	export VPY=$py
	export VDIR=$BATS_FILE_TMPDIR/views
	mkdir -p "$VDIR"
	# One profile of known shares, one of two phases in time order.
	"$PP_BUILD/pyprof" record -o "$VDIR/shares.pb.gz" -- \
		"$py" "$PP_ROOT/tests/targets/shares.py" 2 >"$VDIR/shares.out" 2>"$VDIR/shares.err" || true
	"$PP_BUILD/pyprof" record -o "$VDIR/phases.pb.gz" -- \
		"$py" "$PP_ROOT/tests/targets/phases.py" 0.4 1.2 >/dev/null 2>"$VDIR/phases.err" || true
}

setup() {
	common_setup
	mkdir -p "$ARTIFACTS"
	[[ -s $VDIR/shares.pb.gz ]] || fail "no profile recorded: $(cat "$VDIR/shares.err")"
}

teardown() {
	common_teardown
}

# cdp SVG ARGS...: tests/lib/flame_cdp.py; its JSON lines in $T/cdp.out.
cdp() {
	timeout 180 "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/flame_cdp.py" "$@" >"$T/cdp.out" 2>"$T/cdp.err" || {
		cat "$T/cdp.out" "$T/cdp.err" >&2
		fail "flame_cdp.py failed"
	}
	cat "$T/cdp.out"
}

# jfield N KEY: field KEY of the Nth JSON line (1-based) of $T/cdp.out.
jfield() {
	"$PP_HOST_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1])[sys.argv[3]])' \
		"$T/cdp.out" "$1" "$2"
}

# flat_pct PROFILE FUNC: FUNC's flat share (0..100) as go tool pprof -raw
# decodes the profile (the first value: samples).
flat_pct() {
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" summary "$1" >"$T/sum.txt"
	awk -v f="$2" '$1 == "total" { t = $2 } $1 == "flat" && $2 == f { n += $3 } END { printf "%.4f\n", 100 * n / t }' "$T/sum.txt"
}

@test "a filter that keeps no sample gives every view an empty result, not a crash" {
	local p=$VDIR/shares.pb.gz none=(--tag thread_id=0) f
	"$PP_PYPROF" flamegraph "${none[@]}" "$p" -o "$T/f.svg"
	"$PP_PYPROF" flamegraph --icicle --by line "${none[@]}" "$p" -o "$T/i.svg"
	"$PP_PYPROF" convert --format svg "${none[@]}" "$p" -o "$T/c.svg"
	for f in f i c; do
		xmllint --noout "$T/$f.svg" || fail "$f.svg is not well-formed XML"
		grep -q 'data-n="share_fifty"' "$T/$f.svg" && fail "$f.svg draws a filtered-out frame"
	done
	"$PP_PYPROF" convert --format folded "${none[@]}" "$p" -o "$T/x.folded"
	[[ -f $T/x.folded && ! -s $T/x.folded ]] || fail "folded output is not an empty file"
	"$PP_PYPROF" convert --format speedscope "${none[@]}" "$p" -o "$T/x.json"
	"$PP_HOST_PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/x.json" ||
		fail "speedscope output is not JSON"
	"$PP_PYPROF" top "${none[@]}" "$p" >"$T/top.txt"
	grep -q 'total 0 in 0 samples' "$T/top.txt" || fail "top: $(cat "$T/top.txt")"
	"$PP_PYPROF" top --by line "${none[@]}" "$p" >"$T/top.txt"
	grep -q 'total 0 in 0 samples' "$T/top.txt" || fail "top --by line: $(cat "$T/top.txt")"
	"$PP_PYPROF" diff "${none[@]}" "$p" "$p" -o "$T/d.svg" >"$T/diff.txt"
	xmllint --noout "$T/d.svg" || fail "the differential flame graph is not well-formed XML"
}

@test "pyprof flamegraph writes an SVG that xmllint finds well-formed (flame, icicle, by line, filtered)" {
	local f
	"$PP_PYPROF" flamegraph "$VDIR/shares.pb.gz" -o "$T/f.svg"
	"$PP_PYPROF" flamegraph --icicle "$VDIR/shares.pb.gz" -o "$T/i.svg"
	"$PP_PYPROF" flamegraph --by line --sample-type samples "$VDIR/shares.pb.gz" -o "$T/l.svg"
	"$PP_PYPROF" flamegraph --tag thread_name=MainThread "$VDIR/shares.pb.gz" -o "$T/t.svg"
	for f in f i l t; do
		xmllint --noout "$T/$f.svg" || fail "$f.svg is not well-formed XML"
		grep -q '<script type="text/ecmascript"><!\[CDATA\[' "$T/$f.svg" || fail "$f.svg has no script"
	done
	# the default title names the program and the profile's file (issue
	# 43.16: two graphs side by side said the same), from the comments
	# go tool pprof -comments shows
	local cmdline
	cmdline=$(go tool pprof -comments "$VDIR/shares.pb.gz" 2>/dev/null | sed -n 's/^pid [0-9]* command: //p' | head -1)
	[[ $cmdline == *shares.py* ]] || fail "no command line in the profile's comments: $cmdline"
	grep -qF ">Icicle graph of $cmdline (shares.pb.gz)<" "$T/i.svg" ||
		fail "icicle title: $(grep -o '<text id="title"[^<]*' "$T/i.svg")"
	grep -qF ">Flame graph of $cmdline (shares.pb.gz)<" "$T/f.svg" ||
		fail "flame title: $(grep -o '<text id="title"[^<]*' "$T/f.svg")"
	"$PP_PYPROF" flamegraph --title 'As asked' "$VDIR/shares.pb.gz" -o "$T/a.svg"
	grep -q '<text id="title"[^>]*>As asked<' "$T/a.svg" || fail "--title is not the title"
	grep -q 'data-n="share_fifty"' "$T/f.svg" || fail "share_fifty not drawn"
	# No reference to anything outside the file.
	! grep -qE '(xlink:)?href="(https?:|//)' "$T/f.svg" || fail "the SVG loads something from outside"
}

@test "clicking a frame in Chromium zooms it to the full width and hides what is not above or below it" {
	"$PP_PYPROF" flamegraph "$VDIR/shares.pb.gz" -o "$T/f.svg"
	cdp "$T/f.svg" --screenshot "$ARTIFACTS/flamegraph.png" --click share_fifty \
		--screenshot "$ARTIFACTS/flamegraph-zoomed.png" --click all
	# frames above the rows of the frames at least 1% wide are hidden
	# until zoomed into (the next test); none other
	local deep
	deep=$(grep -c 'style="display:none"' "$T/f.svg" || true)
	assert_eq load "$(jfield 1 action)" "first line"
	assert_eq "$deep" "$(jfield 1 hidden)" "hidden frames before any click"
	assert_eq False "$(jfield 1 unzoom_visible)" "Reset Zoom before any click"
	assert_eq click "$(jfield 3 action)" "the click"
	assert_eq 1180 "$(printf '%.0f' "$(jfield 3 width)")" "the clicked frame's width"
	(($(jfield 3 hidden) > 0)) || fail "nothing hidden after zooming into share_fifty"
	(($(jfield 3 ancestors) >= 3)) || fail "main, <module> and all should stay, dimmed, below"
	assert_eq True "$(jfield 3 unzoom_visible)" "Reset Zoom after the click"
	[[ $(jfield 3 hash) == "#z="* ]] || fail "the zoom is not in the URL fragment"
	# A click on the root zooms back out.
	assert_eq "$deep" "$(jfield 5 hidden)" "hidden frames after clicking the root"
	assert_eq False "$(jfield 5 unzoom_visible)" "Reset Zoom after zooming out"
	[[ $(head -c 8 "$ARTIFACTS/flamegraph-zoomed.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] ||
		fail "no PNG screenshot kept"
}

@test "a tall flame graph opens in a 900-pixel window on its widest frames; an icicle graph opens at the top" {
	cat >"$T/deep.py" <<'PY'
def down(n):
    if n == 0:
        x = 0
        for i in range(3000000):
            x += i
        return x
    return down(n - 1)
down(90)
PY
	"$PP_PYPROF" record -o "$T/deep.pb.gz" -- "$PP_HOST_PYTHON" "$T/deep.py"
	"$PP_PYPROF" flamegraph "$T/deep.pb.gz" -o "$T/deep.svg"
	cdp "$T/deep.svg" --viewport-height 900 --screenshot "$ARTIFACTS/flamegraph-tall.png"
	assert_eq all "$(jfield 1 root_name)" "the first frame"
	# the root ("all", the widest) on the first screen, with the frames above it
	awk -v y="$(jfield 1 root_top)" 'BEGIN { exit !(y > 450 && y < 900) }' ||
		fail "the root is at y=$(jfield 1 root_top), not on the first screen's lower half"
	"$PP_PYPROF" flamegraph --icicle "$T/deep.pb.gz" -o "$T/deep-icicle.svg"
	cdp "$T/deep-icicle.svg" --viewport-height 900
	assert_eq 0 "$(jfield 1 scroll_y)" "an icicle graph's scroll"
	awk -v y="$(jfield 1 root_top)" 'BEGIN { exit !(y > 0 && y < 200) }' ||
		fail "the icicle's root is at y=$(jfield 1 root_top)"
}

@test "one deep stack of a sample or two does not set a flame graph's height: its tower is cut where frames get narrower than 1%, marked, and shown whole by clicking it" {
	cat >"$T/tower.py" <<'PY'
import time
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
def tower(n):
    if n == 0:
        spin(0.015)
        return
    tower(n - 1)
def main():
    spin(1.5)
    tower(80)
    spin(1.5)
main()
PY
	"$PP_PYPROF" record -o "$T/tower.pb.gz" -- "$PP_HOST_PYTHON" "$T/tower.py"
	"$PP_PYPROF" flamegraph "$T/tower.pb.gz" -o "$T/tower.svg"
	local h towers
	h=$(sed -n 's/^<svg .* height="\([0-9]*\)".*/\1/p' "$T/tower.svg")
	towers=$(grep -c 'data-n="tower"' "$T/tower.svg")
	echo "height $h px, $towers tower frames"
	((towers >= 81)) || fail "the tower's frames are not all in the SVG: $towers"
	# all, <module>, main, spin: 4 rows of frames (a 16 px each), not 85
	((h < 60 + 34 + 16 * 8)) || fail "the graph is $h px high"
	grep -q 'frames above, too narrow to show: click to zoom' "$T/tower.svg" ||
		fail "the cut frame does not say so"
	cdp "$T/tower.svg" --click tower
	(($(printf '%.0f' "$(jfield 1 svg_h)") == h)) ||
		fail "in Chromium the graph is $(jfield 1 svg_h) px high, not $h"
	# zoomed into the tower's cut frame, the whole tower shows
	(($(jfield 2 shown) >= towers)) ||
		fail "$(jfield 2 shown) frames shown after zooming into the tower"
	(($(printf "%.0f" "$(jfield 2 svg_h)") >= 60 + 34 + 16 * 81)) ||
		fail "the zoomed graph is $(jfield 2 svg_h) px high"
}

@test "searching in Chromium highlights the matches and reports their share of the total" {
	local want got
	"$PP_PYPROF" flamegraph "$VDIR/shares.pb.gz" -o "$T/f.svg"
	cdp "$T/f.svg" --search 'share_(fifty|twenty)' --screenshot "$ARTIFACTS/flamegraph-search.png"
	assert_eq prompt "$(jfield 2 dialog)" "the Search button's dialog"
	assert_eq 2 "$(jfield 2 highlighted)" "highlighted frames"
	got=$(jfield 2 matched | sed -n 's/^Matched: \([0-9.]*\)%$/\1/p')
	[[ -n $got ]] || fail "no 'Matched: P%' line: $(jfield 2 matched)"
	# The share as go tool pprof counts it (both are leaves).
	want=$(echo "$(flat_pct "$VDIR/shares.pb.gz" share_fifty) + $(flat_pct "$VDIR/shares.pb.gz" share_twenty)" | bc -l)
	echo "matched $got%, pprof says $want%"
	awk -v a="$got" -v b="$want" 'BEGIN { exit !(a - b < 0.01 && b - a < 0.01) }' ||
		fail "search share $got% differs from pprof's $want%"
}

@test "hovering a frame in Chromium shows its function, file:line, value, samples and percent" {
	local line d
	line=$(marker_line "$PP_ROOT/tests/targets/shares.py" def_share_thirty 2>/dev/null) ||
		line=$(grep -n '^def share_thirty' "$PP_ROOT/tests/targets/shares.py" | cut -d: -f1)
	"$PP_PYPROF" flamegraph "$VDIR/shares.pb.gz" -o "$T/f.svg"
	cdp "$T/f.svg" --hover share_thirty
	d=$(jfield 2 details)
	echo "details: $d"
	# then the split of a CPU profile of ours (docs/reading.md)
	# and the share's interval (docs/reading.md)
	[[ $d =~ ^share_thirty\ \(.*/tests/targets/shares\.py:$line\)\ \|\ [0-9.]+m?s,\ [0-9]+\ samples,\ [0-9.]+%\ of\ the\ total,\ 95%\ interval\ \[[0-9.]+,\ [0-9.]+\]%\ \|\ python\ [0-9.]+%,\ native\ [0-9.]+%,\ system\ [0-9.]+%$ ]] ||
		fail "details line is not 'share_thirty (FILE:$line) | VALUE, N samples, P% of the total, 95% interval [LO, HI]% | python P%, native P%, system P%'"
}

@test "the flame graph's tooltips give each frame's share with the interval top --intervals gives its function (flamegraph, convert --format svg, --confidence)" {
	local check=$PP_ROOT/tests/lib/flame_intervals.py
	"$PP_PYPROF" top --intervals "$VDIR/shares.pb.gz" >"$T/top95"
	"$PP_PYPROF" top --confidence 90 "$VDIR/shares.pb.gz" >"$T/top90"
	"$PP_PYPROF" flamegraph "$VDIR/shares.pb.gz" -o "$T/f.svg"
	"$PP_PYPROF" convert --format svg --confidence 90 "$VDIR/shares.pb.gz" -o "$T/c.svg"
	# A function drawn as one frame: its frame's share is its cum share,
	# so the tooltip must print top's cum% and cum% interval.
	"$PP_HOST_PYTHON" "$check" "$T/f.svg" "$T/top95" 3 >"$T/chk95" 2>&1 ||
		fail "95%: $(cat "$T/chk95")"
	"$PP_HOST_PYTHON" "$check" "$T/c.svg" "$T/top90" 3 >"$T/chk90" 2>&1 ||
		fail "90%: $(cat "$T/chk90")"
	local f
	for f in share_fifty share_thirty share_twenty; do
		grep -q "^$f .*: flame" "$T/chk95" || fail "$f not compared: $(cat "$T/chk95")"
		grep -q "^$f .*: flame" "$T/chk90" || fail "$f not compared at 90%: $(cat "$T/chk90")"
	done
	# the levels differ: a 90% graph read against top at 95% fails
	! "$PP_HOST_PYTHON" "$check" "$T/c.svg" "$T/top95" 3 >/dev/null 2>&1 ||
		fail "the checker accepts a 90% graph as 95%"
	# --confidence goes with svg and pprof only
	run_capture bad "$PP_PYPROF" convert --format speedscope --confidence 90 "$VDIR/shares.pb.gz"
	assert_eq 2 "$RC" "--confidence with speedscope"
}

@test "convert --format pprof --intervals: go tool pprof -comments lists top --intervals' table after the profile's comments; the samples are unchanged" {
	local orig n
	"$PP_PYPROF" convert "$VDIR/shares.pb.gz" --format pprof --intervals -n 8 --confidence 90 -o "$T/ann.pb.gz"
	go tool pprof -comments "$VDIR/shares.pb.gz" >"$T/c.orig" 2>/dev/null
	go tool pprof -comments "$T/ann.pb.gz" >"$T/c.ann" 2>"$T/c.err" || fail "go tool pprof -comments: $(cat "$T/c.err")"
	"$PP_PYPROF" top --confidence 90 -n 8 "$VDIR/shares.pb.gz" >"$T/top"
	orig=$(wc -l <"$T/c.orig")
	((orig >= 1)) || fail "the recorded profile has no comments"
	head -n "$orig" "$T/c.ann" | diff "$T/c.orig" - || fail "the profile's own comments are not kept first"
	tail -n +"$((orig + 1))" "$T/c.ann" | diff "$T/top" - || fail "the added comments are not top --confidence 90 -n 8's table"
	grep -q '^Intervals: 90%' "$T/c.ann" || fail "no intervals line"
	n=$(grep -cE '\[ *[0-9.]+, *[0-9.]+\] \[ *[0-9.]+, *[0-9.]+\]  share_' "$T/c.ann")
	((n == 3)) || fail "expected the three share_* rows with two intervals each, got $n"
	# the same samples: both readers see the same table
	"$PP_PYPROF" top "$VDIR/shares.pb.gz" >"$T/t1"
	"$PP_PYPROF" top "$T/ann.pb.gz" >"$T/t2"
	diff "$T/t1" "$T/t2" || fail "pyprof top differs after the conversion"
	# (its header prints the comments: the table from its first node)
	pprof_top "$VDIR/shares.pb.gz" | sed -n '/^Showing nodes/,$p' >"$T/g1"
	pprof_top "$T/ann.pb.gz" | sed -n '/^Showing nodes/,$p' >"$T/g2"
	[[ -s $T/g1 ]] || fail "go tool pprof -top printed no table"
	diff "$T/g1" "$T/g2" || fail "go tool pprof -top differs after the conversion"
	run_capture bad "$PP_PYPROF" convert "$VDIR/shares.pb.gz" --format pprof -o "$T/x.pb.gz"
	assert_eq 2 "$RC" "--format pprof without --intervals"
}

@test "pyprof top on an empty or a missing file: one line naming the file once and why" {
	: >"$T/empty.pb.gz"
	run_capture e "$PP_PYPROF" top "$T/empty.pb.gz"
	assert_eq 1 "$RC" "exit status for an empty file"
	assert_eq "pyprof: error: $T/empty.pb.gz: not a pprof profile (empty file)" \
		"$(cat "$T/e.err")" "message for an empty file"
	run_capture m "$PP_PYPROF" top "$T/missing.pb.gz"
	assert_eq 1 "$RC" "exit status for a missing file"
	assert_eq "pyprof: error: $T/missing.pb.gz: No such file or directory" \
		"$(cat "$T/m.err")" "message for a missing file"
}

@test "pyprof top lists the functions in the order and with the percentages go tool pprof computes" {
	local f ours theirs
	"$PP_PYPROF" top -n 3 "$VDIR/shares.pb.gz" | tee "$T/top"
	sed -n '4,6p' "$T/top" | awk '{ print $6 }' >"$T/order"
	printf 'share_fifty\nshare_thirty\nshare_twenty\n' | diff - "$T/order" || fail "wrong order"
	pprof_top "$VDIR/shares.pb.gz" >"$T/gotop"
	for f in share_fifty share_thirty share_twenty; do
		# top: "flat flat% sum% cum cum% NAME FILE:LINE"; pprof -top
		# prints the same flat% to two decimals.
		ours=$(awk -v f="$f" '$6 == f { print $2 }' "$T/top")
		theirs=$(awk -v f="$f" '$6 == f { print $2 }' "$T/gotop")
		echo "$f: pyprof $ours, go tool pprof $theirs"
		[[ -n $ours ]] && assert_eq "$theirs" "$ours" "$f flat%"
	done
	grep -qE '^Type: cpu \(nanoseconds\), total [0-9.]+m?s in [0-9]+ samples$' "$T/top" || fail "header"
}

@test "pyprof top --by-label sums per label value, --by line names the hottest line" {
	local pid
	pid=$("$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" summary "$VDIR/shares.pb.gz" |
		sed -n 's/^label pid=\([0-9]*\) .*/\1/p' | head -1)
	"$PP_PYPROF" top --by-label pid "$VDIR/shares.pb.gz" | tee "$T/lab"
	grep -qE "^ +[0-9.]+m?s +100.00% +[0-9]+  $pid\$" "$T/lab" || fail "no row for pid $pid with 100%"
	"$PP_PYPROF" top --by-label thread_id "$VDIR/shares.pb.gz" | grep -qE ' [0-9]+$' || fail "no thread_id rows"
	"$PP_PYPROF" top --by line -n 1 "$VDIR/shares.pb.gz" | tee "$T/line"
	grep -qE '  share_fifty  .*/shares\.py:[0-9]+$' "$T/line" || fail "top line is not in share_fifty"
	run "$PP_PYPROF" top --by-label no_such_label "$VDIR/shares.pb.gz"
	assert_eq 1 "$status" "exit status for a missing label"
}

@test "folded stacks round-trip: per stack, the counts equal the profile's sample values" {
	"$PP_PYPROF" convert "$VDIR/shares.pb.gz" --format folded -o "$T/f.folded"
	pprof_raw "$VDIR/shares.pb.gz" >"$T/raw.txt"
	# Go's decoding (-raw) against the folded text: stacks of function
	# names, root first, counts summed; folded frames are "name (file)".
	"$PP_HOST_PYTHON" - "$T/raw.txt" "$T/f.folded" <<'PY'
import collections, re, sys
raw, folded = open(sys.argv[1]).read(), open(sys.argv[2])
locs, samples, sec = {}, [], None
for line in raw.splitlines():
    if line == "Samples:":
        sec = "header"
    elif line == "Locations":
        sec = "locations"
    elif line == "Mappings":
        sec = None
    elif sec == "header":
        sec = "samples"
    elif sec == "samples":
        m = re.match(r"^\s+(-?\d+)\s+(-?\d+): ([\d ]*)$", line)
        if m:
            samples.append((int(m.group(1)), [int(x) for x in m.group(3).split()]))
    elif sec == "locations":
        # "ID: 0xADDR M=N NAME FILE:LINE s=START(SYSTEM_NAME)"; our
        # system name is FILE:co_name, which tells where FILE starts
        # (files may hold spaces: "<frozen importlib._bootstrap>").
        m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) s=-?\d+(?:\((.*)\))?$", line)
        if m:
            mid, sysname = m.group(2), m.group(3)
            if sysname and ":" in sysname:
                f = sysname.rsplit(":", 1)[0]
                name = re.sub(r" %s:-?\d+$" % re.escape(f), "", mid)
            else:
                name = re.sub(r" [^ ]*:-?\d+$", "", mid)
            locs[int(m.group(1))] = name
want = collections.Counter()
for count, ids in samples:
    want[";".join(locs[i] for i in reversed(ids))] += count
got = collections.Counter()
for line in folded:
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    got[";".join(re.sub(r" \([^()]*\)$", "", f) for f in stack.split(";"))] += int(n)
bad = [(k, want[k], got[k]) for k in set(want) | set(got) if want[k] != got[k]]
for k, w, g in sorted(bad)[:10]:
    print("stack %s: profile %d, folded %d" % (k, w, g))
print("%d stacks, %d samples; %d differ" % (len(want), sum(want.values()), len(bad)))
sys.exit(1 if bad or not want else 0)
PY
}

@test "speedscope JSON validates against speedscope's file-format schema and loads in speedscope's importer" {
	local schema=$SPEEDSCOPE/file-format-schema.json
	[[ -f $schema ]] || fail "speedscope's schema missing: $schema (make test-deps installs the npm package)"
	"$PP_PYPROF" convert "$VDIR/shares.pb.gz" --format speedscope -o "$T/s.json"
	# --split's [native] and [system] leaves are frames like any other
	"$PP_PYPROF" convert "$VDIR/shares.pb.gz" --format speedscope --split -o "$T/split.json"
	"$PP_PYPROF" record --format speedscope -o "$T/r.speedscope.json" -- "$VPY" "$PP_TARGETS/calls.py" 0.5 2>"$T/rec.err"
	for f in "$T/s.json" "$T/split.json" "$T/r.speedscope.json"; do
		"$PP_HOST_PYTHON" -c '
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.validate(doc, dict(schema, **{"$ref": "#/definitions/FileFormat.File"}))
assert doc["profiles"] and all(p["type"] == "sampled" for p in doc["profiles"])
for p in doc["profiles"]:
    assert len(p["samples"]) == len(p["weights"]) > 0
    assert all(0 <= i < len(doc["shared"]["frames"]) for s in p["samples"] for i in s)
print("valid:", sys.argv[2], len(doc["profiles"]), "profiles")
' "$schema" "$f" || fail "$f does not validate"
	done
	timeout 120 "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/speedscope_load.py" "$SPEEDSCOPE" "$T/r.speedscope.json" \
		--screenshot "$ARTIFACTS/speedscope.png" | tee "$T/ss.out" || fail "speedscope's importer did not load it"
	grep -q 'pid [0-9]* thread [0-9]*' "$T/ss.out" || fail "speedscope does not show our thread profile"
}

@test "speedscope from a timeline keeps each thread's samples in time order" {
	local t=$T/ph.speedscope.json
	"$PP_PYPROF" record --format speedscope -o "$t" -- "$VPY" "$PP_TARGETS/phases.py" 0.4 0.8 >/dev/null 2>"$T/rec.err" ||
		fail "record: $(cat "$T/rec.err")"
	# phases.py runs early() then late(): in the main thread's lane every
	# sample in early comes before every sample in late.
	"$PP_HOST_PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
lane = max(d["profiles"], key=lambda p: len(p["samples"]))
seq = []
for s in lane["samples"]:
    fs = [names[i] for i in s]
    seq.append("E" if "early" in fs else "L" if "late" in fs else "-")
text = "".join(c for c in seq if c != "-")
print(lane["name"], "".join(seq))
assert text.count("E") >= 10 and text.count("L") >= 20, "too few samples"
assert text.rstrip("L") == "E" * text.count("E"), "early and late interleave"
assert abs(sum(lane["weights"]) - lane["endValue"]) < 1
' "$t" || fail "samples are not in time order"
}

# gecko_check.py's summary of $1 (the Firefox Profiler's processed format,
# checked against the published version 70) in $T/gecko.json.
gecko_valid() {
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/gecko_check.py" "$1" >"$T/gecko.json" ||
		fail "$1 is not a valid processed profile"
}

@test "convert --format gecko writes the Firefox Profiler's processed format, version 70: valid, thread names and times right" {
	local before after
	collector_start --output "$T/m.pb.gz" --timeline "$T/tl"
	before=$(date +%s%3N)
	profiled "$VPY" "$PP_TARGETS/phases.py" 0.4 0.8 >/dev/null 2>"$T/app.err" ||
		fail "phases.py: $(cat "$T/app.err")"
	after=$(date +%s%3N)
	collector_stop
	"$PP_PYPROF" convert "$T/m.pb.gz" --timeline "$T/tl" --format gecko -o "$T/g.json"
	gecko_valid "$T/g.json"
	# The validator itself refuses what breaks the format: a column one
	# short, two times swapped, a stack index out of range.
	"$PP_HOST_PYTHON" - "$T/g.json" "$T" <<'PY'
import json, sys
def broken(name, change):
    d = json.load(open(sys.argv[1]))
    change(d)
    json.dump(d, open("%s/%s.json" % (sys.argv[2], name), "w"))
broken("short", lambda d: d["shared"]["frameTable"]["line"].pop())
def swap(d):
    # the second sample after the third (two samples may share a time:
    # a user sample and the system time charged with it)
    t = d["threads"][0]["samples"]["time"]
    t[1] = t[2] + 1
broken("swapped", swap)
broken("range", lambda d: d["threads"][0]["samples"]["stack"].__setitem__(0, 10 ** 6))
PY
	for b in short swapped range; do
		run "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/gecko_check.py" "$T/$b.json"
		assert_eq 1 "$status" "gecko_check.py on the $b file"
	done
	# One thread, Python's own name for it; the run's times: the start
	# within the run, early's samples all before late's, the span about
	# the 1.2 s of CPU the phases took.
	"$PP_HOST_PYTHON" - "$T/gecko.json" "$before" "$after" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
before, after = float(sys.argv[2]), float(sys.argv[3])
assert s["version"] == 70, s["version"]
assert before - 50 <= s["startTime"] <= after, (before, s["startTime"], after)
assert len(s["threads"]) == 1, [t["name"] for t in s["threads"]]
t = s["threads"][0]
assert t["name"] == "MainThread", t["name"]
assert str(t["tid"]) == t["pid"], (t["tid"], t["pid"])
early = [tm for tm, st in zip(t["times"], t["stacks"]) if "early" in st]
late = [tm for tm, st in zip(t["times"], t["stacks"]) if "late" in st]
print(t["name"], t["samples"], "samples,", len(early), "early,", len(late), "late")
assert len(early) >= 10 and len(late) >= 20, "too few samples"
assert max(early) < min(late), "early and late interleave"
span = t["times"][-1] - t["times"][0]
assert 1000 <= span <= after - before, (span, after - before)
# each phase lasts at least its CPU time less a sample; more under load
e, l = max(early) - min(early), max(late) - min(late)
print("early %.0f ms, late %.0f ms" % (e, l))
assert e >= 300 and l >= 650 and e + l <= after - before, "phase lengths"
PY
}

@test "convert --format gecko: Off-CPU markers for a wall-mode thread's sleep; without --timeline one line naming it" {
	collector_start --output "$T/w.pb.gz" --timeline "$T/tl"
	PYPROF_MODE=wall profiled "$VPY" -c '
import time
def busy():
    end = time.time() + 0.3
    while time.time() < end:
        pass
busy(); time.sleep(0.6); busy()' 2>"$T/app.err" || fail "$(cat "$T/app.err")"
	collector_stop
	"$PP_PYPROF" convert "$T/w.pb.gz" --timeline "$T/tl" --format gecko -o "$T/w.json"
	gecko_valid "$T/w.json"
	# The sleep is one Off-CPU interval of about 0.6 s.
	"$PP_HOST_PYTHON" - "$T/w.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = d["shared"]["stringArray"]
m = d["threads"][0]["markers"]
spans = [(e - s) for s, e, n in zip(m["startTime"], m["endTime"], m["name"]) if names[n] == "Off-CPU"]
print("Off-CPU markers (ms):", [round(x) for x in spans])
assert spans and 500 <= max(spans) <= 900, spans
PY
	run "$PP_PYPROF" convert "$T/w.pb.gz" --format gecko
	assert_eq 2 "$status" "gecko without --timeline"
	[[ $output == *"--format gecko needs --timeline FILE"* && $(wc -l <<<"$output") == 1 ]] ||
		fail "not one line naming --timeline: $output"
}

# pstats_vs_top NAME EXE KIND: the pstats file loads in EXE's pstats (the
# module's own command loop, and Stats), sorted by cumulative time it
# names the functions `pyprof top --sort cum` names, with the same times
# within top's rounding, and late's caller is main.
pstats_vs_top() {
	local name=$1 exe=$2 mm
	mm=$("$exe" -c 'import sys; print("%d.%02d" % sys.version_info[:2])')
	if [[ $mm < 3.08 ]]; then
		echo "   $name: pstats before 3.8 is not a target"
		return 0
	fi
	printf 'sort cumulative\nstats 8\nquit\n' | "$exe" -m pstats "$T/p.pstats" >"$T/pstats.$name" 2>&1
	grep -q 'phases.py:[0-9]*(late)' "$T/pstats.$name" || {
		cat "$T/pstats.$name"
		return 1
	}
	"$exe" - "$T/p.pstats" "$T/top.txt" <<'PY'
import pstats, re, sys
st = pstats.Stats(sys.argv[1])
st.sort_stats("cumulative")
unit = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
top = {}
for line in open(sys.argv[2]):
    # function, two spaces, file:line (a frozen module's file has a
    # space: "<frozen importlib._bootstrap>")
    m = re.match(r"\s*\S+\s+\S+%\s+\S+%\s+([0-9.]+)(s|ms|us|ns)\s+\S+%\s+(.*?)  (.+):(\d+)$", line)
    if m:
        top[(m.group(4), int(m.group(5)), m.group(3))] = float(m.group(1)) * unit[m.group(2)]
# phases.py's own four (<module>, main, early, late) at least; the
# start-up's imports only when a sample fell in them
assert len(top) >= 4, "top's table not read"
got = {k: v[3] for k, v in st.stats.items()}
# the first ten of each, by cumulative time: the same functions, the
# same times within top's three digits
for k, want in sorted(top.items(), key=lambda kv: -kv[1])[:10]:
    assert k in got, ("not in pstats", k)
    assert abs(got[k] - want) <= 0.006 * want + 1e-9, (k, got[k], want)
for k in st.fcn_list[:10]:
    if got[k] > 0.01:
        assert abs(top[k] - got[k]) <= 0.006 * got[k] + 1e-9, (k, top[k], got[k])
late = [k for k in got if k[2] == "late"]
assert len(late) == 1, late
callers = st.stats[late[0]][4]
assert [c[2] for c in callers] == ["main"], callers
print("   %d functions, %d as top shows them" % (len(got), len(top)))
PY
}

@test "convert --format pstats loads in python -m pstats and pstats.Stats on every Python 3.8+, cumulative times as pyprof top --sort cum" {
	"$PP_PYPROF" convert "$VDIR/phases.pb.gz" --format pstats -o "$T/p.pstats"
	"$PP_PYPROF" top --sort cum "$VDIR/phases.pb.gz" >"$T/top.txt"
	for_each_python pstats_vs_top
	# a count of samples is a time too: times the profile's period
	run "$PP_PYPROF" convert "$VDIR/phases.pb.gz" --format pstats --sample-type samples -o "$T/c.pstats"
	assert_eq 0 "$status" "samples (a count: times the period)"
}

@test "pyprof record --format svg and --format folded write those formats" {
	"$PP_PYPROF" record --format svg -o "$T/r.svg" -- "$VPY" "$PP_TARGETS/calls.py" 0.3 2>"$T/e1"
	xmllint --noout "$T/r.svg" || fail "not XML"
	grep -q "^pyprof: wrote $T/r.svg (" "$T/e1" || fail "summary line: $(cat "$T/e1")"
	"$PP_PYPROF" record --format folded -o "$T/r.folded" -- "$VPY" "$PP_TARGETS/calls.py" 0.3 2>"$T/e2"
	grep -qE '^<module> \(.*calls\.py\);.* [0-9]+$' "$T/r.folded" || fail "no folded stack from calls.py"
	run "$PP_PYPROF" record --format png -- "$VPY" -c pass
	assert_eq 125 "$status" "exit status for a bad --format"
}

@test "pyprof diff ranks the function that grew and the one that shrank, and draws them red and blue" {
	"$PP_PYPROF" record -o "$T/base.pb.gz" -- "$VPY" "$PP_TARGETS/phases.py" 0.3 0.9 >/dev/null 2>&1
	"$PP_PYPROF" record -o "$T/new.pb.gz" -- "$VPY" "$PP_TARGETS/phases.py" 0.9 0.3 >/dev/null 2>&1
	"$PP_PYPROF" diff -n 2 "$T/base.pb.gz" "$T/new.pb.gz" -o "$T/d.svg" | tee "$T/diff"
	# early: ~25% -> ~75% (+50 points); late: the reverse.
	awk 'NR > 3 && $NF ~ /phases\.py/ { print $(NF-1), $3 }' "$T/diff" | sort >"$T/rows"
	cat "$T/rows"
	awk '$1 == "early" { exit !($2 > 30) }' "$T/rows" || fail "early did not grow by > 30 points"
	awk '$1 == "late" { exit !($2 < -30) }' "$T/rows" || fail "late did not shrink by > 30 points"
	xmllint --noout "$T/d.svg" || fail "diff SVG not well-formed"
	grep -o 'data-n="early"[^>]*><title>[^<]*</title><rect [^>]*fill="rgb([0-9]*,' "$T/d.svg" | grep -q 'fill="rgb(255,' ||
		fail "early is not red"
	grep -o 'data-n="late"[^>]*><title>[^<]*</title><rect [^>]*fill="rgb([0-9]*,[0-9]*,[0-9]*)' "$T/d.svg" | grep -q ',255)$' ||
		fail "late is not blue"
	# every frame is a box that shows on the background (#f4f4f4 to
	# #e6e6f0), unchanged ones too: a profile against
	# itself is all unchanged, grey
	"$PP_PYPROF" diff "$T/new.pb.gz" "$T/new.pb.gz" -o "$T/same.svg" >/dev/null
	local f
	for f in d same; do
		"$PP_HOST_PYTHON" - "$T/$f.svg" <<'PY' || fail "$f.svg: a frame without a visible box"
import re, sys
svg = open(sys.argv[1]).read()
frames = re.findall(r'<g data-p="[^"]*"[^>]*>.*?</g>', svg)
assert frames, "no frame"
for g in frames:
    m = re.search(r'<rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', g)
    assert m, "no box: " + g[:120]
    # a channel at least 29 below the background's palest (244)
    assert min(map(int, m.groups())) <= 215, "invisible fill: " + g[:160]
print(len(frames), "frames, each a visible box")
PY
	done
	grep -c 'fill="rgb(200,200,200)"' "$T/same.svg" >/dev/null || fail "the unchanged frames are not grey"
}

# What got slower: a caller whose subtree grew by about 50 points over ten
# leaves (5 each) ranks first by default, above two functions whose own
# time shrank by 25; --sort flat ranks by self time instead.
@test "pyprof diff ranks by the change of cumulative share by default, by flat share with --sort flat" {
	"$PP_PYPROF" record -o "$T/base.pb.gz" -- "$VPY" "$PP_TARGETS/subtree.py" 0.2 0.5 >/dev/null 2>&1
	"$PP_PYPROF" record -o "$T/new.pb.gz" -- "$VPY" "$PP_TARGETS/subtree.py" 0.8 0.2 >/dev/null 2>&1
	"$PP_PYPROF" diff -n 3 "$T/base.pb.gz" "$T/new.pb.gz" | tee "$T/cum"
	grep -q "by change of cumulative share" "$T/cum" || fail "the header does not say the order"
	# the first row's function (the name is the next-to-last field)
	first=$(awk 'NR == 4 { print $(NF-1) }' "$T/cum")
	assert_eq spread "$first" "first row by cumulative change"
	"$PP_PYPROF" diff -n 3 --sort flat "$T/base.pb.gz" "$T/new.pb.gz" | tee "$T/flat"
	first=$(awk 'NR == 4 { print $(NF-1) }' "$T/flat")
	[[ $first == solo_a || $first == solo_b ]] || fail "first row by flat change: $first"
	run "$PP_PYPROF" diff --sort size "$T/base.pb.gz" "$T/new.pb.gz"
	assert_eq 2 "$status" "exit status for a bad --sort"
	[[ $output == *"--sort accepts flat or cum"* ]] || fail "no reason given: $output"
}

@test "the views refuse what is not a profile (exit 1) and bad usage (exit 2)" {
	echo "not a profile" >"$T/x.pb.gz"
	run "$PP_PYPROF" top "$T/x.pb.gz"
	assert_eq 1 "$status" "top on garbage"
	[[ $output == *"not a pprof profile"* ]] || fail "no reason given: $output"
	run "$PP_PYPROF" flamegraph "$T/missing.pb.gz" -o "$T/o.svg"
	assert_eq 1 "$status" "missing file"
	[[ ! -e $T/o.svg ]] || fail "an output was written anyway"
	run "$PP_PYPROF" top --sort sideways "$VDIR/shares.pb.gz"
	assert_eq 2 "$status" "bad --sort"
	run "$PP_PYPROF" convert "$VDIR/shares.pb.gz"
	assert_eq 2 "$status" "convert without --format"
	run "$PP_PYPROF" top --sample-type wall "$VDIR/shares.pb.gz"
	assert_eq 1 "$status" "a sample type the profile lacks"
	run "$PP_COLLECTOR" --socket "$SOCK" --timeline "$T/tl"
	assert_eq 2 "$status" "--timeline without --output"
	[[ $output == *"--timeline goes with --output"* ]] || fail "no reason: $output"
}

@test "the opcode view of a loop of additions puts the add opcode on top, on every interpreter" {
	check() {
		local exe=$2 mm top
		run_capture rec env PYPROF_OPCODES=1 "$PP_PYPROF" record -o "$T/op.pb.gz" -- "$exe" "$PP_TARGETS/adds.py" 1
		assert_eq 0 "$RC" "record: $(cat "$T/rec.err")"
		"$PP_PYPROF" top --by opcode -n 3 "$T/op.pb.gz" | tee "$T/op.txt"
		top=$(sed -n 4p "$T/op.txt" | awk '{ print $4 }')
		mm=$(python_major_minor "$exe")
		case $mm in
		2.* | 3.[0-9] | 3.10) [[ $top == BINARY_ADD ]] ;;
		*) [[ $top == BINARY_OP* ]] ;;
		esac || fail "Python $mm: top opcode is '$top'"
		sed -n 4p "$T/op.txt" | grep -q 'add_loop (' || fail "add_loop is not where it is hottest"
	}
	for_each_python check
}

@test "pyprof reads Go's own CPU profiles: top agrees with go tool pprof, the flame graph is well-formed" {
	local ours theirs f
	command -v go >/dev/null || fail "go is not installed (make deps)"
	(cd "$T" && cp "$PP_ROOT/tests/lib/goburn.go" . &&
		GOCACHE=$T/gocache GO111MODULE=off GOFLAGS= go build -o goburn goburn.go) ||
		fail "cannot build the Go program"
	"$T/goburn" "$T/go.pb.gz"
	"$PP_PYPROF" top "$T/go.pb.gz" | tee "$T/top"
	pprof_top "$T/go.pb.gz" | tee "$T/gotop"
	for f in main.hot main.main; do
		ours=$(awk -v f="$f" '$6 == f { sub("%", "", $2); sub("%", "", $5); print $2 + 0, $5 + 0 }' "$T/top")
		theirs=$(awk -v f="$f" '$6 == f { sub("%", "", $2); sub("%", "", $5); print $2 + 0, $5 + 0 }' "$T/gotop")
		[[ -n $theirs ]] || continue # not sampled this time
		assert_eq "$theirs" "$ours" "$f flat% and cum%"
	done
	grep -q ' main\.hot ' "$T/top" || fail "main.hot not in pyprof top"
	"$PP_PYPROF" flamegraph "$T/go.pb.gz" -o "$T/go.svg"
	xmllint --noout "$T/go.svg" || fail "not well-formed"
	grep -q 'data-n="main.hot"' "$T/go.svg" || fail "main.hot not drawn"
}

@test "the collector labels each sample with its opcode's name for the client's Python version, and refuses a non-byte" {
	local wc="$PP_HOST_PYTHON $PP_ROOT/tests/lib/wire_client.py" f
	collector_start --log-level info
	# 3.11: 5 is BINARY_OP_ADD_INT (specialized), 122 BINARY_OP; cycled
	# 5, 5, 122 over 300 samples.
	$wc good --socket "$SOCK" --pid 6001 --samples 300 --prefix opclient \
		--opcodes 5,5,122 --pyversion 3.11.7
	$wc good --socket "$SOCK" --pid 6002 --samples 30 --prefix oldclient \
		--opcodes 23 --pyversion 2.7.18
	$wc good --socket "$SOCK" --pid 6003 --samples 30 --prefix newclient \
		--opcodes 5 --pyversion 3.99.1
	$wc good --socket "$SOCK" --pid 6004 --samples 3 --prefix badclient \
		--opcodes 300 --pyversion 3.11.7 || true
	f=$(wait_profile 6001)
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" summary "$f" | tee "$T/sum"
	grep -qx 'label opcode=BINARY_OP_ADD_INT 200' "$T/sum" || fail "no BINARY_OP_ADD_INT x200"
	grep -qx 'label opcode=BINARY_OP 100' "$T/sum" || fail "no BINARY_OP x100"
	"$PP_PYPROF" top --by opcode "$f" | tee "$T/op"
	sed -n 4p "$T/op" | grep -qE '^ +[0-9.]+m?s +66\.67% +200  BINARY_OP_ADD_INT +opclient_' ||
		fail "BINARY_OP_ADD_INT is not first with 66.67%"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" summary "$(wait_profile 6002)" |
		grep -qx 'label opcode=BINARY_ADD 30' || fail "2.7's 23 is not BINARY_ADD"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" summary "$(wait_profile 6003)" |
		grep -qx 'label opcode=opcode_5 30' || fail "an unknown version does not give opcode_5"
	collector_stop
	grep -q 'pid 6004.*opcode is not a byte' "$T/collector.log" ||
		fail "opcode 300 was not refused: $(grep 6004 "$T/collector.log")"
}

# A profile holds the profiled program's own names: a function, a file
# and a label value (as an asyncio task's name) may carry a terminal's
# escape sequences. The text views must show them as visible escapes,
# never send them to the terminal: no control byte but the line ends, no
# C1 (U+009B is a CSI), no bidirectional override. Folded stacks, a data
# format, keep their lines: control bytes become spaces, DEL too.
@test "pyprof top and diff escape what is not printable in function, file and label names" {
	local evil='evil\x1b[2J\x1b]0;pwned\x07\nname\x7f\u009b\u202e'
	"$PP_PYPROF" record -o "$T/evil.pb.gz" -- "$VPY" -c '
import sys, time
import pyprof
EVIL = "'"$evil"'"
src = "def spin(s):\n    end = time.time() + s\n    while time.time() < end:\n        pass\n"
ns = {"time": time}
exec(compile(src, "/tmp/x\x1b[31m\n.py", "exec"), ns)
spin = ns["spin"]
spin.__code__ = spin.__code__.replace(co_name=EVIL, co_qualname=EVIL)
with pyprof.labels(evil=EVIL):
    spin(0.5)
' >/dev/null 2>"$T/rec.err" || { cat "$T/rec.err"; fail "pyprof record failed"; }
	"$PP_PYPROF" top "$T/evil.pb.gz" >"$T/top"
	"$PP_PYPROF" top --by line "$T/evil.pb.gz" >>"$T/top"
	"$PP_PYPROF" top --by-label evil "$T/evil.pb.gz" >>"$T/top"
	"$PP_PYPROF" diff "$T/evil.pb.gz" "$T/evil.pb.gz" >>"$T/top"
	"$PP_PYPROF" convert --format folded "$T/evil.pb.gz" -o "$T/folded"
	cat -v "$T/top"
	"$PP_HOST_PYTHON" - "$T/top" "$T/folded" <<'PY'
import sys
top = open(sys.argv[1], "rb").read()
for name in sys.argv[1:]:
    data = open(name, "rb").read()
    bad = sorted(set(c for c in bytearray(data) if (c < 0x20 and c != 10) or c == 0x7f))
    assert not bad, "%s: control bytes %r" % (name, bad)
    for seq in (b"\xc2\x9b", b"\xe2\x80\xae"):
        # folded is a data format: only its line structure is kept
        assert name != sys.argv[1] or seq not in data, "%s: %r" % (name, seq)
text = top.decode("utf-8")
for want in (u"evil\\x1b[2J\\x1b]0;pwned\\x07\\nname\\x7f\\u009b\\u202e",
             u"/tmp/x\\x1b[31m\\n.py"):
    assert want in text, "no %r in the text views" % want
print("   escaped in top, --by line, --by-label, diff; folded has no control byte")
PY
}

@test "pyprof record --format gecko and pstats write those formats (gecko from the timeline, in time order); --split reaches folded's conversion" {
	"$PP_PYPROF" record --format gecko -o "$T/r.gecko.json" -- "$VPY" "$PP_TARGETS/phases.py" 0.3 0.6 >/dev/null 2>"$T/e1" ||
		fail "record --format gecko: $(cat "$T/e1")"
	gecko_valid "$T/r.gecko.json"
	# phases.py runs early() then late(): the busiest thread's samples
	# have early before late, with times, as the timeline gave them
	"$PP_HOST_PYTHON" - "$T/gecko.json" <<'PY' || fail "gecko: not phases.py's samples in time order"
import json, sys
d = json.loads(open(sys.argv[1]).read())
t = max(d["threads"], key=lambda t: t["samples"])
seq = "".join("E" if "early" in s else "L" if "late" in s else "" for s in t["stacks"])
print(t["name"], t["samples"], "samples", seq[:60])
assert seq.count("E") >= 5 and seq.count("L") >= 10, "too few samples"
assert seq.rstrip("L") == "E" * seq.count("E"), "early and late interleave"
assert t["times"] == sorted(t["times"]) and t["times"][-1] > t["times"][0]
PY
	# pstats, under its default name
	mkdir -p "$T/d"
	(cd "$T/d" && "$PP_PYPROF" record --format pstats -- "$VPY" "$PP_TARGETS/calls.py" 0.3) >/dev/null 2>"$T/e2" ||
		fail "record --format pstats: $(cat "$T/e2")"
	[[ -s $T/d/pyprof.pstats ]] || fail "no pyprof.pstats: $(ls "$T/d")"
	"$VPY" - "$T/d/pyprof.pstats" <<'PY' || fail "pstats.Stats cannot read it"
import pstats, sys
st = pstats.Stats(sys.argv[1])
names = set(k[2] for k in st.stats)
print(sorted(n for n in names if n in ("inner", "middle", "outer")))
assert {"inner", "middle", "outer"} <= names, names
assert st.total_tt > 0
PY
	# --split: a native leaf in folded stacks of a program with C time
	"$PP_PYPROF" record --split --format folded -o "$T/s.folded" -- "$VPY" "$PP_TARGETS/split.py" 1 "$T/s.dat" >/dev/null 2>"$T/e3" ||
		fail "record --split: $(cat "$T/e3")"
	grep -qE ';\[native\] [0-9]+$' "$T/s.folded" || fail "no [native] leaf: $(head -5 "$T/s.folded")"
	"$PP_PYPROF" record --format folded -o "$T/n.folded" -- "$VPY" "$PP_TARGETS/split.py" 1 "$T/n.dat" >/dev/null 2>&1
	! grep -q '\[native\]' "$T/n.folded" || fail "[native] leaves without --split"
	run_capture bad "$PP_PYPROF" record --split -- "$VPY" -c pass
	assert_eq 125 "$RC" "record --split without a format"
	grep -q -- '--split goes with --format folded or speedscope' "$T/bad.err" || fail "$(cat "$T/bad.err")"
	run_capture bad "$PP_PYPROF" record --split --format gecko -- "$VPY" -c pass
	assert_eq 125 "$RC" "record --split --format gecko"
}
