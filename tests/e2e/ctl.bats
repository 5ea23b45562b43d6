#!/usr/bin/env bats
# ctl.bats - dormant until asked: PYPROF_START=off, the control channel,
# `pyprof ctl`, PYPROF_TOGGLE_SIGNAL.
#
# Programs measure themselves (tests/targets/dormant.py logs its own
# CLOCK_MONOTONIC and CPU clock; toggle.py signals itself, so it knows
# when sampling was asked for) and the profiles are read with the real
# `go tool pprof` (tests/lib/pprof_shares.py). What the library did is
# what it answers to `pyprof ctl status` (samples taken, SIGPROFs
# received, threads armed) and what /proc says (its timers, fds, threads).
# Tests that depend on the interpreter (where Python runs when sampling
# starts late, Python's signal module against the toggle) run every
# interpreter of tests/lib/pythons.sh at once, as processes side by side.
#
#   1.x  a dormant process arms nothing and costs nothing measurable
#   2.x  requests: a window of every process, overlapping requests,
#        processes that connect during one
#   3.x  the toggle signal, and a program that has its own handler
#   4.x  bad input: environment values, controller garbage, no collector

load ../lib/common

CHECKS=$PP_ROOT/tests/lib/ctl_checks.py

setup() {
	common_setup
}

teardown() {
	if [[ -n ${STOPFILE:-} ]]; then
		touch "$STOPFILE"
	fi
	common_teardown
}

checks() { "$PP_HOST_PYTHON" "$CHECKS" "$@"; }
ctl() { "$PP_PYPROF" ctl "$@" --socket "$SOCK"; }

# start_dormant: one tests/targets/dormant.py per interpreter, dormant
# (PYPROF_START=off), each logging to $T/<name>.log; PIDS and NAMES list
# them. Waits until the collector serves every one.
start_dormant() {
	local name exe kind i n
	PIDS=() NAMES=()
	STOPFILE=$T/stop
	while read -r name exe kind; do
		[[ $kind == missing ]] && fail "interpreter $name not found"
		PYPROF_START=off profiled "$exe" "$PP_TARGETS/dormant.py" \
			"$STOPFILE" >"$T/$name.log" 2>"$T/$name.err" 3>&- &
		PIDS+=($!)
		NAMES+=("$name")
	done < <(pyprof_pythons)
	n=${#PIDS[@]}
	((n > 0)) || fail "no interpreter selected"
	# each program's clock log has begun (its loop runs)
	for name in "${NAMES[@]}"; do
		wait_for_line "$T/$name.log" '^[0-9]+ [0-9]+$' 20
	done
	for ((i = 0; i < 200; i++)); do
		ctl status >"$T/status0" 2>&1 || true
		(($(grep -c '^pid=' "$T/status0") == n)) && return 0
		sleep 0.05
	done
	cat "$T/status0"
	fail "not all $n processes connected within 10 s"
}

# stop_dormant: ends them and waits; each must exit 0.
stop_dormant() {
	local i rc
	touch "$STOPFILE"
	for i in "${!PIDS[@]}"; do
		rc=0
		wait "${PIDS[$i]}" || rc=$?
		((rc == 0)) || {
			cat "$T/${NAMES[$i]}.err"
			fail "${NAMES[$i]} exited with $rc"
		}
	done
}

# no_timers PID: /proc/PID/timers lists no POSIX timer, and no fd of the
# process is a perf_event counter.
no_timers() {
	if grep -q '^ID:' "/proc/$1/timers"; then
		cat "/proc/$1/timers"
		fail "pid $1 has timers"
	fi
	if ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'perf_event'; then
		fail "pid $1 has a perf_event fd"
	fi
}

# ---- 1. dormant --------------------------------------------------------

@test "1.1 a dormant process arms no timer, receives no SIGPROF, takes no sample and has one thread of ours (every interpreter)" {
	collector_start
	start_dormant
	sleep 1.5
	ctl status >"$T/status"
	cat "$T/status"
	for i in "${!PIDS[@]}"; do
		p=${PIDS[$i]}
		echo "== ${NAMES[$i]} pid $p"
		grep -q "^pid=$p .*status=ok sampling=off origin=off" "$T/status"
		[[ $(checks field "$T/status" "$p" signals) == 0 ]]
		[[ $(checks field "$T/status" "$p" samples) == 0 ]]
		[[ $(checks field "$T/status" "$p" armed) == 0 ]]
		no_timers "$p"
		# the program's one thread and the agent: no names thread, no
		# wall sampler
		[[ $(ls "/proc/$p/task" | wc -l) == 2 ]]
	done
	stop_dormant
	collector_stop
	# nothing reached the collector but HELLO and BYE
	for p in "${PIDS[@]}"; do
		grep -q "pid $p connected: .* Hz (dormant)" "$T/collector.log"
		grep -q "pid $p disconnected (clean): 0 samples, 0 lost" \
			"$T/collector.log"
	done
}

@test "1.3 a dormant process never switched on writes no file at exit, not even the heap snapshots it asked for" {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.11 interpreter"
	collector_start
	# idle for 2.5 snapshot periods
	PYPROF_START=off PYPROF_HEAP_RATE=64k PYPROF_HEAP_SNAPSHOT_SECONDS=1 \
		run_capture idle profiled "$exe" -c 'import time; time.sleep(2.5)'
	assert_eq 0 "$RC" "exit status"
	wait_for_line "$T/collector.log" "pid $PID: no samples"
	# the same program sampling from the start does write its snapshots
	PYPROF_HEAP_RATE=64k PYPROF_HEAP_SNAPSHOT_SECONDS=1 \
		run_capture on profiled "$exe" -c '
import time
keep = []
end = time.time() + 2.5
while time.time() < end:
    keep.append(bytearray(4096))
    time.sleep(0.001)
'
	assert_eq 0 "$RC" "exit status"
	wait_profile "$PID" >/dev/null
	collector_stop
	ls -la "$OUT"
	ls "$OUT" | grep -q "\.$PID\..*\.heap\.0001\.pb\.gz" ||
		fail "no heap snapshot from the process that was sampling"
	if ls "$OUT" | grep -v "\.$PID\."; then
		fail "files written for the dormant process"
	fi
}

@test "1.2 a dormant library's own thread uses under 1% of a CPU while the program runs 3 s (its cost beside the program: make bench)" {
	collector_start
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.11 interpreter"
	# 3 s of work and sleep; then the CPU time, in clock ticks, of every
	# thread but the program's own (the library's agent), from /proc
	cat >"$T/work.py" <<'EOF'
import os, time
end = time.time() + 3
x = 0
while time.time() < end:
    for i in range(20000):
        x = (x * 31 + i) % 1000003
    time.sleep(0.01)
me, ticks, others = os.getpid(), 0, 0
for tid in os.listdir("/proc/self/task"):
    if int(tid) == me:
        continue
    others += 1
    f = open("/proc/self/task/%s/stat" % tid).read()
    fields = f[f.rindex(")") + 2:].split()
    ticks += int(fields[11]) + int(fields[12])   # utime, stime
print("%d %d %d" % (others, ticks, os.sysconf("SC_CLK_TCK")))
EOF
	PYPROF_START=off profiled "$exe" "$T/work.py" >"$T/out"
	cat "$T/out"
	read -r others ticks hz <"$T/out"
	# one thread of ours (the agent), and at most 1% of 3 s in it: it
	# wakes four times a second to look at its socket
	[[ $others == 1 ]] || fail "$others threads besides the program's"
	((ticks * 100 <= 3 * hz)) || fail "$ticks ticks of CPU in the library's thread"
}

# ---- 2. requests -------------------------------------------------------

@test "2.1 a 3-second request samples exactly those 3 s of every process, then sampling is off and stays off (every interpreter)" {
	collector_start --output "$T/all.pb.gz"
	start_dormant
	ctl start --seconds 3 >"$T/start"
	cat "$T/start"
	sleep 3.5
	ctl status >"$T/after"
	sleep 1
	ctl status >"$T/later"
	cat "$T/after" "$T/later"
	stop_dormant
	collector_stop
	total_own=0 total_prof=0
	for i in "${!PIDS[@]}"; do
		p=${PIDS[$i]}
		echo "== ${NAMES[$i]} pid $p"
		grep -q "^pid=$p .*status=ok sampling=on origin=request" "$T/start"
		grep -q "^pid=$p .*sampling=off origin=off" "$T/after"
		t0=$(checks field "$T/start" "$p" since_mono_ns)
		t1=$(checks field "$T/after" "$p" since_mono_ns)
		# the window is the request's 3 s (the collector's timer, and
		# the stop's way to the process)
		checks close "window ns" $((t1 - t0)) 3000000000 0.10
		# afterwards: no sample taken, no signal received, no timer
		[[ $(checks field "$T/after" "$p" samples) == \
			$(checks field "$T/later" "$p" samples) ]]
		[[ $(checks field "$T/after" "$p" signals) == \
			$(checks field "$T/later" "$p" signals) ]]
		[[ $(checks field "$T/later" "$p" armed) == 0 ]]
		own=$(checks cpu-between "$T/${NAMES[$i]}.log" "$t0" "$t1")
		prof=$(shares count "$T/all.pb.gz" --where "pid=$p" --value |
			awk -F'\t' '$1 == "*" {print $2}')
		# ~0.6 s of CPU each (10 processes on 2 CPUs): ~60 samples
		checks close "pid $p: profile CPU vs its own in the window" \
			"$prof" "$own" 0.35
		total_own=$((total_own + own))
		total_prof=$((total_prof + prof))
		# the profile names the program's function
		shares count "$T/all.pb.gz" work --where "pid=$p" |
			awk -F'\t' '$1 == "work" && $2 > 0 {ok=1} END {exit !ok}'
	done
	checks close "all processes: profile CPU vs their own" \
		"$total_prof" "$total_own" 0.12
}

# one_dormant: a single dormant 3.11 process (PID, $T/one.log).
one_dormant() {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.11 interpreter"
	STOPFILE=$T/stop
	PYPROF_START=off profiled "$exe" "$PP_TARGETS/dormant.py" \
		"$STOPFILE" >"$T/one.log" 2>"$T/one.err" 3>&- &
	PID=$!
	wait_for_line "$T/one.log" '^[0-9]+ [0-9]+$'
	for ((i = 0; i < 100; i++)); do
		ctl status --pid "$PID" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	fail "pid $PID did not connect"
}

@test "2.2 overlapping requests share one session: a shorter one inside a longer one, and a longer one that outlasts the first" {
	collector_start --output "$T/all.pb.gz"
	one_dormant
	# A 2 s, B 1 s inside it: B's end must not stop A's sampling
	ctl start --seconds 2 --pid "$PID" >"$T/a"
	sleep 0.3
	ctl start --seconds 1 --pid "$PID" >"$T/b"
	sleep 1.3 # B ended 0.3 s ago
	ctl status >"$T/mid"
	sleep 0.8 # A ended 0.4 s ago
	ctl status >"$T/end"
	cat "$T/a" "$T/b" "$T/mid" "$T/end"
	grep -q "sampling=on origin=request" "$T/mid"
	grep -q "sampling=off" "$T/end"
	t0=$(checks field "$T/a" "$PID" since_mono_ns)
	# B joined A's session: it did not restart sampling
	[[ $(checks field "$T/b" "$PID" since_mono_ns) == "$t0" ]]
	t1=$(checks field "$T/end" "$PID" since_mono_ns)
	checks close "first session ns" $((t1 - t0)) 2000000000 0.10
	# C 1 s, then D 2 s from 0.3 s in: D renews the lease, the
	# session ends with D, 2.3 s after it began
	ctl start --seconds 1 --pid "$PID" >"$T/c"
	sleep 0.3
	ctl start --seconds 2 --pid "$PID" >"$T/d"
	sleep 1 # C ended 0.3 s ago
	ctl status >"$T/mid2"
	sleep 1.4 # D ended 0.4 s ago
	ctl status >"$T/end2"
	cat "$T/c" "$T/d" "$T/mid2" "$T/end2"
	grep -q "sampling=on origin=request" "$T/mid2"
	grep -q "sampling=off" "$T/end2"
	t2=$(checks field "$T/c" "$PID" since_mono_ns)
	t3=$(checks field "$T/end2" "$PID" since_mono_ns)
	checks close "second session ns" $((t3 - t2)) 2300000000 0.10
	stop_dormant_one
	collector_stop
	own=$(($(checks cpu-between "$T/one.log" "$t0" "$t1") +
		$(checks cpu-between "$T/one.log" "$t2" "$t3")))
	prof=$(shares count "$T/all.pb.gz" --value |
		awk -F'\t' '$1 == "*" {print $2}')
	checks close "profile CPU vs the program's own in both sessions" \
		"$prof" "$own" 0.15
}

stop_dormant_one() {
	touch "$STOPFILE"
	wait "$PID"
}

@test "2.3 a process that connects while a request runs is sampled for the rest of it" {
	collector_start
	ctl start --seconds 3 >"$T/start" 2>"$T/start.err"
	cat "$T/start" "$T/start.err"
	grep -q "no process connected yet" "$T/start.err"
	one_dormant
	ctl status >"$T/status"
	cat "$T/status"
	grep -q "^pid=$PID .*sampling=on origin=request" "$T/status"
	# its lease ends with the request (plus the collector's margin)
	lease=$(checks field "$T/status" "$PID" lease_ms)
	((lease > 1000 && lease <= 5000))
	stop_dormant_one
}

@test "2.4 ctl stop switches off a process that samples by itself (PYPROF_START=on), and status says so" {
	collector_start
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	STOPFILE=$T/stop
	profiled "$exe" "$PP_TARGETS/dormant.py" "$STOPFILE" \
		>"$T/one.log" 2>"$T/one.err" 3>&- &
	PID=$!
	wait_for_line "$T/one.log" '^ready'
	sleep 0.5
	ctl status --pid "$PID" >"$T/s1"
	ctl stop --pid "$PID" >"$T/s2"
	sleep 0.5
	ctl status --pid "$PID" >"$T/s3"
	cat "$T/s1" "$T/s2" "$T/s3"
	grep -q "sampling=on origin=own" "$T/s1"
	grep -q "sampling=off" "$T/s2"
	grep -q "sampling=off" "$T/s3"
	no_timers "$PID"
	# a request's end brings back the process's own state: off now
	ctl start --seconds 1 --pid "$PID" >/dev/null
	sleep 1.5
	ctl status --pid "$PID" | grep -q "sampling=off"
	stop_dormant_one
}

@test "2.5 sampling goes on in a process after it spawns a subprocess (vfork on 3.10+ shares its memory until exec; every interpreter)" {
	collector_start
	PIDS=() NAMES=()
	while read -r name exe kind; do
		[[ $kind == missing ]] && fail "interpreter $name not found"
		profiled "$exe" "$PP_TARGETS/spawn_mid.py" >"$T/$name.out" \
			2>"$T/$name.err" 3>&- &
		PIDS+=($!)
		NAMES+=("$name")
	done < <(pyprof_pythons)
	# (checked in this shell, set -e: the first failure ends the test,
	# after the line naming its interpreter)
	for i in "${!PIDS[@]}"; do
		p=${PIDS[$i]} name=${NAMES[$i]}
		echo "== $name pid $p"
		wait "$p"
		[[ $(cat "$T/$name.out") == 0 ]]
		f=$(wait_profile "$p")
		shares count "$f" first second | tee "$T/$name.count"
		# second() is 0.3 s of CPU at 100 Hz: ~30 samples
		awk -F'\t' '$1 == "second" && $2 >= 15 {ok=1} END {exit !ok}' \
			"$T/$name.count"
	done
}

# waits_locks.py (two holders, two waiters on one lock) started dormant and
# without waits: `ctl start --waits` switches sampling and waits on, `ctl
# stop` both off; the files the collector writes at its exit hold the
# waits in between, compared with the program's log over the interval
# the two replies give (since_mono_ns: the program's perf_counter clock).
@test "2.6 ctl start --waits writes block and mutex files of a process started without waits, ctl stop ends them: shares as the program measured them in between (3.11, 3.14)" {
	collector_start
	check() {
		local name=$1 exe=$2 pid i t0 t1 f
		PYPROF_START=off profiled "$exe" "$PP_TARGETS/waits_locks.py" 2.5 \
			"$T/$name.json" >"$T/$name.out" 2>"$T/$name.err" 3>&- &
		pid=$!
		for ((i = 0; i < 100; i++)); do
			ctl status --pid "$pid" >/dev/null 2>&1 && break
			sleep 0.05
		done
		ctl start --waits --pid "$pid" >"$T/$name.start"
		sleep 1.2
		ctl stop --pid "$pid" >"$T/$name.stop"
		cat "$T/$name.start" "$T/$name.stop"
		grep -q 'sampling=on origin=request .* waits_ns=10000 ' "$T/$name.start"
		grep -q 'sampling=off' "$T/$name.stop"
		! grep -q 'waits_ns=' "$T/$name.stop" || fail "waits still on"
		t0=$(sed -n 's/.* since_mono_ns=\([0-9]*\).*/\1/p' "$T/$name.start")
		t1=$(sed -n 's/.* since_mono_ns=\([0-9]*\).*/\1/p' "$T/$name.stop")
		wait "$pid"
		# the mutex file is written last (after the CPU and block ones)
		for ((i = 0; i < 200; i++)); do
			f=$(ls "$OUT"/*."$pid".*.mutex.pb.gz 2>/dev/null) && break
			sleep 0.05
		done
		f=${f%.mutex.pb.gz}
		[[ -f $f.pb.gz && -f $f.block.pb.gz && -f $f.mutex.pb.gz ]] ||
			fail "no CPU, block or mutex file for pid $pid: $(ls "$OUT")"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/waits_check.py" locks-between \
			"$f.block.pb.gz" "$f.mutex.pb.gz" "$T/$name.json" "$t0" "$t1"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.14) for_each_python check
	run "$PP_PYPROF" ctl start --waits=0 --socket "$SOCK"
	echo "$output"
	((status == 2))
	[[ $output == *"--waits expects a rate from 1ns to 1s with its unit (ns, us, ms), such as 100us, or no value for 10us; not '0'"* ]]
	run "$PP_PYPROF" ctl status --waits --socket "$SOCK"
	((status == 2))
}

# ---- 3. the toggle signal ----------------------------------------------

@test "3.1 the toggle signal starts and stops sampling; a program that installs its own handler keeps it and pyprof says why (every interpreter)" {
	collector_start
	PIDS=() NAMES=()
	while read -r name exe kind; do
		[[ $kind == missing ]] && fail "interpreter $name not found"
		PYPROF_START=off PYPROF_TOGGLE_SIGNAL=SIGUSR2 profiled "$exe" \
			"$PP_TARGETS/toggle.py" >"$T/$name.out" \
			2>"$T/$name.err" 3>&- &
		PIDS+=($!)
		NAMES+=("$name")
	done < <(pyprof_pythons)
	# (checked in this shell, set -e: the first failure ends the test,
	# after the line naming its interpreter)
	n() { awk -F'\t' -v f="$1" '$1 == f {print $2}' "$T/$name.count"; }
	for i in "${!PIDS[@]}"; do
		p=${PIDS[$i]} name=${NAMES[$i]}
		echo "== $name pid $p"
		wait "$p"
		cat "$T/$name.out" "$T/$name.err"
		grep -q '"was_default": true' "$T/$name.out"
		grep -q '"mine": 1' "$T/$name.out"
		grep -q "PYPROF_TOGGLE_SIGNAL=SIGUSR2 is no longer available: the program installed its own" "$T/$name.err"
		[[ $(grep -c . "$T/$name.err") == 1 ]]
		f=$(wait_profile "$p")
		shares count "$f" before during after late >"$T/$name.count"
		cat "$T/$name.count"
		all=$(n '*')
		# during() is 0.3 s of CPU at 100 Hz: ~30 samples
		(($(n during) >= 15))
		(($(n before) == 0))
		(($(n late) == 0))
		# switching off takes the agent a moment: at most a sample or
		# two of after()
		(($(n after) <= 2))
		(($(n during) * 100 >= all * 90))
	done
}

@test "3.2 a toggle signal the program already handles (here: ignores) at start-up is left alone, with one line saying why" {
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	collector_start
	(
		trap '' USR2
		PYPROF_START=off PYPROF_TOGGLE_SIGNAL=12 exec \
			env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" "$exe" -c '
import os, signal
print(signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN)
os.kill(os.getpid(), signal.SIGUSR2)
print("alive")'
	) >"$T/out" 2>"$T/err" 3>&-
	cat "$T/out" "$T/err"
	[[ $(cat "$T/out") == $'True\nalive' ]]
	grep -q "PYPROF_TOGGLE_SIGNAL=SIGUSR2 is not available: the program already handles or ignores that signal" "$T/err"
	[[ $(grep -c . "$T/err") == 1 ]]
}

@test "3.3 a forked child follows its parent's own state: sampled from its start after the toggle turned the parent on, dormant after it turned it off" {
	collector_start
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	PYPROF_START=off PYPROF_TOGGLE_SIGNAL=SIGUSR2 profiled "$exe" \
		"$PP_TARGETS/fork_toggle.py" >"$T/out" 2>"$T/err"
	cat "$T/out" "$T/err"
	a=$(awk '$1 == "A" {print $2}' "$T/out")
	b=$(awk '$1 == "B" {print $2}' "$T/out")
	f=$(wait_profile "$a")
	shares count "$f" child_on | tee "$T/a.count"
	# 0.3 s of CPU at 100 Hz: ~30 samples
	awk -F'\t' '$1 == "child_on" && $2 >= 15 {ok=1} END {exit !ok}' \
		"$T/a.count"
	wait_for_line "$T/collector.log" "pid $b disconnected"
	grep -q "pid $b disconnected (clean): 0 samples" "$T/collector.log"
}

# ---- 4. bad input --------------------------------------------------------

@test "4.1 bad PYPROF_START and PYPROF_TOGGLE_SIGNAL values: one line naming the variable, profiling off, the program runs" {
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	for kv in PYPROF_START=maybe PYPROF_TOGGLE_SIGNAL=SIGKILL \
		PYPROF_TOGGLE_SIGNAL=SIGFOO PYPROF_TOGGLE_SIGNAL=0; do
		env "$kv" LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" "$exe" \
			-c 'print("ran")' >"$T/out" 2>"$T/err"
		cat "$T/err"
		[[ $(cat "$T/out") == ran ]]
		[[ $(grep -c . "$T/err") == 1 ]]
		grep -q "^pyprof.*${kv%%=*}=\"${kv#*=}\" is not valid: expected" "$T/err"
	done
}

@test "4.2 a malformed control request closes that connection only; the processes and other controllers carry on" {
	collector_start
	one_dormant
	"$PP_HOST_PYTHON" - "$SOCK" <<'EOF'
import socket, sys
for payload in (b"\x24\xff", b"\x24\x63", b"\xff" * 3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    hdr = (18 | (len(payload) << 8)).to_bytes(4, "little")
    s.sendall(hdr + payload)
    s.settimeout(5)
    assert s.recv(100) == b"", "the collector answered garbage"
    s.close()
# a library's reply where a controller belongs, and a down-going frame
# from a client
for t in (16, 32):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall((t | (2 << 8)).to_bytes(4, "little") + b"\x02\x01")
    s.settimeout(5)
    assert s.recv(100) == b""
    s.close()
EOF
	grep -c "protocol error" "$T/collector.log"
	(($(grep -c "protocol error" "$T/collector.log") == 5))
	ctl status >"$T/status"
	grep -q "^pid=$PID .*status=ok sampling=off" "$T/status"
	stop_dormant_one
}

@test "4.3 pyprof ctl without a collector, or with bad options, says so and exits 1 or 2" {
	run "$PP_PYPROF" ctl status --socket "$SOCKDIR/none.sock"
	echo "$output"
	((status == 1))
	[[ $output == *"no collector answers on $SOCKDIR/none.sock"* ]]
	for args in "" "go" "status --seconds 3" "start --hz 0" \
		"start --mode gpu" "start --pid x"; do
		run "$PP_PYPROF" ctl $args --socket "$SOCK"
		echo "$args: $output"
		((status == 2))
	done
}
