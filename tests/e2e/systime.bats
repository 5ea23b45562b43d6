#!/usr/bin/env bats
# systime.bats - time in the kernel is CPU time: a function's system calls
# and page faults are sampled as it spends them, below and past the
# kernel tick.
#
# tests/targets/systime.py runs four functions (pure Python, C, small
# os.pread calls, pages faulted into fresh mappings) in blocks of about
# 40 ms of CPU, timing every call with its thread's CPU clock (user +
# system). Each function's share of the samples (cumulative, among the
# four) must be within 1 point of its measured share, at 250 Hz, 1 kHz
# and 4 kHz (the default: perf counters, the kernel's periods placed by
# the library's CPU-clock thread; docs/design.md), with the four on the
# main thread and with each on a thread of its own, all at once, and
# (1.4) at 250 Hz on a busy host: every interpreter at once, unpinned,
# beside busy loops twice the cores (the kernel's CPU timers, which the
# library used up to 250 Hz, were 3 to 25 points off there). The target must itself spend at
# least 30% of the two system functions' time in the kernel, so that a
# profiler that dropped kernel time would fail here (user-time perf
# counters were 9 to 22 points off), and the profile's comments must name
# what counted the time. Every interpreter in tests/lib/pythons.sh; 3.x
# (native stacks: the handler charges the kernel's periods at the next
# sample, and the comment says what counted) on 3.11.
#
# The truth matrix (4.x) runs the target's "matrix" mode (seven functions:
# pure Python, C that releases the GIL (zlib, hashlib), C that keeps it,
# os.pread, page faults, sleeps; four threads at once) pinned to one CPU
# (taskset -c 0, the library's thread with it) beside busy loops, twice
# the machine's cores, that the test starts and kills: the program's
# threads are mostly off a CPU when a tick looks at them, preempted rather
# than blocked (docs/design.md, "Past the tick"). Each function's share
# must be within 1 point of the program's own thread CPU clocks at 1 kHz
# and 4 kHz, 1.5 at 100 Hz (400 samples of 10 ms: with the clocks at
# every rate their own error decides there), on every interpreter. The three rates run at once (4 s
# of CPU at 100 Hz, 1.5 s past the tick), so an interpreter costs about
# its 7 s of CPU in wall time: 5m53s for all 12 on the shared machine at
# load 20. The rule before (a thread neither holding the GIL nor seen
# running keeps its time) failed 4.2: zlib -1.7, C keeping the GIL +1.7.
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

BUSY_PIDS=()

setup() {
	common_setup
}

teardown() {
	busy_stop
	common_teardown
}

# busy_start: 2 x the cores of busy loops (unpinned), in the background,
# holding the busy lock (common.bash) until busy_stop.
busy_start() {
	local i n
	exec {BUSY_LOCK_FD}>>"$PP_BUSY_LOCK"
	flock -x "$BUSY_LOCK_FD"
	n=$(nproc)
	for ((i = 0; i < 2 * n; i++)); do
		sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 3>&- {BUSY_LOCK_FD}>&- &
		BUSY_PIDS+=($!)
	done
}

busy_stop() {
	local p
	for p in "${BUSY_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	BUSY_PIDS=()
	if [[ -n ${BUSY_LOCK_FD:-} ]]; then
		flock -u "$BUSY_LOCK_FD"
		exec {BUSY_LOCK_FD}>&-
		BUSY_LOCK_FD=
	fi
}

# systime_check NAME EXE KIND HZ [threads]
systime_check() {
	local prof secs=1.5 want
	# 250 Hz: 3 s, 750 samples (2 s, from the threads' clocks, had one
	# function 1.02 points off in a loaded run)
	(($4 == 250)) && secs=3
	prof=$(PYPROF_HZ=$4 cached_profile "$1-systime-$4-${5:-main}" "$2" \
		"$PP_TARGETS/systime.py" "$secs" ${5:+"$5"})
	tail -1 "$prof.stdout" >"$T/truth.json"
	cat "$T/truth.json"
	# the kernel's part is real: at least 30% of each system function's
	# time (the kernel's own split of the thread's time, by its ticks)
	"$PP_HOST_PYTHON" -c 'import json, sys
t = json.load(open(sys.argv[1]))
for f in ("sys_pread", "sys_fault"):
    if t["system"][f] < 0.3:
        sys.exit("%s spent only %.0f%% of its time in the kernel"
                 % (f, 100 * t["system"][f]))' "$T/truth.json"
	# most of the samples the measured CPU time calls for (90%)
	want=$("$PP_HOST_PYTHON" -c 'import json, sys
t = json.load(open(sys.argv[1]))
print(int(0.9 * int(sys.argv[2]) * sum(t["seconds"].values())))' \
		"$T/truth.json" "$4")
	pprof_raw "$prof" >"$T/raw"
	shares compare "$T/raw" "$T/truth.json" --tol 1 --min-samples "$want"
	# the profile says what counted the time
	local source="perf_event counters, each thread sampled where it runs (user time; system time from its CPU clock)"
	go tool pprof -comments "$prof" | grep -F -- ": CPU time from $source" ||
		fail "no comment naming the source: $source"
}

@test "1.1 at 250 Hz each function's share, system time included, is within 1 point of its CPU clock" {
	collector_start
	for_each_python systime_check 250
}

@test "1.2 the same at 1 kHz (past the tick)" {
	collector_start
	for_each_python systime_check 1000
}

# 4 kHz takes the 1 kHz path (a counter's period, the same grid): three
# interpreters, one of each frame layout's era, not all (CI's time)
@test "1.3 the same at 4 kHz (2.7, 3.11, 3.15)" {
	collector_start
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.11 3.15)" for_each_python systime_check 4000
}

# busy_profiles: labels_shares.py's cpu mode (calls of 5 to 45 ms of CPU
# drawn at random under three labels, 5:3:2, each timed by its thread's
# CPU clock) at 250 Hz on every interpreter at once, unpinned, beside
# busy_start's loops (each run the others' load too: about 16 tasks
# wanting 2 CPUs), into cached_profile's cache as NAME-busy.
# PYPROF_TEST_SRC=timer shows what the kernel's CPU timers gave there (2
# or 3 interpreters of 12 failed in each of two runs, worst 3.4 points;
# the clock source's worst 1.1).
busy_profiles() {
	local dir=$BATS_FILE_TMPDIR/cache name exe kind pids=() names=() i f key
	mkdir -p "$dir"
	while read -r name exe kind; do
		[[ $kind == missing ]] && continue
		PYPROF_CPU_SOURCE=${PYPROF_TEST_SRC:-auto} PYPROF_HZ=250 profiled \
			env PYTHONPATH="$PP_ROOT/preload/module" "$exe" \
			"$PP_TARGETS/labels_shares.py" cpu 2.5 \
			>"$dir/$name-busy.out" 2>"$dir/$name-busy.err" </dev/null 3>&- &
		pids+=($!)
		names+=("$name")
	done < <(pyprof_pythons)
	for ((i = 0; i < ${#pids[@]}; i++)); do
		key=${names[i]}-busy
		if ! wait "${pids[i]}"; then
			{ echo "labels_shares.py failed; stderr:"; cat "$dir/$key.err"; } >"$dir/$key.error"
		elif f=$(wait_profile "${pids[i]}" 2>"$dir/$key.error"); then
			cp "$f" "$dir/$key.pb.gz"
			rm -f "$dir/$key.error"
		fi
	done
}

busy_check() {
	local dir=$BATS_FILE_TMPDIR/cache
	[[ ! -f $dir/$1-busy.error ]] || { cat "$dir/$1-busy.error"; fail "no profile"; }
	head -1 "$dir/$1-busy.out" >"$T/truth.json"
	shares label-shares "$dir/$1-busy.pb.gz" endpoint "$T/truth.json" --tol 2
}

@test "1.4 on a busy host (every interpreter at once, unpinned, beside busy loops twice the cores): calls of random lengths in three labels, each label's share within 2 points of its CPU clock at 250 Hz" {
	collector_start
	busy_start
	busy_profiles
	busy_stop
	for_each_python busy_check
}

# every interpreter at 1 kHz (2.2); 250 Hz, the tick's rate (1.1 runs it
# on every interpreter single-threaded), on three: CI's time
@test "2.1 four threads at once, two of them mostly in the kernel: each function's share within 1 point of its thread's CPU clock at 250 Hz (2.7, 3.11, 3.15)" {
	collector_start
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.11 3.15)" for_each_python systime_check 250 threads
}

@test "2.2 the same at 1 kHz" {
	collector_start
	for_each_python systime_check 1000 threads
}

@test "2.3 the same at 4 kHz (2.7, 3.11, 3.15)" {
	collector_start
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.11 3.15)" for_each_python systime_check 4000 threads
}

@test "3.1 with native stacks past the tick, the profile says what counted its CPU time, the kernel's part labelled system (3.11)" {
	collector_start
	check() {
		local prof
		prof=$(PYPROF_NATIVE=1 PYPROF_HZ=1000 cached_profile "$1-systime-native" \
			"$2" "$PP_TARGETS/systime.py" 0.5)
		go tool pprof -comments "$prof" | grep -F -- ": CPU time from perf_event counters, each thread sampled where it runs (user time; system time from its CPU clock)" ||
			fail "no comment naming the source"
		shares labels "$prof" time | grep -q '^system' ||
			fail "no sample labelled time=system"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11) for_each_python check
}

# matrix_secs HZ: the matrix's CPU seconds at HZ (100 Hz: more, since a
# sample is 10 ms there and each block boundary moves one by up to one).
matrix_secs() {
	if (($1 < 250)); then echo 4; else echo 1.5; fi
}

# matrix_profiles NAME EXE: the matrix target at 100 Hz, 1 kHz and 4 kHz,
# the three at once, pinned to CPU 0 (each is the others' load too: the
# busy loops then mostly leave CPU 0, and the three take about their
# CPU time in wall time), into cached_profile's cache, so that 4.1 to 4.3
# check them one rate each.
matrix_profiles() {
	local dir=$BATS_FILE_TMPDIR/cache hz pids=() key f i=0
	mkdir -p "$dir"
	[[ -f $dir/$1-matrix-4000.pb.gz || -f $dir/$1-matrix-4000.error ]] && return 0
	for hz in 100 1000 4000; do
		PYPROF_HZ=$hz profiled taskset -c 0 "$2" "$PP_TARGETS/systime.py" \
			"$(matrix_secs $hz)" matrix >"$dir/$1-matrix-$hz.out" \
			2>"$dir/$1-matrix-$hz.err" </dev/null 3>&- &
		pids+=($!)
	done
	for hz in 100 1000 4000; do
		key=$1-matrix-$hz
		if ! wait "${pids[i]}"; then
			{ echo "the matrix at $hz Hz failed; stderr:"; cat "$dir/$key.err"; } >"$dir/$key.error"
		elif f=$(wait_profile "${pids[i]}" 2>"$dir/$key.error"); then
			cp "$f" "$dir/$key.pb.gz"
			cp "$dir/$key.out" "$dir/$key.pb.gz.stdout"
			rm -f "$dir/$key.error"
		fi
		i=$((i + 1))
	done
}

# matrix_check NAME EXE KIND HZ: the matrix target pinned to CPU 0.
matrix_check() {
	local prof want
	matrix_profiles "$1" "$2"
	prof=$(PYPROF_HZ=$4 cached_profile "$1-matrix-$4" taskset -c 0 "$2" \
		"$PP_TARGETS/systime.py" "$(matrix_secs "$4")" matrix)
	tail -1 "$prof.stdout" >"$T/truth.json"
	cat "$T/truth.json"
	want=$("$PP_HOST_PYTHON" -c 'import json, sys
t = json.load(open(sys.argv[1]))
print(int(0.9 * int(sys.argv[2]) * sum(t["seconds"].values())))' \
		"$T/truth.json" "$4")
	pprof_raw "$prof" >"$T/raw"
	# 100 Hz: a sample is 10 ms of CPU, 400 over seven functions; their
	# errors had an sd of about 0.35 points (84 values of one run), so 1
	# point failed one or two of them in most runs
	local tol=1
	(($4 < 250)) && tol=1.5
	shares compare "$T/raw" "$T/truth.json" --tol "$tol" --min-samples "$want"
}

@test "4.1 truth matrix pinned to one CPU beside a busy load (zlib, hashlib, C with the GIL, pread, page faults, pure Python, sleeps; four threads): each function within 1.5 points of its CPU clocks at 100 Hz" {
	collector_start
	busy_start
	for_each_python matrix_check 100
}

@test "4.2 the same within 1 point at 1 kHz (past the tick: a preempted thread is not a blocked one)" {
	collector_start
	busy_start
	for_each_python matrix_check 1000
}

@test "4.3 the same within 1 point at 4 kHz (2.7, 3.11, 3.15)" {
	collector_start
	busy_start
	PYPROF_TEST_PYTHONS="$(pythons_of 2.7 3.11 3.15)" for_each_python matrix_check 4000
}
