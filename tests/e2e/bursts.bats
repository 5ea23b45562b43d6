#!/usr/bin/env bats
# bursts.bats - CPU time charged where it was spent, in the shape servers
# have: short bursts between waits (issue 44).
#
# tests/targets/bursts.py runs three handlers with one loop body, 5, 3
# and 2 units each, jobs drawn evenly among them: their CPU is 50, 30 and
# 20% by construction, on any machine, and nothing in them reads a clock.
# The shapes: one thread with sleeps between bursts, pools of 2, 4 and 16
# workers fed by a queue, a thread per job, a process per job (fork),
# threads woken by a lock, an event and a condition, asyncio tasks
# awaiting between bursts, and jobs back to back. Each handler's share
# must be within 1.5 points of its construction, or within 4 standard
# deviations of a share of that many samples when that is wider (a
# sampling profile's counts cannot do better however right they are:
# one deviation is about 1.5 points at 1 kHz for 3 s of such work; 4,
# for 40-odd comparisons a run); the profile's CPU
# total within 3% and 60 ms of the program's own (getrusage, less what
# the library's own threads used).
#
# The shapes go round the interpreters (each interpreter one shape, each
# shape several interpreters) at 1 kHz with the default settings (perf
# counters where perf_event_open is allowed, as here); then perf refused
# for real by a seccomp filter (tests/lib/noperf.c: EACCES, as a
# container's default profile, and ENOSYS: the clocks, each thread
# charged where it is found running), and the default pinned to one CPU
# beside a busy loop, and at 100 Hz.
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

setup() {
	common_setup
	noperf_build
	BUSY=()
}

teardown() {
	local p
	for p in "${BUSY[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	common_teardown
}

SHAPES=(sleep pool4 thread fork locks asyncio pool2 pool16 loop sleep pool4
	thread)

# bursts NAME EXE SHAPE HZ SECONDS [PREFIX...]: the profile of bursts.py
# SHAPE under pyprof record at HZ (the command run under PREFIX), checked.
bursts() {
	local name=$1 exe=$2 shape=$3 hz=$4 secs=$5 prof
	shift 5
	prof=$T/$name-$shape-$hz.pb.gz
	PYPROF_HZ=$hz "$@" "$PP_PYPROF" record -o "$prof" -- "$exe" \
		"$PP_TARGETS/bursts.py" "$shape" "$secs" \
		>"$T/$name.out" 2>"$T/$name.err" ||
		{ cat "$T/$name.err"; fail "record failed"; }
	tail -1 "$T/$name.out" >"$T/$name.truth"
	echo "-- $shape at $hz Hz ${*:+($*)}: $(cat "$T/$name.truth")"
	go tool pprof -comments "$prof" 2>/dev/null | grep -m1 "CPU time from" || true
	shares compare "$prof" "$T/$name.truth" --tol 1.5 --sd 4 \
		--min-samples $((hz * secs / 10))
	# the CPU total: the program's own (getrusage less the library's
	# threads), within 3% and 60 ms (the interpreter's start before
	# sampling starts: about 20 to 50 ms); not where children did the
	# work (the library's start in each child is theirs too), nor for a
	# thread per job: each thread's start and end (the kernel's, and the
	# library's arming of it) are outside any sample, 8 to 19% of such a
	# program's CPU here (docs/limitations.md)
	[[ $shape == fork || $shape == thread ]] && return 0
	local got want
	got=$(shares count "$prof" --value | awk -F'\t' '$1 == "*" {print $2}')
	want=$("$PP_HOST_PYTHON" -c 'import json, sys
t = json.load(open(sys.argv[1]))
print(t["cpu"] - t["lib_cpu"])' "$T/$name.truth")
	echo "CPU in the profile ${got} ns, the program's own ${want} s"
	"$PP_HOST_PYTHON" -c 'import sys
got, want = float(sys.argv[1]) / 1e9, float(sys.argv[2])
sys.exit(abs(got - want) > 0.03 * want + 0.06)' "$got" "$want" ||
		fail "the CPU total is off by more than 3% and 60 ms"
}

# round_robin NAME EXE KIND: each interpreter its shape of SHAPES, in the
# order pyprof_pythons lists them.
round_robin() {
	local i=0 name exe kind
	while read -r name exe kind; do
		[[ $name == "$1" ]] && break
		i=$((i + 1))
	done < <(pyprof_pythons)
	quiet bursts "$1" "$2" "${SHAPES[i % ${#SHAPES[@]}]}" 1000 2
}

@test "1.1 the default (perf counters), each interpreter a shape at 1 kHz: the handlers' shares by construction, the CPU total the process's" {
	for_each_python round_robin
}

refused() {
	quiet bursts "$1-acc" "$2" pool4 1000 3 "$NOPERF" EACCES
	quiet bursts "$1-nosys" "$2" thread 1000 3 "$NOPERF" ENOSYS
	go tool pprof -comments "$T/$1-nosys-thread-1000.pb.gz" |
		grep -q "each charged where it is found running" ||
		fail "the source is not the one for perf refused"
}

@test "1.2 the default with perf_event_open refused by seccomp (EACCES, ENOSYS): the clocks instead" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.15)" for_each_python refused
}

pinned_run() {
	taskset -c 0 sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 3>&- &
	BUSY+=($!)
	bursts "$1" "$2" sleep 1000 4 taskset -c 0
	kill -KILL "${BUSY[-1]}"
}

pinned() {
	quiet pinned_run "$@"
}

@test "1.3 pinned to one CPU beside a busy loop" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.12)" for_each_python pinned
}

slow() {
	quiet bursts "$1" "$2" pool4 100 6
}

@test "1.4 at 100 Hz" {
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7)" for_each_python slow
}
