#!/usr/bin/env bats
# regrtest_matrix.bats - CPython's own tests of what a profiler living in
# the process can disturb: test_threading, test_subprocess,
# test_faulthandler, test_os, test_signal and test_sys on 3.11, 3.14 and
# 3.15, at the default 100 Hz (CPU timers) and at 1 kHz (the CPU-clock
# sampler thread) with heap profiling (PYPROF_HEAP_RATE=512KiB, as
# pyprof record --heap): every test's outcome the same as without the
# library, except test_sys.test_debugmallocstats with heap profiling
# (docs/limitations.md). The rule (what is a difference, what is the
# interpreter's own flakiness) is tests/lib/regrtest_compare.py's.
#
# In make check. These modules mostly sleep and wait for their child
# processes: one configuration takes about 105 s of wall time but 35 s of
# CPU (user and system, the plain and the preloaded run together, 2
# processes at a time). So each test runs as a process of its own beside
# the lanes, but only once the files that time things (threads.bats'
# thirds and oversleeps, systime.bats' truth) have ended: tests/run's
# "lane: tail" (docs/testing.md).
#
# tests/run: lane: tail
# Reports and logs of each run stay in the test's temporary directory
# (the path is printed) for a look at a failure.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# regrtest_matrix VERSION 100|heap: the six modules (header).
regrtest_matrix() {
	local want=$1 cfg=$2 name exe kind sub sys opts
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$want pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $want (tests/lib/pythons.sh; make test-deps fetches 3.14 and 3.15)"
		return 1
	fi
	echo "== $name $exe, $cfg; work files in $T/work"
	sub=test_subprocess:ProcessTestCaseNoPoll:test_leaking_fds_on_error
	case $want in
	3.1[4-9]) sub=$sub:test_vfork_used_when_expected ;;
	esac
	sys=test_sys
	opts=(--hz 100)
	if [[ $cfg == heap ]]; then
		sys=test_sys:test_debugmallocstats
		opts=(--hz 1000 --env PYPROF_HEAP_RATE=512KiB)
	fi
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_compare.py" \
		--python "$exe" --lib "$PP_LIB" --socket "$SOCK" \
		--profiles "$OUT" --work "$T/work" --jobs 2 "${opts[@]}" \
		test_threading "$sub" test_faulthandler test_os test_signal "$sys"
}

@test "CPython 3.11's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 100 Hz" {
	regrtest_matrix 3.11 100
}

@test "CPython 3.11's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 1 kHz with heap profiling" {
	regrtest_matrix 3.11 heap
}

@test "CPython 3.14's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 100 Hz" {
	regrtest_matrix 3.14 100
}

@test "CPython 3.14's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 1 kHz with heap profiling" {
	regrtest_matrix 3.14 heap
}

@test "CPython 3.15's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 100 Hz" {
	regrtest_matrix 3.15 100
}

@test "CPython 3.15's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 1 kHz with heap profiling" {
	regrtest_matrix 3.15 heap
}
