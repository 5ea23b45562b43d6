#!/usr/bin/env bats
# badenv.bats - a bad PYPROF_* value costs one clear line and nothing else:
# exactly one extra line on stderr, naming the variable (and what it
# accepts); the program's own output and exit status unchanged; profiling
# off. Every interpreter in tests/lib/pythons.sh.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
}

teardown() {
	common_teardown
}

# one_line_check NAME EXE KIND VAR VALUE: with VAR=VALUE, stderr gains
# exactly one line, which names VAR; stdout and status are unchanged.
one_line_check() {
	local exe=$2 var=$4 value=$5 rc_without added removed
	run_capture plain "$exe" "$PP_TARGETS/outputs.py" exit3 0.05
	rc_without=$RC
	run_capture with env "$var=$value" LD_PRELOAD="$PP_LIB" \
		PYPROF_SOCKET="$SOCK" "$exe" "$PP_TARGETS/outputs.py" exit3 0.05
	cat "$T/with.err"
	assert_same_file "$T/plain.out" "$T/with.out" "stdout"
	assert_eq "$rc_without" "$RC" "exit status"
	diff "$T/plain.err" "$T/with.err" >"$T/diff" || true
	added=$(grep -c '^>' "$T/diff" || true)
	removed=$(grep -c '^<' "$T/diff" || true)
	assert_eq 0 "$removed" "lines of the program's stderr lost"
	assert_eq 1 "$added" "lines added to stderr"
	grep '^>' "$T/diff" | grep -q "$var" ||
		fail "the added line does not name $var: $(grep '^>' "$T/diff")"
}

@test "PYPROF_HZ=abc: one line naming PYPROF_HZ, the program unchanged" {
	for_each_python one_line_check PYPROF_HZ abc
}

@test "PYPROF_HZ=0: one line naming PYPROF_HZ, the program unchanged" {
	for_each_python one_line_check PYPROF_HZ 0
}

@test "PYPROF_MODE=bogus: one line naming PYPROF_MODE, the program unchanged" {
	for_each_python one_line_check PYPROF_MODE bogus
}

@test "PYPROF_MAX_DEPTH=-1: one line naming PYPROF_MAX_DEPTH, the program unchanged" {
	for_each_python one_line_check PYPROF_MAX_DEPTH -1
}

@test "PYPROF_LOG=loud: one line naming PYPROF_LOG, the program unchanged" {
	for_each_python one_line_check PYPROF_LOG loud
}

@test "a bad PYPROF_HZ leaves profiling off" {
	collector_start
	check() {
		run_capture with env PYPROF_HZ=abc LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" "$2" "$PP_TARGETS/outputs.py" ok 0.5
		assert_eq 0 "$RC" "exit status"
		! ls "$OUT"/*."$PID".*.pb.gz 2>/dev/null ||
			fail "a profile was written for pid $PID"
	}
	for_each_python check
	# The collector writes what any connection sent when it stops.
	collector_stop
	[[ -z $(ls "$OUT") ]] || fail "profiles written: $(ls "$OUT")"
}
