#!/usr/bin/env bats
# regrtest.bats - Python's own behaviour is unchanged: for 3.8, 3.11,
# 3.13, 3.14 and 3.15 (Debian sid's, with libpython3.X-testsuite), a
# selection of CPython's regression tests from the interpreter's own test
# package gives the same result, test by test, with
# libpyprof.so preloaded at PYPROF_HZ=10000 (the highest rate it accepts)
# and a collector receiving the samples, as without it.
#
# tests/lib/regrtest_compare.py does the work; its header states the rule:
# every test's outcome (ok, skipped, failed, error, hang, crash) plain and
# preloaded; a test whose outcomes differ is rerun plainly twice, and only
# if the plain runs themselves disagree is it excused, as FLAKY (printed,
# not a failure). A preloaded rerun that passes excuses nothing. Each
# preloaded module process must also leave a profile with samples in the
# test package's files, so that the library was really sampling.
#
# The selection, chosen to fit about two minutes per interpreter on a
# noisy 2-core machine (4 processes at a time: these modules mostly sleep
# or wait on children) while covering what a sampling profiler can break:
#   test_threading      thread start/exit, fork from threads, shutdown
#                       (test_main_thread_after_fork and, 3.14+,
#                       test_native_id_after_fork want nothing on stderr
#                       after an os.fork() in __main__: the library's
#                       threads are gone by then, preload/agent/forkpause.h)
#   test_signal         handlers, wakeup fds, EINTR, sigwait, itimers
#   test_subprocess     fork+exec, fd inheritance, exit statuses of children
#                       (every child Python is profiled too; its
#                       descriptors sit above the soft limit, out of
#                       fd_status.py's sight); without
#                       ProcessTestCaseNoPoll (ProcessTestCase again with
#                       select() for poll()) and test_leaking_fds_on_error
#                       (20 s of failing execs)
#   test_fork1          fork with threads
#   test_generators     generator and frame life cycles
#   test_asyncio.test_events, test_tasks, test_locks
#                       event loops, coroutines, subprocesses, signals in
#                       loops: the epoll loop only (Poll/SelectEventLoopTests
#                       repeat every test per selector), tasks as C and as
#                       Python code (not the six other Task/Future and
#                       subclass mixes); test_asyncio.test_subprocess would
#                       repeat test_events' subprocess cases per watcher
#   test_sys            interpreter state, recursion limits, sys.settrace
#   test_gc             collection, finalizers at shutdown
# ":NAME" after a module ignores those tests (regrtest --ignore patterns).
#
# Reports and logs of each run stay in the test's temporary directory
# (the path is printed) for a look at a failure.

load ../lib/common

MODULES="
test_subprocess:ProcessTestCaseNoPoll:test_leaking_fds_on_error
test_asyncio.test_tasks:PyTask_PyFuture_SubclassTests:CTaskSubclass_PyFuture_Tests:PyTask_CFuture_Tests:PyTask_CFutureSubclass_Tests:CTask_CFuture_SubclassTests:CTask_PyFuture_Tests
test_signal
test_threading
test_asyncio.test_events:PollEventLoopTests:SelectEventLoopTests
test_fork1
test_sys
test_gc
test_asyncio.test_locks
test_generators"

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# regrtest_same VERSION: the comparison for pyenv's newest VERSION.x (or
# Debian sid's, tests/lib/pythons.sh).
regrtest_same() {
	local want=$1 name exe kind
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$want pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $want (tests/lib/pythons.sh; make test-deps fetches 3.14 and 3.15)"
		return 1
	fi
	echo "== $name $exe; work files in $T/work"
	local modules=$MODULES
	case $want in
	3.1[4-9])
		# 3.14 added a test that sees any preloaded library:
		# test_vfork_used_when_expected skips itself when LD_PRELOAD is
		# set
		modules=$(echo "$modules" | sed \
			-e 's/^test_subprocess:/test_subprocess:test_vfork_used_when_expected:/')
		;;
	esac
	# shellcheck disable=SC2086 # modules is a list
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_compare.py" \
		--python "$exe" --lib "$PP_LIB" --socket "$SOCK" \
		--profiles "$OUT" --work "$T/work" --hz 10000 $modules
}

@test "CPython 3.8's regression tests give the same results with the library sampling at 10000 Hz" {
	regrtest_same 3.8
}

@test "CPython 3.11's regression tests give the same results with the library sampling at 10000 Hz" {
	regrtest_same 3.11
}

@test "CPython 3.13's regression tests give the same results with the library sampling at 10000 Hz" {
	regrtest_same 3.13
}

@test "CPython 3.14's regression tests give the same results with the library sampling at 10000 Hz" {
	regrtest_same 3.14
}

@test "CPython 3.15's regression tests give the same results with the library sampling at 10000 Hz" {
	regrtest_same 3.15
}
# Issue 33's block and mutex profiles: the modules that wait most
# (threading's locks, conditions and joins; queue.Queue; executors'
# futures and shutdowns), plainly and with PYPROF_WAITS=1 (every wait of
# every thread timed and recorded at the default rate, the GIL's too),
# beside CPU sampling at 10000 Hz. Each preloaded process must also leave
# block and mutex profiles: the waits were really being recorded.
# pyenv's 3.11.7 (and 3.12.1) install no test_concurrent_futures: that
# module runs on 3.10 for them, whose locks are waited for as 3.11's are
# (a sem_t per lock, docs/waits.md), without its forkserver tests:
# there the forkserver's children run this harness's command line, which
# they cannot parse (every such test is an ERROR plainly, and one in
# three runs a HANG, with or without the library).
# regrtest_waits VERSION MODULE...
regrtest_waits() {
	local want=$1 name exe kind
	shift
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$want pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $want (tests/lib/pythons.sh)"
		return 1
	fi
	echo "== $name $exe; work files in $T/work-$want"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_compare.py" \
		--python "$exe" --lib "$PP_LIB" --socket "$SOCK" \
		--profiles "$OUT" --work "$T/work-$want" --hz 10000 \
		--env PYPROF_WAITS=1 "$@"
	local f n=0 blocks=0
	for f in "$OUT"/*.pb.gz; do
		case $f in *.block.pb.gz | *.mutex.pb.gz) continue ;; esac
		n=$((n + 1))
		[[ -s ${f%.pb.gz}.block.pb.gz && -s ${f%.pb.gz}.mutex.pb.gz ]] &&
			blocks=$((blocks + 1))
	done
	echo "   $blocks of $n preloaded processes' profiles have block and mutex profiles beside them"
	# every module process waits (its main thread joins at least once);
	# a child process that never waited has none
	((blocks >= $#)) || fail "block and mutex profiles beside $blocks profiles only: $(ls "$OUT")"
}

@test "CPython 3.11's test_threading and test_queue (3.10's test_concurrent_futures) give the same results with waits recorded (PYPROF_WAITS=1)" {
	regrtest_waits 3.11 test_threading test_queue
	rm -f "$OUT"/*
	regrtest_waits 3.10 'test_concurrent_futures:*Forkserver*'
}

@test "CPython 3.14's test_threading, test_queue and test_concurrent_futures give the same results with waits recorded (PYPROF_WAITS=1)" {
	regrtest_waits 3.14 test_threading test_queue test_concurrent_futures
}

# Issue 30's attach under load: `pyprof attach --duration 1` twenty times
# into a running `python -m test test_threading test_asyncio` (one
# process: the attach goes where the tests run), beside a run left alone;
# tests/lib/regrtest_attach.py compares them test by test (its header has
# the rule). 2 to 4 minutes per interpreter on the loaded 2-core machine
# (docs/testing.md).
regrtest_attached() {
	local name exe kind
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$1 pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $1 (make test-deps fetches 3.14 and 3.15)"
		return 1
	fi
	echo "== $name $exe; work files in $T/work"
	# the attach's per-user directory: the test's own
	TMPDIR=$T "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_attach.py" \
		--python "$exe" --pyprof "$PP_PYPROF" --work "$T/work" \
		--attaches 20 test_threading test_asyncio
}

@test "CPython 3.14's regression tests test_threading and test_asyncio give the same results while pyprof attaches 20 times" {
	regrtest_attached 3.14
}

@test "CPython 3.15's regression tests test_threading and test_asyncio give the same results while pyprof attaches 20 times" {
	regrtest_attached 3.15
}
