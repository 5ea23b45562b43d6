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
