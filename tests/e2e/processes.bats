#!/usr/bin/env bats
# processes.bats - many processes into one collector: forked,
# spawned and exec'd children, pre-fork servers, shell and make trees, 32
# processes at once, a collector killed and restarted under running
# clients, clients of another user, --period windows and --merge labels.
#
# Everything is real: the library preloaded (through `pyprof record` or
# tests/lib/bin/profiled), real interpreters from tests/lib/pythons.sh, the
# real collector. The programs are tests/targets/procs.py, which prints
# "ROLE PID" for each process it makes, so that the test knows which pid
# must own which function. Profiles are read per pid by
# tests/lib/pprof_pb.py (a decoder of its own) and with go tool pprof.
#
# Interpreters: each test runs on the ones of the selection
# (PYPROF_TEST_PYTHONS) named in its pythons_of call, at least 3.11 and
# 2.7 or 3.6 where the feature exists (multiprocessing start methods need
# 3.4+); with none of those selected, on the selection's first.
#
# Rerun one test:  bats -f '5.1' tests/e2e/processes.bats

load ../lib/common

PB="$PP_HOST_PYTHON $PP_ROOT/tests/lib/pprof_pb.py"
PROCS=$PP_TARGETS/procs.py

setup() {
	common_setup
}

teardown() {
	common_teardown
}

# one_python V: sets PY to the interpreter pythons_of V picks first.
one_python() {
	local name kind
	read -r name PY kind < <(PYPROF_TEST_PYTHONS=$(pythons_of "$@") pyprof_pythons)
	[[ -x $PY ]] || fail "no interpreter for $*"
	echo "# on $name" >&3
}

# count FILE KEY: N from FILE's line "KEY N" (pprof_pb.py bypid), 0 if none.
count() {
	awk -v k="$2" '{ n = $NF; $NF = ""; sub(/ $/, ""); if ($0 == k) { print n; f = 1 } }
		END { if (!f) print 0 }' "$1"
}

# role_pid FILE ROLE: the pid procs.py printed for ROLE.
role_pid() {
	awk -v r="$2" '$1 == r { print $2; exit }' "$1"
}

# A command's summary line from pyprof record: "... N processes ...".
n_processes() {
	sed -nE 's/.*, ([0-9]+) process(es)?, .*/\1/p' "$1" | tail -1
}

# wait_log PATTERN [N]: until the collector log has N lines (default 1)
# with the fixed string PATTERN.
wait_log() {
	local i
	for ((i = 0; i < 300; i++)); do
		(($(grep -cF -- "$1" "$T/collector.log" || true) >= ${2:-1})) && return 0
		sleep 0.05
	done
	fail "fewer than ${2:-1} log lines with '$1':"
	cat "$T/collector.log" >&2
	return 1
}

# own_function BYPID PID FUNC MIN: FUNC has at least MIN samples under PID
# and none under any other pid.
own_function() {
	local file=$1 pid=$2 fn=$3 min=$4 n others
	n=$(count "$file" "$pid func $fn")
	((n >= min)) || fail "$fn: $n samples under its pid $pid (want >= $min)"
	others=$(grep -E "^[0-9]+ func $fn [0-9]+\$" "$file" | grep -v "^$pid " || true)
	[[ -z $others ]] || fail "$fn also under other pids: $others"
}

# ---- 1. children of one command, in one merged profile -------------------------

@test "1.1 fork, spawn and forkserver pool workers and a subprocess each show their own function under their own pid" {
	check() {
		local exe=$2 role pid parent pids=() n
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- \
			"$exe" "$PROCS" pools 0.5
		cat "$T/rec.out" "$T/rec.err"
		assert_eq 0 "$RC" "exit status"
		$PB bypid "$T/p.pb.gz" >"$T/bypid"
		parent=$(role_pid "$T/rec.out" parent)
		[[ -n $parent ]] || fail "no parent line"
		for role in fork spawn forkserver subprocess; do
			pid=$(role_pid "$T/rec.out" $role)
			[[ -n $pid && $pid != "$parent" ]] || fail "$role: pid '$pid'"
			pids+=("$pid")
			own_function "$T/bypid" "$pid" "work_$role" 10
		done
		n=$(printf '%s\n' "$parent" "${pids[@]}" | sort -u | wc -l)
		assert_eq 5 "$n" "distinct pids of parent and children"
		# Parent, three workers, the forkserver, the subprocess, and
		# the semaphore or resource tracker.
		n=$(n_processes "$T/rec.err")
		((n >= 6)) || fail "only $n processes reported"
		# The merged profile labels each process.
		grep -qE "^$parent label process=python" "$T/bypid" || fail "no process label"
		grep -qE "^$parent label command=.*procs\.py pools 0\.5 " "$T/bypid" ||
			fail "no command label for the parent"
		grep -qE "^${pids[3]} label command=.*procs\.py child 0\.5 " "$T/bypid" ||
			fail "no command label for the subprocess"
		grep -qE "^${pids[1]} label command=.*multiprocessing" "$T/bypid" ||
			fail "no command label for the spawn worker"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.6) for_each_python check
}

@test "1.2 a pre-fork server: parent and 4 workers, each worker's requests under its own pid" {
	check() {
		local exe=$2 parent pid workers
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- \
			"$exe" "$PROCS" prefork 4 2
		cat "$T/rec.out" "$T/rec.err"
		assert_eq 0 "$RC" "exit status"
		assert_eq 5 "$(n_processes "$T/rec.err")" "processes reported"
		$PB bypid "$T/p.pb.gz" >"$T/bypid"
		parent=$(role_pid "$T/rec.out" parent)
		workers=$(awk '$1 == "worker" { print $2 }' "$T/rec.out")
		assert_eq 4 "$(echo "$workers" | sort -u | wc -l)" "distinct workers"
		for pid in $workers; do
			[[ $pid != "$parent" ]] || fail "a worker has the parent's pid"
			n=$(count "$T/bypid" "$pid func handle_request")
			((n >= 8)) || fail "worker $pid: $n samples in handle_request"
		done
		assert_eq 0 "$(count "$T/bypid" "$parent func handle_request")" \
			"handle_request samples under the parent"
		n=$(count "$T/bypid" "$parent func client_prepare")
		((n >= 1)) || fail "parent: no sample in client_prepare"
		# Exactly these five pids have samples.
		assert_eq "$(printf '%s\n' "$parent" $workers | sort)" \
			"$($PB pids "$T/p.pb.gz" | sort)" "pids in the profile"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 2.7) for_each_python check
}

@test "1.3 a child forked from a thread whose thread function returns ends, status 0, as without the library; its samples under its pid" {
	check() {
		local exe=$2 pid
		run_capture plain "$exe" "$PROCS" threadfork 0.4
		assert_eq "threadchild status 0" "$(tail -1 "$T/plain.out")" \
			"the child's end without the library"
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- \
			"$exe" "$PROCS" threadfork 0.4
		cat "$T/rec.out" "$T/rec.err"
		assert_eq 0 "$RC" "exit status"
		assert_eq "threadchild status 0" "$(tail -1 "$T/rec.out")" \
			"the child's end with the library"
		pid=$(role_pid "$T/rec.out" threadchild)
		$PB bypid "$T/p.pb.gz" >"$T/bypid"
		own_function "$T/bypid" "$pid" work_threadchild 10
	}
	for_each_python check
}

# ---- 2. trees with non-Python processes -------------------------------------------

@test "2.1 a shell script running python three times: three processes report, output unchanged" {
	check() {
		local exe=$2 n
		cat >"$T/three.sh" <<-EOF
			#!/bin/sh
			echo "start \$1"
			"$exe" "$PROCS" short 0.3
			"$exe" "$PROCS" short 0.3 | tr a-z A-Z
			"$exe" "$PROCS" short 0.3 >&2
			echo "end"
		EOF
		chmod +x "$T/three.sh"
		run_capture plain "$T/three.sh" x
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- "$T/three.sh" x
		assert_eq 0 "$RC" "exit status"
		assert_same_file "$T/plain.out" "$T/rec.out" "stdout"
		head -n -1 "$T/rec.err" >"$T/rec.err.program"
		assert_same_file "$T/plain.err" "$T/rec.err.program" "stderr"
		tail -1 "$T/rec.err"
		assert_eq 3 "$(n_processes "$T/rec.err")" "processes reported"
		$PB bypid "$T/p.pb.gz" >"$T/bypid"
		assert_eq 3 "$(grep -cE '^[0-9]+ func short_work ' "$T/bypid")" \
			"pids with short_work samples"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 2.7) for_each_python check
}

@test "2.2 a make tree (make, sh, cc) with one python step: only python reports, the build is unchanged" {
	command -v cc >/dev/null || skip "no cc"
	check() {
		local exe=$2 d
		# A directory per interpreter: make must build everything anew.
		T=$T/$1
		for d in plain rec; do
			mkdir -p "$T/$d"
			printf '#include <stdio.h>\nint main(void) { puts("hello from cc"); return 0; }\n' \
				>"$T/$d/hello.c"
			if command -v make >/dev/null; then
				cat >"$T/$d/Makefile" <<-EOF
					all: hello.out gen.txt
					@echo "all done"
					hello: hello.c
					cc -O0 -o hello hello.c
					hello.out: hello
					./hello > hello.out
					sh -c 'tr a-z A-Z < hello.out; ls hello.c'
					gen.txt:
					$exe $PROCS short 0.3 > gen.txt
				EOF
				# Recipes start with a tab.
				sed -i -E 's/^(@echo|cc |\.\/hello|sh -c|\/)/\t\1/' "$T/$d/Makefile"
				# --no-print-directory: under `make check` (MAKELEVEL
				# set) make names its directory, which differs here.
				echo "make --no-print-directory" >"$T/$d/how"
			else
				cat >"$T/$d/build.sh" <<-EOF
					cc -O0 -o hello hello.c
					./hello > hello.out
					sh -c 'tr a-z A-Z < hello.out; ls hello.c'
					$exe $PROCS short 0.3 > gen.txt
				EOF
				echo "sh build.sh" >"$T/$d/how"
			fi
		done
		(cd "$T/plain" && $(cat how) >../plain.out 2>../plain.err) ||
			fail "the plain build failed: $(cat "$T/plain.err")"
		(cd "$T/rec" && "$PP_PYPROF" record -o ../p.pb.gz -- $(cat how) \
			>../rec.out 2>../rec.err) || fail "the build failed under pyprof: $(cat "$T/rec.err")"
		assert_same_file "$T/plain.out" "$T/rec.out" "the build's stdout"
		head -n -1 "$T/rec.err" >"$T/rec.err.program"
		assert_same_file "$T/plain.err" "$T/rec.err.program" "the build's stderr"
		assert_same_file "$T/plain/hello.out" "$T/rec/hello.out" "hello.out"
		assert_same_file "$T/plain/gen.txt" "$T/rec/gen.txt" "gen.txt"
		assert_eq "hello from cc" "$("$T/rec/hello")" "the binary cc built"
		tail -1 "$T/rec.err"
		assert_eq 1 "$(n_processes "$T/rec.err")" "processes reported"
		$PB bypid "$T/p.pb.gz" >"$T/bypid"
		grep -qE '^[0-9]+ func short_work ' "$T/bypid" ||
			fail "the python step has no samples"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 2.7) for_each_python check
}

# ---- 3. load ------------------------------------------------------------------------

@test "3.1 32 Python processes at 250 Hz into one collector: none dropped; collector CPU and memory reported" {
	local i pids=() pid f n total=0 other=0 cpu rss clk
	one_python 3.11
	collector_start --summary "$T/summary"
	for ((i = 0; i < 32; i++)); do
		PYPROF_HZ=250 profiled "$PY" "$PROCS" spin alpha 3 \
			>"$T/p$i.out" 2>"$T/p$i.err" </dev/null 3>&- &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || fail "process $pid failed: $(cat "$T"/p*.err)"
	done
	for pid in "${pids[@]}"; do
		f=$(wait_profile "$pid" 30)
		$PB bypid "$f" >"$T/bypid.$pid"
		n=$(count "$T/bypid.$pid" "$pid total")
		# Drops for want of room or of a collector: none. (A read of
		# the interpreter that faulted is not a drop: it is counted
		# apart, and shown.)
		! grep -E "leaf \[lost: (ring full|buffer full|collector away)\]" "$T/bypid.$pid" ||
			fail "pid $pid dropped samples"
		i=$(grep -F " leaf [lost: " "$T/bypid.$pid" | awk '{ s += $NF } END { print s + 0 }')
		if ((i > 0)); then
			echo "# pid $pid: $(grep -F " leaf [lost: " "$T/bypid.$pid" | cut -d' ' -f3-)" >&3
		fi
		other=$((other + i))
		n=$((n - i))
		((n >= 5)) || fail "pid $pid: only $n samples"
		total=$((total + n))
	done
	# Every process said BYE, and its count matched what arrived.
	assert_eq 32 "$(grep -c 'disconnected (clean)' "$T/collector.log")" "clean disconnects"
	! grep -q 'counted as lost' "$T/collector.log" || fail "$(grep 'counted as lost' "$T/collector.log")"
	clk=$(getconf CLK_TCK)
	cpu=$(awk -v c="$clk" '{ sub(/.*\) /, ""); print ($12 + $13) / c }' "/proc/$COLLECTOR_PID/stat")
	rss=$(awk '/VmHWM/ { print $2 }' "/proc/$COLLECTOR_PID/status")
	collector_stop
	grep -qE "^processes=32 samples=$total lost=$other\$" "$T/summary" ||
		fail "summary: $(cat "$T/summary"), profiles hold $total samples, $other lost"
	echo "# 32 processes at 250 Hz: $total samples, none dropped; collector CPU ${cpu} s, peak RSS ${rss} kB" >&3
}

# ---- 4. restart -----------------------------------------------------------------------

@test "4.1 the collector killed and restarted under 4 running processes: all 4 report to the new one, the gap counted as lost" {
	check() {
		local exe=$2 name pid pids=() f n took got told gap gap2 line
		T=$T/$1
		OUT=$T/profiles-1
		mkdir -p "$OUT"
		collector_start
		for name in alpha beta gamma delta; do
			profiled "$exe" "$PROCS" spin $name 10 >"$T/$name.out" \
				2>"$T/$name.err" </dev/null 3>&- &
			pids+=($!)
		done
		wait_log "connected:" 4
		sleep 2.5
		collector_kill
		sleep 1
		mv "$T/collector.log" "$T/collector-1.log"
		OUT=$T/profiles-2
		mkdir -p "$OUT"
		collector_start --summary "$T/summary"
		wait_log "reconnected from another collector" 4
		for pid in "${pids[@]}"; do
			wait "$pid" || fail "process $pid failed"
		done
		for name in alpha beta gamma delta; do
			pid=$(role_pid "$T/$name.out" $name)
			f=$(wait_profile "$pid" 20)
			$PB bypid "$f" >"$T/$name.bypid"
			n=$(count "$T/$name.bypid" "$pid func spin_$name")
			# Loose bounds: on a loaded machine four spinning
			# processes may get a fraction of a CPU each.
			((n >= 10)) || fail "$name: $n samples after the restart"
			gap=$(count "$T/$name.bypid" "$pid leaf [lost: collector away]")
			((gap >= 5)) || fail "$name: collector-away gap of $gap samples"
			line=$(grep -E "pid $pid: took [0-9]+ samples" "$T/collector.log") ||
				fail "$name: no line counting its gap"
			read -r took got told gap2 < <(echo "$line" |
				sed -E 's/.*took ([0-9]+) samples, of which this collector received ([0-9]+) and ([0-9]+) were written before: ([0-9]+) counted.*/\1 \2 \3 \4/')
			assert_eq "$gap" "$gap2" "$name: gap in the profile and in the log"
			# Killed, the first collector wrote nothing.
			assert_eq 0 "$told" "$name: samples written before"
			assert_eq "$took" "$((got + told + gap))" "$name: samples taken"
			# About 2.5 s of 10 went to the killed collector; CPU
			# shares wander on a loaded machine, hence only 5%.
			((gap * 20 >= took)) || fail "$name: gap $gap of $took is under 5%"
			echo "   $name: took $took samples; after the restart $got arrived," \
				"$gap were counted as collector away"
		done
		collector_stop
		grep -qE '^processes=4 samples=[0-9]+ lost=[1-9][0-9]*$' "$T/summary" ||
			fail "summary: $(cat "$T/summary")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 2.7) for_each_python check >"$BATS_TEST_TMPDIR/restart.out" 2>&1 ||
		{ cat "$BATS_TEST_TMPDIR/restart.out"; return 1; }
	sed 's/^/# /' "$BATS_TEST_TMPDIR/restart.out" >&3
}

# real_samples BYPID PID: samples of PID that are not [lost: ...] frames.
real_samples() {
	local total lost
	total=$(count "$1" "$2 total")
	lost=$(grep -F "$2 leaf [lost: " "$1" | awk '{ s += $NF } END { print s + 0 }')
	echo $((total - lost))
}

@test "4.2 the collector killed and restarted under --period: samples its windows had written are not counted as lost" {
	local pid f took got gap written=0 n line
	one_python 3.11
	OUT=$T/profiles-1
	mkdir -p "$OUT"
	collector_start --period 1
	profiled "$PY" "$PROCS" spin alpha 6 >"$T/alpha.out" 2>"$T/alpha.err" </dev/null 3>&- &
	pid=$!
	wait_log "connected:" 1
	# Windows end every second: let two or three be written, then kill.
	sleep 3.3
	collector_kill
	mv "$T/collector.log" "$T/collector-1.log"
	OUT=$T/profiles-2
	mkdir -p "$OUT"
	collector_start
	wait "$pid" || fail "the program failed: $(cat "$T/alpha.err")"
	f=$(wait_profile "$pid" 20)
	collector_stop
	# What the killed collector had written, per its files.
	for f1 in "$T"/profiles-1/*."$pid".*.pb.gz; do
		[[ -f $f1 ]] || continue
		$PB bypid "$f1" >"$T/w.bypid"
		n=$(real_samples "$T/w.bypid" "$pid")
		written=$((written + n))
	done
	((written > 0)) || fail "the first collector wrote no window"
	line=$(grep -E "pid $pid: took [0-9]+ samples, of which this collector received [0-9]+" "$T/collector.log") ||
		fail "no line counting its gap: $(cat "$T/collector.log")"
	read -r took got < <(echo "$line" |
		sed -E 's/.*took ([0-9]+) samples, of which this collector received ([0-9]+).*/\1 \2/')
	$PB bypid "$f" >"$T/new.bypid"
	gap=$(count "$T/new.bypid" "$pid leaf [lost: collector away]")
	# Taken = written by the first + received by the second + lost:
	# exactly, the gap being only what the first never wrote.
	assert_eq "$((took - got - written))" "$gap" "collector-away gap"
	grep -qF "and $written were written before: $gap counted" "$T/collector.log" ||
		fail "$line"
	echo "# took $took: the first collector wrote $written in its windows, the second received $got; $gap lost with the first" >&3
}

@test "4.4 the collector stopped (SIGTERM) and started again: what it wrote at exit is not counted as lost" {
	local pid f f1 took got gap written=0 n line
	one_python 3.11
	OUT=$T/profiles-1
	mkdir -p "$OUT"
	collector_start
	profiled "$PY" "$PROCS" spin alpha 4 >"$T/alpha.out" 2>"$T/alpha.err" </dev/null 3>&- &
	pid=$!
	wait_log "connected:" 1
	sleep 1.5
	collector_stop
	mv "$T/collector.log" "$T/collector-1.log"
	OUT=$T/profiles-2
	mkdir -p "$OUT"
	collector_start
	wait "$pid" || fail "the program failed: $(cat "$T/alpha.err")"
	f=$(wait_profile "$pid" 20)
	collector_stop
	f1=$(echo "$T"/profiles-1/*."$pid".*.pb.gz)
	[[ -f $f1 ]] || fail "the first collector wrote nothing at exit"
	$PB bypid "$f1" >"$T/w.bypid"
	written=$(real_samples "$T/w.bypid" "$pid")
	line=$(grep -E "pid $pid: took [0-9]+ samples, of which this collector received [0-9]+" "$T/collector.log") ||
		line="took 0 samples, of which this collector received 0"
	read -r took got < <(echo "$line" |
		sed -E 's/.*took ([0-9]+) samples, of which this collector received ([0-9]+).*/\1 \2/')
	$PB bypid "$f" >"$T/new.bypid"
	gap=$(count "$T/new.bypid" "$pid leaf [lost: collector away]")
	# Only what the library sent after the first had stopped reading
	# (a few samples at most) may be lost: at most 10 at 100 Hz.
	((gap <= 10)) || fail "$gap counted as lost, though the first collector wrote $written: $line"
	((took == 0 || took == got + written + gap)) ||
		fail "took $took != $got + $written + $gap"
	echo "# the first collector wrote $written at exit; $gap counted as lost" >&3
}

@test "4.3 a program that closes every descriptor: its second profile counts nothing as lost" {
	local pid f files=()
	one_python 3.11
	cat >"$T/closer.py" <<'PY'
import os, time

def spin(secs):
    end = time.time() + secs
    x = 0
    while time.time() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x

def before_close():
    spin(1.5)

def after_close():
    spin(1.5)

before_close()
os.closerange(3, 65536)  # as daemons do
after_close()
PY
	collector_start
	profiled "$PY" "$T/closer.py" >"$T/closer.out" 2>"$T/closer.err" </dev/null 3>&- &
	pid=$!
	wait "$pid" || fail "the program failed: $(cat "$T/closer.err")"
	wait_log "pid $pid disconnected (clean)" 1
	collector_stop
	files=("$OUT"/*."$pid".*.pb.gz)
	((${#files[@]} >= 1)) && [[ -f ${files[0]} ]] || fail "no profile: $(ls "$OUT")"
	for f in "${files[@]}"; do
		$PB bypid "$f" >"$T/b.bypid"
		! grep -F "[lost: collector away]" "$T/b.bypid" ||
			fail "$f counts samples as lost though all arrived"
	done
	! grep -F "counted as lost (collector away)" "$T/collector.log" ||
		fail "$(grep -F 'counted as lost (collector away)' "$T/collector.log")"
	echo "# ${#files[@]} profile(s) for pid $pid, nothing counted as lost" >&3
}

# ---- 5. who may send ----------------------------------------------------------------------

@test "5.1 a client of another user is refused and logged; --allow-user lets it in" {
	[[ $(id -u) == 0 ]] || skip "needs root to run a client as nobody"
	command -v setpriv >/dev/null || skip "no setpriv"
	[[ -x /usr/bin/python3 ]] || skip "no /usr/bin/python3"
	local d pid f
	# What nobody runs must be readable by nobody: a checkout under
	# /root is not, so copy the library and the program. pyenv's
	# interpreters live under /root too: Debian's python3.
	d=$(mktemp -d /tmp/pyprof-nobody.XXXXXX)
	cp "$PP_LIB" "$PROCS" "$d/"
	chmod 0755 "$d"
	chmod 0644 "$d/procs.py" "$d/libpyprof.so"
	as_nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			env LD_PRELOAD="$d/libpyprof.so" PYPROF_SOCKET="$SOCK" \
			/usr/bin/python3 "$d/procs.py" spin alpha 1.5 </dev/null 3>&-
	}

	collector_start
	[[ $(stat -c %a "$SOCK") == 600 && $(stat -c %a "$SOCKDIR") == 700 ]] ||
		fail "socket $(stat -c %a "$SOCK"), directory $(stat -c %a "$SOCKDIR")"
	# Open the way on purpose, so that only the credentials stand between.
	chmod 0711 "$SOCKDIR"
	chmod 0666 "$SOCK"
	as_nobody >"$T/n1.out" 2>"$T/n1.err" || fail "the program failed as nobody: $(cat "$T/n1.err")"
	pid=$(role_pid "$T/n1.out" alpha)
	wait_log "refused client pid $pid: uid 65534 is not ours (0)"
	# Logged once, however often the library tries again.
	assert_eq 1 "$(grep -c "refused client pid $pid:" "$T/collector.log")" "refusal lines"
	collector_stop
	! compgen -G "$OUT/*.$pid.*.pb.gz" >/dev/null || fail "a profile for the refused pid"

	chmod 0700 "$SOCKDIR"
	collector_start --allow-user nobody
	[[ $(stat -c %a "$SOCK") == 666 && $(stat -c %a "$SOCKDIR") == 711 ]] ||
		fail "with --allow-user: socket $(stat -c %a "$SOCK"), directory $(stat -c %a "$SOCKDIR")"
	grep -qF "clients of uid 65534 are allowed too" "$T/collector.log"
	as_nobody >"$T/n2.out" 2>"$T/n2.err" || fail "the program failed as nobody: $(cat "$T/n2.err")"
	pid=$(role_pid "$T/n2.out" alpha)
	f=$(wait_profile "$pid")
	$PB bypid "$f" | grep -qE "^$pid func spin_alpha [1-9]" || fail "no spin_alpha samples"
	grep -qF "pid $pid connected:" "$T/collector.log"
	collector_stop
	rm -rf "$d"
}

# ---- 6. continuous profiling ------------------------------------------------------------------

@test "6.1 --period writes successive windows of a long-running process, each covering its window only" {
	local pid files=() f i t d prev_end sum=0 n
	one_python 3.11
	collector_start --period 1 --summary "$T/summary"
	profiled "$PY" "$PROCS" spin alpha 4.2 >"$T/a.out" 2>"$T/a.err" </dev/null 3>&-
	pid=$(role_pid "$T/a.out" alpha)
	wait_log "pid $pid disconnected"
	collector_stop
	mapfile -t files < <(ls "$OUT"/*."$pid".*.pb.gz | sort)
	# At least four boundaries fall in 4.2 s; a window in which the
	# process got no CPU (a loaded machine) has no file.
	((${#files[@]} >= 3)) || fail "only ${#files[@]} windows: ${files[*]}"
	prev_end=
	for ((i = 0; i < ${#files[@]}; i++)); do
		f=${files[$i]}
		t=$($PB times "$f" | awk '$1 == "time_nanos" { print $2 }')
		d=$($PB times "$f" | awk '$1 == "duration_nanos" { print $2 }')
		((d > 0 && d <= 1000000000)) || fail "$f: duration $d ns"
		# Names sort by time, and each window starts where the last
		# ended (or whole periods later, past windows without samples),
		# on a whole second but for the first.
		if [[ -n $prev_end ]]; then
			((t >= prev_end && (t - prev_end) % 1000000000 == 0)) ||
				fail "$f: starts at $t, the previous window ended at $prev_end"
			((t % 1000000000 == 0)) || fail "$f: starts at $t, not on a second"
		fi
		# A middle window is exactly one period.
		if ((i > 0 && i < ${#files[@]} - 1)); then
			assert_eq 1000000000 "$d" "$f: duration"
		fi
		prev_end=$((t + d))
		n=$($PB bypid "$f" | awk -v k="$pid total" '$1 " " $2 == k { print $3 }')
		sum=$((sum + ${n:-0}))
	done
	# Together the windows hold every sample, once.
	grep -qE "^processes=1 samples=$sum lost=0\$" "$T/summary" ||
		fail "windows hold $sum samples; summary: $(cat "$T/summary")"
	echo "# ${#files[@]} windows, $sum samples" >&3
}

@test "6.2 --merge --period writes one profile per window with pid, process and command labels that go tool pprof filters on" {
	local a b pa pb files n
	one_python 3.11
	collector_start --merge --period 1
	profiled "$PY" "$PROCS" spin alpha 2.5 >"$T/a.out" 2>"$T/a.err" </dev/null 3>&- &
	a=$!
	profiled "$PY" "$PROCS" spin beta 2.5 >"$T/b.out" 2>"$T/b.err" </dev/null 3>&- &
	b=$!
	wait "$a" "$b"
	pa=$(role_pid "$T/a.out" alpha)
	pb=$(role_pid "$T/b.out" beta)
	wait_log "pid $pa disconnected"
	wait_log "pid $pb disconnected"
	collector_stop
	# Only merged files, and more than one of them.
	[[ -z $(ls "$OUT" | grep -v '^merged\.[0-9]\{8\}T[0-9]\{6\}Z\.pb\.gz$') ]] ||
		fail "other files: $(ls "$OUT")"
	files=("$OUT"/merged.*.pb.gz)
	((${#files[@]} >= 2)) || fail "only ${#files[@]} merged files"
	cat "${files[@]}" >/dev/null
	for f in "${files[@]}"; do
		$PB bypid "$f"
	done >"$T/bypid"
	grep -qE "^$pa label process=python" "$T/bypid" || fail "no process label for alpha"
	grep -qE "^$pa label command=.*procs\.py spin alpha 2\.5 " "$T/bypid" || fail "no command label for alpha"
	grep -qE "^$pb label command=.*procs\.py spin beta 2\.5 " "$T/bypid" || fail "no command label for beta"
	grep -qE "^$pa func spin_alpha " "$T/bypid" || fail "no spin_alpha under $pa"
	! grep -qE "^$pb func spin_alpha |^$pa func spin_beta " "$T/bypid" || fail "functions under the wrong pid"
	# go tool pprof, across all windows at once.
	go tool pprof -symbolize=none -tagfocus="pid=$pa" -top "${files[@]}" >"$T/focus" 2>&1
	grep -q spin_alpha "$T/focus" && ! grep -q spin_beta "$T/focus" ||
		fail "-tagfocus pid=$pa: $(cat "$T/focus")"
	go tool pprof -symbolize=none -tagignore="pid=$pa" -top "${files[@]}" >"$T/ignore" 2>&1
	grep -q spin_beta "$T/ignore" && ! grep -q spin_alpha "$T/ignore" ||
		fail "-tagignore pid=$pa: $(cat "$T/ignore")"
	go tool pprof -symbolize=none -tagfocus="command=spin beta" -top "${files[@]}" >"$T/cmd" 2>&1
	grep -q spin_beta "$T/cmd" && ! grep -q spin_alpha "$T/cmd" ||
		fail "-tagfocus command=spin beta: $(cat "$T/cmd")"
}
