#!/usr/bin/env bats
# chains.bats - whole stacks where the chain of frames is not one thread's
# plain calls: generators and coroutines (whose frames are linked to their
# caller only while they run), read from another thread (wall mode and the
# CPU-clock source past 250 Hz, preload/wall.c, preload/cpuclock.c).
#
#   1  gens.py (nested generators, yield from, async generators,
#      coroutines driven by asyncio and by send()) at 1 kHz in CPU and in
#      wall mode: every stack with a frame of the program starts at the
#      program's <module>, or at [truncated] (counted; at most 2% of them)

load ../lib/common

GENS_SECONDS=${GENS_SECONDS:-0.4}

setup() {
	common_setup
}

teardown() {
	common_teardown
}

# gens_roots NAME EXE KIND: gens.py under EXE in both modes at 1 kHz.
gens_roots() {
	local exe=$2 mode prof
	for mode in cpu wall; do
		prof=$T/gens-$1-$mode
		PYPROF_MODE=$mode PYPROF_HZ=1000 profile_once "$prof" \
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
