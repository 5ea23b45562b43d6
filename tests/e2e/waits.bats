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
#       carry its labels (tests/targets/waits_async.py). Pushed windows
#       and their labels: push.bats.

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
