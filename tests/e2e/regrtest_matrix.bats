#!/usr/bin/env bats
# regrtest_matrix.bats - CPython's own tests of what a profiler living in
# the process can disturb (issue 27: test_threading, test_subprocess,
# test_faulthandler, test_os, test_signal, test_sys on 3.11, 3.14 and
# 3.15) and of threads' waits (issue 33: test_threading, test_queue,
# test_concurrent_futures on 3.11 and 3.14): every test's outcome the same
# as without the library. The rule (what is a difference, what is the
# interpreter's own flakiness) is tests/lib/regrtest_compare.py's.
#
# One plain run of each module serves every configuration it is compared
# with (regrtest_compare.py --variant), each a preloaded run beside it:
#   100hz  the default: 100 Hz (the CPU-clock sampler thread);
#   all    everything on: 1 kHz (the CPU-clock sampler thread), heap
#          profiling (PYPROF_HEAP_RATE=512KiB, as pyprof record --heap)
#          and waits (PYPROF_WAITS=1, as record --waits: every wait of
#          every thread timed, the GIL's too);
#   waits  record --waits alone (100 Hz), for test_queue and
#          test_concurrent_futures.
# test_sys.test_debugmallocstats is left out (heap profiling changes what
# it prints: docs/limitations.md), and so are two tests that differ
# without the library here (test_subprocess's test_leaking_fds_on_error,
# 3.14+'s test_vfork_used_when_expected).
#
# In make check. These modules mostly sleep and wait for their child
# processes (a module's three runs take about a third of a CPU together),
# so each test runs as a process of its own beside the lanes, once the
# files that time things (threads.bats' thirds and oversleeps,
# systime.bats' truth) have ended: tests/run's "lane: tail"
# (docs/testing.md).
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

# regrtest VERSION MODULE...: regrtest_compare.py with the three variants
# (header); a test is a HANG past 90 s (test_concurrent_futures'
# test_hang_global_shutdown_lock, 50 process pools forked beside a thread
# that submits without end, takes 15 to 19 s plainly on a quiet machine
# and 15 to 38 s beside make check).
regrtest() {
	local want=$1 name exe kind
	shift
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$want pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $want (tests/lib/pythons.sh; make test-deps fetches 3.14 and 3.15)"
		return 1
	fi
	echo "== $name $exe; work files in $T/work-$want"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_compare.py" \
		--python "$exe" --lib "$PP_LIB" --socket "$SOCK" \
		--profiles "$OUT" --work "$T/work-$want" --jobs 3 --test-timeout 90 \
		--variant 100hz=100 \
		--variant all=1000,PYPROF_HEAP_RATE=512KiB,PYPROF_WAITS=1 \
		--variant waits=100,PYPROF_WAITS=1 "$@"
}

# the six modules of issue 27, at 100 Hz and with everything on
six() {
	local sub=test_subprocess@100hz,all:ProcessTestCaseNoPoll:test_leaking_fds_on_error
	case $1 in
	3.1[4-9]) sub=$sub:test_vfork_used_when_expected ;;
	esac
	echo test_threading@100hz,all "$sub" test_faulthandler@100hz,all \
		test_os@100hz,all test_signal@100hz,all \
		test_sys@100hz,all:test_debugmallocstats
}

# Every process with waits on left block and mutex profiles beside its
# CPU profile (at least one per module run with waits: every module
# process waits, its main thread joins at least once): the waits were
# really being recorded.
waits_recorded() {
	local want=$1 f n=0 blocks=0
	for f in "$OUT"/*.pb.gz; do
		case $f in *.block.pb.gz | *.mutex.pb.gz | *.heap.pb.gz) continue ;; esac
		n=$((n + 1))
		[[ -s ${f%.pb.gz}.block.pb.gz && -s ${f%.pb.gz}.mutex.pb.gz ]] &&
			blocks=$((blocks + 1))
	done
	echo "   $blocks of $n preloaded processes' profiles have block and mutex profiles beside them"
	((blocks >= want)) || fail "block and mutex profiles beside $blocks profiles only (want $want): $(ls "$OUT")"
}

@test "CPython 3.11's threading, subprocess, faulthandler, os, signal, sys and queue tests give the same results with the library at 100 Hz, with everything on (1 kHz, heap, waits), and queue's with waits" {
	# shellcheck disable=SC2046
	regrtest 3.11 $(six 3.11) test_queue@waits
	waits_recorded 7
}

# pyenv's 3.11.7 installs no test_concurrent_futures: that module runs on
# Debian's python3, a 3.11 too, from its own test package
# (libpython3.11-testsuite, make test-deps), without its forkserver
# tests: there the forkserver's children run this harness's command line,
# which they cannot parse (every such test is an ERROR plainly, and one
# run in three a HANG, with or without the library).
@test "CPython 3.11's test_concurrent_futures (Debian's python3) gives the same results with waits recorded (PYPROF_WAITS=1)" {
	regrtest system 'test_concurrent_futures@waits:*Forkserver*'
	waits_recorded 1
}

@test "CPython 3.14's threading, subprocess, faulthandler, os, signal, sys, queue and concurrent_futures tests give the same results with the library at 100 Hz, with everything on (1 kHz, heap, waits), and queue's and concurrent_futures' with waits" {
	# shellcheck disable=SC2046
	regrtest 3.14 $(six 3.14) test_queue@waits test_concurrent_futures@waits
	waits_recorded 8
}

@test "CPython 3.15's threading, subprocess, faulthandler, os, signal and sys tests give the same results with the library at 100 Hz and with everything on (1 kHz, heap, waits)" {
	# shellcheck disable=SC2046
	regrtest 3.15 $(six 3.15)
	waits_recorded 6
}
