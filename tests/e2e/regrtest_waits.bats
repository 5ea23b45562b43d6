#!/usr/bin/env bats
# regrtest_waits.bats - issue 33: CPython's own tests of threads' waits
# give the same results while every wait is recorded (block and mutex
# profiles).
#
# In make check. Each test runs as a process of its own beside the lanes
# once the files that time things have ended (tests/run's "lane: tail";
# docs/testing.md).
#
# tests/run: lane: tail

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# Issue 33's block and mutex profiles: the modules that wait most
# (threading's locks, conditions and joins; queue.Queue; executors'
# futures and shutdowns), plainly and with PYPROF_WAITS=1 (every wait of
# every thread timed and recorded at the default rate, the GIL's too),
# beside CPU sampling at 100 Hz (pyprof record --waits's default; the
# 10 kHz run of make check-regrtest took 228 s of CPU against its 148 s
# of wall time on 3.14). Each preloaded process must also leave block and
# mutex profiles: the waits were really being recorded.
# pyenv's 3.11.7 installs no test_concurrent_futures: that module runs
# on Debian's python3, a 3.11 too, from its own test package
# (libpython3.11-testsuite, make test-deps), without its forkserver
# tests: there the forkserver's children run this harness's command line,
# which they cannot parse (every such test is an ERROR plainly, and one
# run in three a HANG, with or without the library).
# A test is a HANG past 90 s, not regrtest_compare.py's 30:
# test_concurrent_futures' test_hang_global_shutdown_lock (50 process
# pools forked beside a thread that submits without end) takes 15 to
# 19 s plainly on a quiet machine and 15 to 38 s beside make check, so at
# 30 s it was a HANG once with the library (a fork costs a child about
# 1.5 ms more CPU with it: docs/performance.md) and could be one
# without it.
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
		--profiles "$OUT" --work "$T/work-$want" --hz 100 --test-timeout 90 \
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

@test "CPython 3.11's test_threading, test_queue and test_concurrent_futures give the same results with waits recorded (PYPROF_WAITS=1)" {
	regrtest_waits 3.11 test_threading test_queue
	rm -f "$OUT"/*
	regrtest_waits system 'test_concurrent_futures:*Forkserver*'
}

@test "CPython 3.14's test_threading, test_queue and test_concurrent_futures give the same results with waits recorded (PYPROF_WAITS=1)" {
	regrtest_waits 3.14 test_threading test_queue test_concurrent_futures
}

