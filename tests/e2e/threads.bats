#!/usr/bin/env bats
# threads.bats - many threads, wall-clock time, thread identity, rates past
# the kernel tick.
#
# Each test runs a target of tests/targets/ that measures itself (CPU time
# per thread with time.thread_time, or clock_gettime(CLOCK_THREAD_CPUTIME_ID)
# through ctypes before 3.7; the process's CPU with getrusage; wall time per
# function) and compares the profile with that, through `go tool pprof`
# (tests/lib/pprof_shares.py, tests/lib/thread_checks.py). Every
# interpreter in tests/lib/pythons.sh, except 5.x (rates), on 3.8, 3.11
# and 3.13 (the oldest, the usual and the newest layout), 6.2 (pyprof
# record) on 3.11, and what does not depend on the interpreter's layout
# on a few that stand for all (make check's time): wall mode's thirds
# (2.1: 2.7, 3.8, 3.11, 3.12, 3.13, 3.15; its frames are the ones every
# interpreter's CPU tests read), the signals a blocked system call sees
# (4.1) and a thread that blocked SIGPROF (8.1) on 2.7, 3.8, 3.12 and
# 3.15, the collector's --per-thread split (6.1) on 2.7, 3.11 and 3.15.
#
#   1.x  CPU mode, four threads burning CPU at once (tests/targets/threads_cpu.py)
#   2.x  wall mode: sleep, socket wait and compute (thirds.py)
#   3.x  thread identity: names, renames (named_idle.py, rename.py)
#   4.x  wall mode leaves blocked threads alone (blocked.py); GIL labels (gil.py)
#   5.x  rates past the tick (rates.py); sampling goes on in a parent
#        after fork() (fork_rate.py)
#   6.x  one profile per thread: pyprof-collector --per-thread, pyprof
#        record --per-thread
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

CHECKS=$PP_ROOT/tests/lib/thread_checks.py

setup() {
	common_setup
}

teardown() {
	common_teardown
}

checks() { "$PP_HOST_PYTHON" "$CHECKS" "$@"; }

# raw_focus PROFILE TAGFOCUS: `go tool pprof -raw` of the samples whose
# labels match TAGFOCUS (pprof's own filter, as a user would split them).
raw_focus() {
	go tool pprof -symbolize=none -raw -tagfocus "$2" "$1"
}

# ---- 1. CPU mode, several threads at once ------------------------------

# threads_cpu NAME EXE HZ: the cached profile of threads_cpu.py at HZ
# (100: the default rate, 2 s; 1000: past the tick, 1.5 s; both from the
# threads' CPU clocks, read by the library's own thread).
threads_cpu() {
	local secs=2
	(($3 >= 1000)) && secs=1.5
	PYPROF_HZ=$3 cached_profile "$1-threads_cpu-$3" "$2" \
		"$PP_TARGETS/threads_cpu.py" "$secs"
}

# shares_check NAME EXE KIND HZ
shares_check() {
	local prof want
	prof=$(threads_cpu "$1" "$2" "$4")
	# user + system time at every rate: timers up to the tick, the
	# threads' CPU clocks past it (docs/environment.md, "Rates"; a thread
	# that waits for the GIL spends much of its time in the kernel, on 2.7
	# most of all)
	tail -1 "$prof.stdout" >"$T/truth.json"
	cat "$T/truth.json"
	# The profile must hold most of the samples the four threads' CPU
	# time calls for (90%), and at least 60 for a 3-point comparison to
	# mean something (fewer on a busy machine: the threads get less CPU).
	want=$("$PP_HOST_PYTHON" -c 'import json,sys
t = json.load(open(sys.argv[1]))
print(max(60, int(0.9 * int(sys.argv[2]) * sum(t["seconds"].values()))))' \
		"$T/truth.json" "$4")
	pprof_raw "$prof" >"$T/raw"
	# 3 points (past the tick each thread's total is its CPU clock's, to
	# within a period: systime.bats holds that split to 1 point)
	shares compare "$T/raw" "$T/truth.json" --tol 3 --min-samples "$want"
}

@test "1.1 four threads at once, one in C without the GIL: each function's share of the samples is within 3 points of its thread's CPU time (100 Hz)" {
	collector_start
	# 2 s on two cores: 200 to 400 samples (fewer on a busy machine);
	# each thread's count is off by less than one sample (a per-thread
	# CPU timer with a random phase), under a point each.
	for_each_python shares_check 100
}

@test "1.2 the same at 1 kHz (past the tick)" {
	collector_start
	for_each_python shares_check 1000
}

# cpu_total_check NAME EXE KIND HZ
cpu_total_check() {
	local prof period_ms
	prof=$(threads_cpu "$1" "$2" "$4")
	period_ms=$((1000 / $4))
	# Allowed: 5% (the library's own agent thread, which the kernel counts
	# and no sample covers: under 1% measured; CPU timers granted at the
	# kernel tick), plus 30 ms (what the interpreter spends starting
	# before the first timer is armed: about 20 ms measured on 3.11 with
	# a 0.01 s run) and one period per thread (the five threads' counts
	# are each off by up to one sample).
	checks cpu-total "$prof" "$prof.stdout" --rel 0.05 \
		--fixed-ms $((30 + 5 * period_ms))
}

@test "1.3 the sampled CPU total of a process agrees with the kernel's getrusage (5% + start-up + a period per thread)" {
	collector_start
	for_each_python cpu_total_check 100
	# past the tick: the CPU clocks do not depend on the version
	PYPROF_TEST_PYTHONS=$(pythons_of 3.8 3.11 3.13) \
		for_each_python cpu_total_check 1000
}

# ---- 2. wall mode: waiting shows, on and off CPU -----------------------

# thirds_wall NAME EXE KIND: runs thirds.py in wall mode, up to 3 times
# while the machine is too busy for compute_third to be on CPU 85% of its
# time (then the cpu_state it gets says "off" truthfully).
thirds_wall() {
	local try prof ratio
	for try in 1 2 3; do
		prof=$T/thirds-$1-$try.pb.gz
		PYPROF_MODE=wall PYPROF_HZ=100 quiet profile_once "${prof%.pb.gz}" \
			"$2" "$PP_TARGETS/thirds.py" 2 || return 1
		ratio=$("$PP_HOST_PYTHON" -c 'import json,sys
print("%.2f" % json.loads(open(sys.argv[1]).read().splitlines()[-1])["compute_cpu_ratio"])' \
			"$prof.stdout")
		echo "run $try: compute_third was on CPU ${ratio} of its time" >&2
		if awk -v r="$ratio" 'BEGIN { exit !(r >= 0.85) }'; then
			echo "$prof"
			return 0
		fi
	done
	fail "the machine is too busy: compute_third never got 85% of a CPU"
}

thirds_wall_check() {
	local prof f n on off rounds ratio allowed
	prof=$(thirds_wall "$1" "$2")
	tail -1 "$prof.stdout" | tee "$T/truth.json"
	pprof_raw "$prof" >"$T/raw"
	grep -q '^samples/count wall/nanoseconds' "$T/raw" ||
		fail "sample types are not samples/count wall/nanoseconds"
	# 2 s at 100 Hz: about 200 samples of the main thread.
	shares compare "$T/raw" "$T/truth.json" --tol 5 --min-samples 150
	read -r rounds ratio < <("$PP_HOST_PYTHON" -c 'import json,sys
t = json.load(open(sys.argv[1])); print(t["rounds"], t["compute_cpu_ratio"])' \
		"$T/truth.json")
	# cpu_state, split by pprof's own -tagfocus.
	raw_focus "$prof" cpu_state=on >"$T/on.raw"
	raw_focus "$prof" cpu_state=off >"$T/off.raw"
	for f in sleep_third socket_third compute_third; do
		n=$(shares count "$T/raw" "$f" | awk -v f="$f" '$1 == f {print $2}')
		on=$(shares count "$T/on.raw" "$f" | awk -v f="$f" '$1 == f {print $2}')
		off=$(shares count "$T/off.raw" "$f" | awk -v f="$f" '$1 == f {print $2}')
		((on + off == n)) || fail "$f: $((n - on - off)) samples without cpu_state"
		# A tick judges on/off by the thread's CPU time since the previous
		# tick, so the first tick after each change of phase (once per
		# round: compute -> sleep, socket -> compute) may carry the state
		# of the phase before; socket_third follows sleep_third (off ->
		# off). compute_third may also be off when other programs took
		# the CPU: allowed twice the share of time it was measured off CPU.
		case $f in
		sleep_third) allowed=$((rounds + 2)) ;;
		socket_third) allowed=$((n / 20)) ;;
		compute_third) allowed=$(awk -v n="$n" -v r="$rounds" -v c="$ratio" \
			'BEGIN { printf "%d", r + 2 + 2 * (1 - c) * n }') ;;
		esac
		if [[ $f == compute_third ]]; then
			echo "$f: $n samples, cpu_state on $on, off $off (off allowed: $allowed)"
			((off <= allowed)) || fail "$f: off CPU in $off of its $n samples"
		else
			echo "$f: $n samples, cpu_state on $on, off $off (on allowed: $allowed)"
			((on <= allowed)) || fail "$f: on CPU in $on of its $n samples"
		fi
	done
}

@test "2.1 wall mode: sleeping, waiting on a socket and computing show a third each (5 points), off, off and on CPU" {
	collector_start
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.8 3.11 3.12 3.13 3.15) \
		for_each_python thirds_wall_check
}

thirds_cpu_check() {
	local prof want
	prof=$(PYPROF_HZ=100 quiet cached_profile "$1-thirds-cpu" "$2" \
		"$PP_TARGETS/thirds.py" 1)
	tail -1 "$prof.stdout"
	want=$("$PP_HOST_PYTHON" -c 'import json,sys
print(int(100 * json.loads(open(sys.argv[1]).read().splitlines()[-1])["compute_cpu"]))' \
		"$prof.stdout")
	pprof_raw "$prof" >"$T/raw"
	grep -q '^samples/count cpu/nanoseconds' "$T/raw" ||
		fail "sample types are not samples/count cpu/nanoseconds"
	shares count "$T/raw" sleep_third socket_third compute_third | tee "$T/count"
	echo "compute_third's CPU time at 100 Hz: $want samples"
	awk -v want="$want" '$1 == "compute_third" { c = $2 }
	     $1 ~ /^(sleep|socket)_third$/ { w += $2 }
	     END { if (c < 0.9 * want - 2 || c < 10) { print "compute_third: too few samples"; exit 1 }
		   if (w > 2 + 0.02 * c) { print "the waiting functions have " w " CPU samples"; exit 1 } }' \
		"$T/count"
}

@test "2.2 CPU mode: the same program shows only the computing function" {
	collector_start
	# 2.1 ran this program on every interpreter in wall mode
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 3.13 system) \
		for_each_python thirds_cpu_check
}

# ---- 3. thread identity ------------------------------------------------

names_check() {
	local prof
	prof=$(PYPROF_MODE=wall PYPROF_HZ=100 cached_profile "$1-named" "$2" \
		"$PP_TARGETS/named_idle.py" 1)
	shares threads "$prof"
	checks names "$prof" "$prof.stdout"
}

@test "3.1 wall mode: ten idle named threads and a busy main thread show as eleven threads with their exact names" {
	collector_start
	for_each_python names_check
}

rename_check() {
	local prof secs=1
	[[ $4 == join ]] && secs=0.6
	prof=$(PYPROF_HZ=100 cached_profile "$1-rename-$4" "$2" \
		"$PP_TARGETS/rename.py" "$secs" "$4")
	shares threads "$prof"
	checks rename "$prof" "$prof.stdout"
}

@test "3.2 a renamed thread's new name appears (the main thread waits in join(0.05) calls)" {
	collector_start
	for_each_python rename_check poll
}

@test "3.3 thread names reach the profile while the main thread is blocked in join()" {
	# Most threaded programs block their main thread in join(); the names
	# must not depend on it running Python code.
	collector_start
	for_each_python rename_check join
}

# ---- 4. wall mode leaves blocked threads alone; GIL labels -------------

blocked_check() {
	local i f
	run_capture control "$2" "$PP_TARGETS/blocked.py" 0.5 --control 3
	((RC == 0)) || { cat "$T/control.err"; fail "control run exited $RC"; }
	# Alternating, twice each: the checks compare the best run of a side.
	for i in 1 2; do
		run_capture "plain$i" "$2" "$PP_TARGETS/blocked.py" 0.5
		((RC == 0)) || { cat "$T/plain$i.err"; fail "plain run exited $RC"; }
		PYPROF_MODE=wall PYPROF_HZ=1000 profile_once "$T/wall$i" "$2" \
			"$PP_TARGETS/blocked.py" 0.5
	done
	# The sampler did visit the blocked threads, 1000 times a second.
	shares threads "$T/wall1.pb.gz" | tee "$T/threads"
	for f in blocked-read blocked-nanosleep blocked-poll; do
		awk -F'\t' -v n="$f" '$2 == n && $3 >= 150 { ok = 1 } END { exit !ok }' \
			"$T/threads" || fail "thread $f was not sampled (150+ samples) in wall mode"
	done
	checks blocked "$T/control.out" --plain "$T/plain1.out" "$T/plain2.out" \
		--profiled "$T/wall1.pb.gz.stdout" "$T/wall2.pb.gz.stdout" \
		--sleep-tol-ms 1
}

@test "4.1 wall mode at 1 kHz does not interrupt blocked system calls (EINTR counts) nor delay time.sleep" {
	collector_start
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.8 3.12 3.15) for_each_python blocked_check
}

gil_check() {
	local prof
	prof=$(PYPROF_MODE=wall PYPROF_HZ=100 cached_profile "$1-gil" "$2" \
		"$PP_TARGETS/gil.py" 1.2)
	cat "$prof.stdout"
	checks gil "$prof" "$prof.stdout" --seconds 1.2
}

@test "4.2 wall mode: gil=held on the computing thread, gil=released on the sleeping one and the one in C" {
	collector_start
	for_each_python gil_check
}

# ---- 5. rates past the tick --------------------------------------------

rate_check() {
	local prof hz=$4
	prof=$(PYPROF_HZ=$hz cached_profile "$1-rate-$hz" "$2" \
		"$PP_TARGETS/rates.py" 1)
	cat "$prof.stdout"
	checks rate "$prof" "$prof.stdout" --hz "$hz" --func spin --tol 0.1
}

@test "5.1 at 1 kHz the samples number the rate times the CPU time, within 10% (3.8, 3.11, 3.13)" {
	collector_start
	PYPROF_TEST_PYTHONS="3.8 3.11 3.13" for_each_python rate_check 1000
}

@test "5.2 at 5 kHz the samples number the rate times the CPU time, within 10% (3.8, 3.11, 3.13)" {
	collector_start
	PYPROF_TEST_PYTHONS="3.8 3.11 3.13" for_each_python rate_check 5000
}

fork_check() {
	local prof hz=$4 tol=$5
	prof=$(PYPROF_HZ=$hz cached_profile "$1-fork-$hz" "$2" \
		"$PP_TARGETS/fork_rate.py" 0.5)
	cat "$prof.stdout"
	checks rate "$prof" "$prof.stdout" --hz "$hz" --func after_fork --tol "$tol"
}

# os.fork() is the same call on every version: 3.8, 3.11 and 3.13 as above.
@test "5.3 the parent's sampling at 1 kHz goes on after it forks a child (3.8, 3.11, 3.13)" {
	collector_start
	PYPROF_TEST_PYTHONS="3.8 3.11 3.13" for_each_python fork_check 1000 0.1
}

# 3.12+ pause the sampler around a fork from the main thread (forkpause.h)
# and start it again at the main thread's next bytecode: the parent's
# CPU time meanwhile is charged when it starts, not lost (it was: 0.89 to
# 0.97 of the rate times the CPU time on 3.12, 3.13 and 3.15 beside busy
# loops; 0.96 to 1.04 since).
@test "5.4 the parent's sampling at 100 Hz goes on after it forks a child, its time while paused charged (3.8, 3.11, 3.13, 3.15; 6%)" {
	collector_start
	PYPROF_TEST_PYTHONS="3.8 3.11 3.13 3.15" for_each_python fork_check 100 0.06
}

# ---- 6. one profile per thread -----------------------------------------

# per_thread_check NAME EXE KIND: threads_cpu.py (five threads) and
# named_idle.py (eleven, in wall mode) into a --per-thread collector.
per_thread_check() {
	local prog whole parts n i
	for prog in threads_cpu named_idle; do
		rm -f "$OUT"/*
		if [[ $prog == named_idle ]]; then
			PYPROF_MODE=wall run_capture "$prog" profiled "$2" \
				"$PP_TARGETS/$prog.py" 0.5
		else
			run_capture "$prog" profiled "$2" "$PP_TARGETS/$prog.py" 1
		fi
		((RC == 0)) || { cat "$T/$prog.err"; fail "$prog exited $RC"; }
		wait_profile "$PID" >/dev/null
		whole=$(ls "$OUT"/*."$PID".*.pb.gz | grep -v '\.tid[0-9]')
		# The thread files follow the whole profile's, in the same turn
		# of the collector's loop: wait until their number holds still.
		n=-1
		for ((i = 0; i < 50; i++)); do
			parts=("${whole%.pb.gz}".tid*.pb.gz)
			[[ -e ${parts[0]} && ${#parts[@]} == "$n" ]] && break
			n=${#parts[@]}
			sleep 0.1
		done
		printf '%s\n' "${parts[@]##*/}"
		checks per-thread "$whole" "${parts[@]}"
	done
	# named_idle: every one of its eleven threads has a file, with its name
	# (the non-ASCII one as '_'s).
	((${#parts[@]} == 11)) || fail "expected 11 per-thread files, got ${#parts[@]}"
	ls "$OUT" | grep -q '\.tid[0-9]*\.idle_worker__5_\.pb\.gz$' ||
		fail "no file named after thread 'idle worker (5)'"
}

@test "6.1 pyprof-collector --per-thread: one profile per thread beside the process's, each with only that thread's samples" {
	collector_start --per-thread
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 3.15) for_each_python per_thread_check
}

@test "6.2 pyprof record --per-thread: FILE.tid<TID>.<name>.pb.gz; a renamed thread has one file, under its new name, with the samples of both names" {
	local py
	read -r _ py _ < <(PYPROF_TEST_PYTHONS=3.11 pyprof_pythons)
	cd "$T"
	run_capture rec "$PP_PYPROF" record --per-thread -o app.pb.gz -- \
		"$py" "$PP_TARGETS/rename.py" 0.6 poll
	((RC == 0)) || { cat "$T/rec.err"; fail "pyprof record exited $RC"; }
	ls
	checks per-thread app.pb.gz app.tid*.pb.gz
	ls app.tid*.after-rename.pb.gz || fail "no file for the renamed thread under its new name"
	! ls app.tid*.before-rename.pb.gz 2>/dev/null ||
		fail "a file under the renamed thread's old name"
	shares threads app.tid*.after-rename.pb.gz | tee "$T/names"
	grep -q "	before-rename	" "$T/names" && grep -q "	after-rename	" "$T/names" ||
		fail "the renamed thread's file lacks the samples of one of its names"
	# --format makes no pprof file to put them beside.
	run_capture fmt "$PP_PYPROF" record --per-thread --format svg -- true
	((RC == 125)) && grep -q -- "--per-thread" "$T/fmt.err" ||
		fail "--per-thread --format svg: expected exit 125 and a word on --per-thread"
}

# ---- 7. names in forked and single-threaded processes ------------------

fork_names_check() {
	local parent child
	run_capture rec "$PP_PYPROF" record -o "$T/f.pb.gz" -- \
		"$2" "$PP_TARGETS/fork_named.py" 0.5
	((RC == 0)) || { cat "$T/rec.err"; fail "record exited $RC"; }
	parent=$(awk '$1 == "parent" { print $2 }' "$T/rec.out")
	child=$(awk '$1 == "child" { print $2 }' "$T/rec.out")
	shares threads "$T/f.pb.gz" | tee "$T/threads"
	# TID NAME SAMPLES: the main threads' tids are their pids
	awk -F'\t' '$2 == "<none>" { exit 1 }' "$T/threads" ||
		fail "samples without thread_name"
	awk -F'\t' -v p="$parent" '$1 == p && $2 == "MainThread" { ok = 1 } END { exit !ok }' \
		"$T/threads" || fail "the single-threaded parent's main thread is not MainThread"
	awk -F'\t' -v p="$child" '$1 == p && $2 == "MainThread" { ok = 1 } END { exit !ok }' \
		"$T/threads" || fail "the forked child's main thread is not MainThread"
	awk -F'\t' -v p="$parent" -v c="$child" \
		'$1 != p && $1 != c && $2 == "worker-in-child" { ok = 1 } END { exit !ok }' \
		"$T/threads" || fail "the thread the child started is not named"
}

@test "7.1 a forked child names the threads it starts and its main thread; a single-threaded process's main thread is MainThread" {
	for_each_python fork_names_check
}

# ---- 8. the rate achieved ----------------------------------------------

blocked_rate_check() {
	local ms n
	[[ $1 == 2.* ]] && { echo "   (no signal.pthread_sigmask)"; return 0; }
	run_capture rec "$PP_PYPROF" record -o "$T/b.pb.gz" -- \
		"$2" "$PP_TARGETS/sigprof_blocked.py" 0.6
	((RC == 0)) || { cat "$T/rec.err"; fail "record exited $RC"; }
	ms=$(cat "$T/rec.out")
	go tool pprof -raw "$T/b.pb.gz" >"$T/raw" 2>/dev/null
	if grep 'achieved' "$T/raw"; then
		fail "the profile says the rate achieved was off"
	fi
	# the samples (weights) still number the CPU time at 100 Hz
	n=$(shares count "$T/b.pb.gz" | awk -F'\t' '$1 == "*" { print $2 }')
	echo "   $n samples for $ms ms of CPU"
	awk -v n="$n" -v ms="$ms" 'BEGIN { e = ms / 10; exit !(n > 0.85 * e && n < 1.15 * e) }' ||
		fail "$n samples for $ms ms of CPU at 100 Hz"
}

@test "8.1 a thread that blocked SIGPROF for a while: its samples weigh the missed periods, and the rate achieved is not reported low" {
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.8 3.12 3.15) for_each_python blocked_rate_check
}
