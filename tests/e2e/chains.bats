#!/usr/bin/env bats
# chains.bats - whole stacks where the chain of frames is not one thread's
# plain calls: generators and coroutines (whose frames are linked to their
# caller only while they run), read from another thread (wall mode and the
# CPU-clock source past 250 Hz, preload/sample/wall.c, preload/sample/cpuclock.c).
#
#   1  gens.py (nested generators, yield from, async generators,
#      coroutines driven by asyncio and by send()) at 1 kHz in CPU and in
#      wall mode: every stack with a frame of the program starts at the
#      program's <module>, or at [truncated] (counted; at most 2% of them)
#   2  subinterp.py (3.12+: work in subinterpreters, from two threads of
#      the main interpreter; InterpreterPoolExecutor on 3.14+) at 250 Hz,
#      CPU and wall: a thread is read in the interpreter it runs, once per
#      tick: the worker function's CPU share within 5 points of the
#      program's own clocks, its wall time within 15%, no worker thread
#      sampled for longer than it lived, every worker thread named
#      (tests/lib/subinterp_check.py)

load ../lib/common

GENS_SECONDS=${GENS_SECONDS:-0.4}
SUBINTERP_SECONDS=${SUBINTERP_SECONDS:-0.5}

setup() {
	common_setup
}

teardown() {
	common_teardown
}

# profile_twice PREFIX CMD...: profile_once, and once more if the run
# left no profile at all (seen once in about 50 runs on a machine at load
# 24: 3.14, CPU mode at 1 kHz, connected, 0 samples), which says nothing
# about the stacks these tests look at.
profile_twice() {
	profile_once "$@" || { echo "   no profile: once more"; profile_once "$@"; }
}

# gens_roots NAME EXE KIND: gens.py under EXE in both modes at 1 kHz.
gens_roots() {
	local exe=$2 mode prof
	for mode in cpu wall; do
		prof=$T/gens-$1-$mode
		PYPROF_MODE=$mode PYPROF_HZ=1000 profile_twice "$prof" \
			"$exe" "$PP_TARGETS/gens.py" "$GENS_SECONDS"
		echo "   $mode:"
		shares roots "$prof.pb.gz" --file gens.py \
			--root '<module>@gens.py' --max-truncated 0.02 |
			sed 's/^/     /'
		# the pipe's status is sed's: ask again for the verdict
		shares roots "$prof.pb.gz" --file gens.py \
			--root '<module>@gens.py' --max-truncated 0.02 >/dev/null
	done
}

@test "1 generator and coroutine stacks are whole at 1 kHz, CPU and wall" {
	collector_start
	for_each_python gens_roots
}

# subinterp_one NAME EXE KIND: subinterp.py under EXE, CPU then wall.
subinterp_one() {
	local exe=$2 v mode prof
	v=$(python_major_minor "$exe")
	case $v in 2.* | 3.[0-9] | 3.1[01])
		echo "   not applicable: subinterpreters of their own GIL are 3.12+"
		return 0
		;;
	esac
	for mode in cpu wall; do
		prof=$T/subinterp-$1-$mode
		PYPROF_MODE=$mode PYPROF_HZ=250 profile_twice "$prof" \
			"$exe" "$PP_TARGETS/subinterp.py" "$SUBINTERP_SECONDS"
		echo "   $mode:"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/subinterp_check.py" \
			"$mode" "$prof.pb.gz" "$prof.pb.gz.stdout" >"$prof.check" ||
			{ sed 's/^/     /' "$prof.check"; return 1; }
		sed 's/^/     /' "$prof.check"
	done
}

@test "2 subinterpreters: each thread read in the interpreter it runs" {
	collector_start
	PYPROF_TEST_PYTHONS=$(pythons_of 3.12 3.13 3.14 3.15) \
		for_each_python subinterp_one
}
