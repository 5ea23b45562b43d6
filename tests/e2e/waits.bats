#!/usr/bin/env bats
# waits.bats - block and mutex profiles (PYPROF_WAITS, pyprof record
# --waits): where threads waited for a lock or the GIL, and whose code held
# it meanwhile.
#
# Profiles are read by the real `go tool pprof -raw` and checked by
# tests/lib/waits_check.py against the truth each target computes from its
# own time.perf_counter() log (see its header for each check):
#   1.x two holders of different lengths and two waiters on one lock
#       (tests/targets/waits_locks.py): block shares per waiting function
#       within 3 points, the total within 15%, mutex shares per holding
#       function within 5 points of the overlap truth; a thread sleeping
#       1 ms at a time beside a pure-Python loop
#       (tests/targets/waits_gil.py, turns alone and beside it, switch
#       interval 10 ms): its waits for the GIL within 20% of
#       its oversleep (less the one it has alone), at least 90% of that
#       charged to the loop; every interpreter from 3.8.
#   2.x the rest: no files without --waits, output and status unchanged,
#       older interpreters refused with one line, bad values, a
#       collector's per-process files; labels: an asyncio task's waits
#       carry its labels (tests/targets/waits_async.py); pyprof top,
#       flamegraph, convert and diff on them (totals against go tool
#       pprof -raw); a collector's files beside every window, per process
#       and merged. Pushed windows and their labels: push.bats.
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

setup() {
	common_setup
	CHECK="$PP_HOST_PYTHON $PP_ROOT/tests/lib/waits_check.py"
	LOCKS=$PP_TARGETS/waits_locks.py
	GIL=$PP_TARGETS/waits_gil.py
}

teardown() {
	common_teardown
}

# 1 if EXE is 3.8 or later.
has_waits() {
	"$1" -c 'import sys; sys.exit(sys.version_info < (3, 8))'
}

@test "1.1 lock waits and holds: block and mutex shares per function as the program measured them (every interpreter from 3.8)" {
	check() {
		local name=$1 exe=$2
		has_waits "$exe" || { echo "   (before 3.8: 2.1)"; return 0; }
		run_capture rec "$PP_PYPROF" record --waits -o "$T/l.pb.gz" -- \
			"$exe" "$LOCKS" 0.6
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status under pyprof record --waits"
		grep -q 'block profile' "$T/rec.err" || fail "the block profile is not named"
		grep -q 'mutex profile' "$T/rec.err" || fail "the mutex profile is not named"
		# the summary line counts the CPU profile's samples, not the
		# waits (which once were added in)
		local said dropped had
		said=$(sed -n 's/.*l\.pb\.gz (\([0-9]*\) samples\{0,1\}, .* \([0-9]*\) dropped).*/\1 \2/p' "$T/rec.err")
		[[ -n $said ]] || fail "no summary line"
		read -r said dropped <<<"$said"
		had=$(shares count "$T/l.pb.gz" | awk '$1 == "*" { print $2 }')
		((had >= said && had <= said + dropped)) ||
			fail "the summary says $said samples ($dropped dropped), the CPU profile holds $had"
		tail -1 "$T/rec.out" >"$T/truth.json"
		$CHECK locks "$T/l.block.pb.gz" "$T/l.mutex.pb.gz" "$T/truth.json"
	}
	for_each_python check
}

@test "1.2 GIL waits: a sleeping thread's waits as its oversleep says, charged to the loop that held the GIL (every interpreter from 3.8)" {
	check() {
		local name=$1 exe=$2
		has_waits "$exe" || { echo "   (before 3.8: 2.1)"; return 0; }
		run_capture rec "$PP_PYPROF" record --waits -o "$T/g.pb.gz" -- \
			"$exe" "$GIL" 40
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status under pyprof record --waits"
		tail -1 "$T/rec.out" >"$T/truth.json"
		$CHECK gil "$T/g.block.pb.gz" "$T/g.mutex.pb.gz" "$T/truth.json"
		# and the stacks end in [GIL] as go tool pprof shows them
		go tool pprof -top -sample_index=delay "$T/g.block.pb.gz" \
			2>/dev/null | grep -q ' \[GIL\]$' ||
			fail "no [GIL] frame in go tool pprof -top"
	}
	for_each_python check
}

@test "2.1 before 3.8: one line, and the CPU profile as without --waits" {
	local name exe kind found=0
	while read -r name exe kind; do
		[[ $kind == missing ]] && continue
		has_waits "$exe" && continue
		found=1
		run_capture old "$PP_PYPROF" record --waits -o "$T/o.pb.gz" -- \
			"$exe" -c 'print("ran")'
		assert_eq 0 "$RC" "$name: exit status"
		grep -qx ran "$T/old.out" || fail "$name: the program did not run"
		assert_eq 1 "$(grep -c 'PYPROF_WAITS' "$T/old.err")" \
			"$name: lines about PYPROF_WAITS"
		grep -q 'need Python 3.8 or later' "$T/old.err" ||
			fail "$name: $(cat "$T/old.err")"
		[[ -s $T/o.pb.gz && ! -e $T/o.block.pb.gz ]] ||
			fail "$name: $(ls "$T")"
	done < <(pyprof_pythons)
	((found)) || skip "no interpreter before 3.8 selected"
}

@test "2.2 without --waits no block or mutex profile; with it the program's output and status are unchanged" {
	local prog='import threading, sys
l = threading.Lock()
def f():
    for _ in range(200):
        with l:
            pass
ts = [threading.Thread(target=f) for _ in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
print("done"); sys.exit(3)'
	run_capture plain "$PP_HOST_PYTHON" -c "$prog"
	assert_eq 3 "$RC" "exit status without pyprof"
	run_capture off "$PP_PYPROF" record -o "$T/off.pb.gz" -- \
		"$PP_HOST_PYTHON" -c "$prog"
	assert_eq 3 "$RC" "exit status under pyprof record"
	[[ -s $T/off.pb.gz && ! -e $T/off.block.pb.gz && ! -e $T/off.mutex.pb.gz ]] ||
		fail "files without --waits: $(ls "$T")"
	run_capture on "$PP_PYPROF" record --waits=1us -o "$T/on.pb.gz" -- \
		"$PP_HOST_PYTHON" -c "$prog"
	assert_eq 3 "$RC" "exit status under pyprof record --waits"
	assert_same_file "$T/plain.out" "$T/on.out" "the program's output"
}

@test "2.3 a bad PYPROF_WAITS: one line naming it, the program runs; record --waits refuses it before starting" {
	local v
	for v in PYPROF_WAITS=maybe PYPROF_WAITS=10 PYPROF_WAITS=2s PYPROF_WAITS=0us; do
		run_capture bad env "$v" LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" "$PP_HOST_PYTHON" -c 'print("ran")'
		assert_eq 0 "$RC" "exit status with $v"
		grep -qx ran "$T/bad.out" || fail "$v: the program did not run"
		assert_eq 1 "$(wc -l <"$T/bad.err")" "stderr lines with $v"
		grep -q "^pyprof.*${v%%=*}=" "$T/bad.err" ||
			fail "$v: the line does not name the variable: $(cat "$T/bad.err")"
	done
	run_capture rec "$PP_PYPROF" record --waits=5 -o "$T/b.pb.gz" -- \
		"$PP_HOST_PYTHON" -c 'print("ran")'
	assert_eq 125 "$RC" "pyprof record's exit status"
	grep -q 'PYPROF_WAITS' "$T/rec.err" || fail "$(cat "$T/rec.err")"
	[[ ! -s $T/rec.out ]] || fail "the command ran"
}

@test "2.4 a collector writes each process's block and mutex profiles beside its CPU profile" {
	collector_start
	run_capture p env PYPROF_WAITS=1 profiled "$PP_HOST_PYTHON" "$LOCKS" 0.3
	assert_eq 0 "$RC" "exit status"
	f=$(wait_profile "$PID")
	f=${f%.block.pb.gz}
	f=${f%.mutex.pb.gz}
	f=${f%.pb.gz}
	for ((i = 0; i < 100; i++)); do
		[[ -f $f.block.pb.gz && -f $f.mutex.pb.gz ]] && break
		sleep 0.05
	done
	[[ -f $f.block.pb.gz && -f $f.mutex.pb.gz ]] ||
		fail "not $f.{block,mutex}.pb.gz: $(ls "$OUT")"
	tail -1 "$T/p.out" >"$T/truth.json"
	$CHECK locks "$f.block.pb.gz" "$f.mutex.pb.gz" "$T/truth.json"
	# pyprof's own views read them too
	"$PP_PYPROF" top "$f.mutex.pb.gz" >"$T/top" 2>&1
	grep -q '^Type: delay' "$T/top" || fail "pyprof top: $(head -3 "$T/top")"
}

@test "2.5 an asyncio task that blocks on a lock: its waits carry the task's labels, each endpoint's as long as the task measured (3.11, 3.14)" {
	check() {
		local exe=$2
		run_capture rec env PYTHONPATH="$PP_ROOT/preload/module" \
			"$PP_PYPROF" record --waits -o "$T/a.pb.gz" -- \
			"$exe" "$PP_TARGETS/waits_async.py"
		assert_eq 0 "$RC" "exit status under pyprof record --waits"
		tail -1 "$T/rec.out" >"$T/truth.json"
		$CHECK async "$T/a.block.pb.gz" "$T/truth.json"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.14) for_each_python check
}

# raw_totals PROFILE: "CONTENTIONS DELAY", the sums of a block or mutex
# profile's two values as the real go tool pprof -raw reads them.
raw_totals() {
	"$PP_HOST_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import pprof_raw
types, samples, _, _ = pprof_raw.parse(pprof_raw.decode(sys.argv[2]))
print(sum(s["count"] for s in samples), sum(s["value"] for s in samples))
' "$PP_ROOT/tests/lib" "$1"
}

# folded_sum FILE: the sum of the last fields of a folded file.
folded_sum() {
	awk '{ s += $NF } END { printf "%d\n", s }' "$1"
}

@test "2.6 top, flamegraph, convert and diff read block and mutex profiles: delay by default, shown as time, contentions on request" {
	run_capture rec "$PP_PYPROF" record --waits -o "$T/v.pb.gz" -- \
		"$PP_HOST_PYTHON" "$LOCKS" 0.4
	assert_eq 0 "$RC" "exit status under pyprof record --waits"
	local kind n d
	for kind in block mutex; do
		local f=$T/v.$kind.pb.gz
		read -r n d < <(raw_totals "$f")
		((n > 0 && d > 0)) || fail "$kind: go tool pprof reads $n contentions, $d ns"
		# the type go tool pprof shows by default, in a unit of time
		go tool pprof -top "$f" 2>/dev/null | grep -m1 '^Type:' >"$T/go.type"
		assert_eq "Type: delay" "$(cat "$T/go.type")" "$kind: go tool pprof's type"
		"$PP_PYPROF" top -n 40 "$f" >"$T/top" || fail "$kind: pyprof top failed"
		head -1 "$T/top" | grep -Eq '^Type: delay \(nanoseconds\), total [0-9.]+(ms|s)$' ||
			fail "$kind: pyprof top: $(head -1 "$T/top")"
		# a row's values are times: run's flat value, where the lock is
		# taken, ends in ms or s
		grep -Eq '^ +[0-9.]+(ms|s) .* run  .*waits_locks\.py' "$T/top" ||
			fail "$kind: no run row with a time: $(cat "$T/top")"
		"$PP_PYPROF" top --sample-type contentions "$f" >"$T/topc"
		head -1 "$T/topc" | grep -q "^Type: contentions (count), total $n\$" ||
			fail "$kind: top --sample-type contentions: $(head -1 "$T/topc"), go tool pprof: $n"
		# folded: the default type's values, every one of them
		"$PP_PYPROF" convert "$f" --format folded -o "$T/f.txt"
		assert_eq "$d" "$(folded_sum "$T/f.txt")" "$kind: folded delay"
		"$PP_PYPROF" convert "$f" --format folded --sample_index contentions \
			-o "$T/fc.txt"
		assert_eq "$n" "$(folded_sum "$T/fc.txt")" "$kind: folded contentions"
		# speedscope: in nanoseconds, the same total
		"$PP_PYPROF" convert "$f" --format speedscope -o "$T/s.json"
		"$PP_HOST_PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
units = {p["unit"] for p in d["profiles"]}
total = sum(sum(p["weights"]) for p in d["profiles"])
assert units == {"nanoseconds"}, units
assert total == int(sys.argv[2]), (total, sys.argv[2])
' "$T/s.json" "$d" || fail "$kind: speedscope"
		# the flame graph's root: the total as a time
		"$PP_PYPROF" flamegraph "$f" -o "$T/f.svg"
		grep -Eq '<title>all&#10;[0-9.]+(ms|s), 100.00% of the total</title>' "$T/f.svg" ||
			fail "$kind: flame graph root: $(grep -m1 -o '<title>all[^<]*' "$T/f.svg")"
		grep -q '<title>wait_a ' "$T/f.svg" || fail "$kind: no wait_a in the flame graph"
	done
	# diff compares time waited, not shares: the block profile against
	# the mutex profile of the same run (the same lock's waits, seen
	# from the holders): the totals' change is their difference
	read -r _ d < <(raw_totals "$T/v.block.pb.gz")
	read -r _ n < <(raw_totals "$T/v.mutex.pb.gz")
	"$PP_PYPROF" diff "$T/v.block.pb.gz" "$T/v.mutex.pb.gz" -o "$T/d.svg" >"$T/diff"
	head -2 "$T/diff"
	grep -q 'by change of cumulative value (nanoseconds' "$T/diff" ||
		fail "diff does not compare values: $(head -2 "$T/diff")"
	[[ -s $T/d.svg ]] || fail "no differential flame graph"
	"$PP_PYPROF" diff --shares "$T/v.block.pb.gz" "$T/v.mutex.pb.gz" >"$T/diffs"
	grep -q 'by change of cumulative share' "$T/diffs" || fail "diff --shares: $(head -2 "$T/diffs")"
}

# run_pair: waits_locks.py for 2.2 s under 3.11 and 3.14 at once, with
# PYPROF_WAITS=1, reporting to the running collector; their pids in PA, PB.
run_pair() {
	local a b
	a=$(PYPROF_TEST_PYTHONS=3.11 pyprof_pythons | awk '$3 != "missing" {print $2}')
	b=$(PYPROF_TEST_PYTHONS=3.14 pyprof_pythons | awk '$3 != "missing" {print $2}')
	[[ -n $a && -n $b ]] || fail "3.11 or 3.14 missing"
	PYPROF_WAITS=1 profiled "$a" "$LOCKS" 2.2 >"$T/a.out" 2>"$T/a.err" </dev/null 3>&- &
	PA=$!
	PYPROF_WAITS=1 profiled "$b" "$LOCKS" 2.2 >"$T/b.out" 2>"$T/b.err" </dev/null 3>&- &
	PB=$!
	wait "$PA" || fail "3.11: exit status $?"
	wait "$PB" || fail "3.14: exit status $?"
}

# windows_with_waits PATTERN: how many CPU profiles $OUT/PATTERN have
# block and mutex profiles beside them, each read by pyprof top as delay
# with the waiting function wait_a in it.
windows_with_waits() {
	local f kind n=0
	for f in "$OUT"/$1; do
		case $f in *.block.pb.gz | *.mutex.pb.gz | *.heap.pb.gz) continue ;; esac
		# a window in which no lock was taken (the last moments) has none
		[[ -f ${f%.pb.gz}.block.pb.gz ]] || continue
		[[ -f ${f%.pb.gz}.mutex.pb.gz ]] || fail "a block profile without its mutex profile: $f"
		n=$((n + 1))
		for kind in block mutex; do
			"$PP_PYPROF" top -n 60 "${f%.pb.gz}.$kind.pb.gz" >"$T/top"
			head -1 "$T/top" | grep -q '^Type: delay' ||
				fail "$f $kind: $(head -1 "$T/top")"
			grep -q ' wait_a  ' "$T/top" || fail "$f $kind: no wait_a: $(cat "$T/top")"
		done
	done
	echo "$n"
}

@test "2.7 a collector writes block and mutex profiles beside every window's profile, per process and merged (3.11 and 3.14 at once)" {
	local pid n f
	collector_start --period 1
	run_pair
	wait_profile "$PA" >/dev/null
	wait_profile "$PB" >/dev/null
	collector_stop
	ls "$OUT"
	for pid in "$PA" "$PB"; do
		n=$(windows_with_waits "*.$pid.*.pb.gz")
		echo "pid $pid: $n windows with block and mutex profiles"
		# 2.2 s in windows of 1 s: at least two windows with waits
		((n >= 2)) || fail "pid $pid: $n windows with block and mutex profiles"
	done
	OUT=$T/merged
	mkdir -p "$OUT"
	collector_start --period 1 --merge
	run_pair
	collector_stop
	ls "$OUT"
	n=$(windows_with_waits "merged.*.pb.gz")
	echo "merged: $n windows with block and mutex profiles"
	((n >= 2)) || fail "merged: $n windows with block and mutex profiles"
	# a merged window's block profile has both processes' waits
	for f in "$OUT"/merged.*.block.pb.gz; do
		"$PP_PYPROF" top --by-label pid "$f" >"$T/bypid"
		if grep -q " $PA\$" "$T/bypid" && grep -q " $PB\$" "$T/bypid"; then
			return 0
		fi
	done
	fail "no merged block profile with both processes: $(cat "$T/bypid")"
}

@test "2.8 record --waits with no lock waited for: the empty mutex profile is written all the same, go tool pprof reads it, and the line says 0 waits" {
	# One thread: nothing holds a lock another waits for (pyprof's own
	# threads are not counted), so the mutex profile has no sample; its
	# GIL waits at start-up may or may not put some in the block profile.
	run_capture rec "$PP_PYPROF" record --waits -o "$T/n.pb.gz" -- \
		"$PP_HOST_PYTHON" -c 'x = sum(range(10**6))'
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status under pyprof record --waits"
	local kind said totals
	for kind in block mutex; do
		[[ -s $T/n.$kind.pb.gz ]] || fail "no n.$kind.pb.gz: $(ls "$T")"
		said=$(sed -n "s/.*\\/n\\.$kind\\.pb\\.gz ($kind profile, \\([0-9]*\\) waits\\{0,1\\}.*/\\1/p" "$T/rec.err")
		[[ -n $said ]] || fail "no line counts the $kind profile's waits"
		totals=$(raw_totals "$T/n.$kind.pb.gz") || fail "go tool pprof cannot read n.$kind.pb.gz"
		assert_eq "$said" "${totals%% *}" "the $kind profile's contentions against the line"
		go tool pprof -raw "$T/n.$kind.pb.gz" 2>&1 | grep -q '^PeriodType: contentions count' ||
			fail "n.$kind.pb.gz: not a contentions profile"
	done
	grep -q '/n\.mutex\.pb\.gz (mutex profile, 0 waits: no thread held a lock another waited for)' "$T/rec.err" ||
		fail "the mutex profile of one thread is not said to be empty"
}

@test "2.9 threads that wait right at their start, just before a window ends: every sample of theirs, in every window's file, carries its thread's name (3.11, 3.14)" {
	# tests/targets/early_names.py: 3 rounds of 4 threads named
	# early-R-I, started 40 ms before a second ends (a window of
	# --period 1), each waiting 5 ms for a lock and then silent until
	# past that second. Their first samples reach the collector before
	# the library's names thread has looked at them; the window is cut
	# before any later sample of theirs.
	check() {
		local name=$1 exe=$2 f
		rm -rf "$OUT"
		mkdir -p "$OUT"
		collector_start --period 1
		run_capture e env PYPROF_WAITS=1 profiled "$exe" \
			"$PP_TARGETS/early_names.py"
		assert_eq 0 "$RC" "exit status"
		wait_profile "$PID" >/dev/null
		collector_stop
		: >"$T/threads"
		for f in "$OUT"/*."$PID".*.pb.gz; do
			"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" threads "$f" \
				>"$T/one" || fail "go tool pprof cannot read $f"
			sed "s|^|$(basename "$f") |" "$T/one" >>"$T/threads"
		done
		# no sample of any kind (file thread ID NAME COUNT STACK) has a thread_id without its name
		if awk '$2 == "thread" && $3 != "-" && $4 == "-"' "$T/threads" | grep .; then
			fail "samples above carry a thread_id but no thread_name"
		fi
		# and every early thread's lock wait is in some block profile, named
		local r i
		for r in 0 1 2; do
			for i in 0 1 2 3; do
				grep -q "\\.block\\.pb\\.gz thread [0-9]* early-$r-$i [0-9]* .*;early_wait\$" "$T/threads" ||
					fail "no block sample of early-$r-$i in early_wait: $(grep -c . "$T/threads") samples"
			done
		done
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.14) for_each_python check
}
