#!/usr/bin/env bats
# attach.bats - `pyprof attach PID`: a running CPython process (started
# without the library) profiled for a window and left as it was; every
# refusal, one line each. Attach needs PEP 768 (3.14+): these tests run on
# the selected interpreters that have it, else on 3.14 and 3.15.

load ../lib/common

setup() {
	common_setup
	# the per-user directory of attach (its sockets and scripts) is
	# TMPDIR's: one of the test's own, short enough for a socket path
	ATTACH_TMP=$(mktemp -d /tmp/pyprof-at.XXXXXX)
	export TMPDIR=$ATTACH_TMP
	KIDS=()
}

teardown() {
	local k
	for k in "${KIDS[@]}"; do
		kill -9 "$k" 2>/dev/null || true
	done
	rm -rf "$ATTACH_TMP"
	common_teardown
}

# The interpreters pyprof can attach to among those selected (3.14+), or
# 3.14 and 3.15 when the selection has none.
attach_each() {
	local sel=() name exe kind
	while read -r name exe kind; do
		[[ $kind == missing ]] && continue
		[[ $name =~ ^3\.([0-9]+) ]] && ((BASH_REMATCH[1] >= 14)) &&
			sel+=("$name")
	done < <(pyprof_pythons)
	((${#sel[@]})) || sel=(3.14 3.15)
	PYPROF_TEST_PYTHONS="${sel[*]}" for_each_python "$@"
}

# start_target NAME EXE ARGS...: EXE ARGS in the background, stdout in
# $T/NAME.out, stderr in $T/NAME.err; TPID its pid; waits for "ready".
start_target() {
	local name=$1
	shift
	# a previous target's "ready" must not be read before the shell
	# that starts this one has truncated the file
	rm -f "$T/$name.out" "$T/$name.err"
	"$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/$name.out" '^ready$' 20
}

# finish_target NAME: waits for it; its exit status must be 0, its stderr
# empty, its output the lines given after NAME.
finish_target() {
	local name=$1 rc=0
	shift
	wait "$TPID" || rc=$?
	[[ $rc == 0 ]] || fail "target exited with status $rc"
	if [[ -s $T/$name.err ]]; then
		cat "$T/$name.err"
		fail "the target wrote on its stderr"
	fi
	printf '%s\n' "$@" >"$T/$name.expected"
	assert_same_file "$T/$name.expected" "$T/$name.out"
}

attach_shares() {
	local prof=$T/$1.pb.gz t0 t1
	start_target "$1" "$2" "$PP_TARGETS/attach_shares.py" 8 "$T/$1.calls"
	"$PP_PYPROF" attach "$TPID" --duration 3 --hz 250 -o "$prof" -v \
		>"$T/$1.att.out" 2>"$T/$1.att.err" ||
		{ cat "$T/$1.att.err"; fail "attach failed"; }
	# the window as the process itself saw it: when sampling started
	# and stopped, on its CLOCK_MONOTONIC (ctl's since_mono_ns)
	t0=$(sed -nE 's/.*ctl start: 0 .*since_mono_ns=([0-9]+).*/\1/p' \
		"$T/$1.att.err")
	t1=$(sed -nE 's/.*ctl stop: 0 .*since_mono_ns=([0-9]+).*/\1/p' \
		"$T/$1.att.err")
	[[ -n $t0 && -n $t1 ]] || { cat "$T/$1.att.err"; fail "no window"; }
	grep 'wrote ' "$T/$1.att.err"
	finish_target "$1" ready done
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/attach_window.py" \
		"$T/$1.calls" "$(echo "$t0" | sed -E 's/(.........)$/.\1/')" \
		"$(echo "$t1" | sed -E 's/(.........)$/.\1/')" >"$T/$1.truth"
	cat "$T/$1.truth"
	pprof_raw "$prof" >"$T/$1.raw"
	shares compare "$T/$1.raw" "$T/$1.truth" --tol 3 --min-samples 100
}

@test "attach --duration 3: shares within 3 points of the program's own clock; its output and status unchanged" {
	attach_each attach_shares
}

attach_twice() {
	local n
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" threads 9
	for n in 1 2; do
		"$PP_PYPROF" attach "$TPID" --duration 1 -o "$T/$1.$n.pb.gz" \
			2>"$T/$1.$n.err" || { cat "$T/$1.$n.err"; fail "attach $n"; }
		cat "$T/$1.$n.err"
		grep -q 'wrote .*[1-9][0-9]* samples' "$T/$1.$n.err" ||
			fail "attach $n wrote no samples"
		pprof_top "$T/$1.$n.pb.gz" | grep -q busy_ ||
			fail "attach $n: no busy_ function in the profile"
	done
	# one library, loaded once, dormant between
	[[ $(grep -c 'libpyprof.so' "/proc/$TPID/maps" | head -1) -ge 1 ]]
	[[ $(awk '/libpyprof.so/ {print $6}' "/proc/$TPID/maps" | sort -u |
		wc -l) == 1 ]] || fail "the library is mapped twice"
	finish_target "$1" ready done
}

@test "attach twice in a row: one library, left dormant, reused" {
	attach_each attach_twice
}

# attach_later: a later attach into a process whose library an earlier
# one loaded (plain: cpu mode, 100 Hz, no native stacks). Its profile is
# of its own window: Time within the command's run, Duration no longer
# than it, the period and the comment at its own --hz. What the library
# keeps from its first attach (the mode, native stacks) is refused in
# one line that says so, before any window: no profile, and no word of
# PYPROF_MODE, which the user never set.
attach_later() {
	local t0 t1 times tn dn rc line opt
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" threads 20
	"$PP_PYPROF" attach "$TPID" --duration 1 -o "$T/$1.1.pb.gz" \
		2>"$T/$1.1.err" || { cat "$T/$1.1.err"; fail "first attach"; }
	sleep 2 # the first window well before the second
	t0=$(date +%s%N)
	"$PP_PYPROF" attach "$TPID" --duration 1 --hz 500 -o "$T/$1.2.pb.gz" \
		2>"$T/$1.2.err" || { cat "$T/$1.2.err"; fail "second attach"; }
	t1=$(date +%s%N)
	cat "$T/$1.2.err"
	times=$("$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_pb.py" times "$T/$1.2.pb.gz")
	echo "$times"
	tn=$(awk '$1 == "time_nanos" { print $2 }' <<<"$times")
	dn=$(awk '$1 == "duration_nanos" { print $2 }' <<<"$times")
	((tn >= t0 && tn <= t1)) ||
		fail "Time $tn is not within the second attach's run ($t0 to $t1)"
	((dn >= 500000000 && dn <= t1 - t0)) ||
		fail "Duration $dn ns for a 1 s window run in $((t1 - t0)) ns"
	assert_eq 2000000 "$(awk '$1 == "period" { print $2 }' <<<"$times")" \
		"the period of a --hz 500 window"
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_pb.py" comments "$T/$1.2.pb.gz" |
		grep -q "cpu mode at 500 Hz" ||
		fail "the comment does not say 500 Hz: $("$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_pb.py" comments "$T/$1.2.pb.gz")"
	# what the library keeps is refused, in one line each, before a window
	for line in "--native:native stacks" "--mode wall:cpu mode"; do
		rc=0
		# shellcheck disable=SC2086 # the option and its value
		"$PP_PYPROF" attach "$TPID" --duration 1 ${line%%:*} \
			-o "$T/$1.3.pb.gz" 2>"$T/$1.3.err" || rc=$?
		cat "$T/$1.3.err"
		[[ $rc == 1 ]] || fail "attach ${line%%:*} exited $rc, not 1"
		[[ $(wc -l <"$T/$1.3.err") == 1 ]] ||
			fail "attach ${line%%:*}: not one line"
		grep -q -- "${line#*:}" "$T/$1.3.err" ||
			fail "attach ${line%%:*}: the line does not say ${line#*:}"
		opt=${line%%:*}
		grep -q -- "${opt%% *}" "$T/$1.3.err" ||
			fail "attach $opt: the line does not name ${opt%% *}"
		! grep -q PYPROF_ "$T/$1.3.err" ||
			fail "attach ${line%%:*} blames a PYPROF_ variable"
		[[ ! -e $T/$1.3.pb.gz ]] || fail "attach ${line%%:*} wrote a profile"
	done
	finish_target "$1" ready done
}

@test "a later attach: its profile's Time, Duration and rate are its window's; --native and another --mode, which the library keeps from its first attach, refused in one line" {
	attach_each attach_later
}

# attach_leftovers: what attach keeps in its per-user directory
# ($TMPDIR/pyprof-attach.UID: PID.py, the script the target runs, and
# PID.sock) is gone once it is of no use: the script once the library is
# in; both files of a target that ended in the window; the script of an
# attach that timed out once its request is withdrawn (at once: no thread
# will open it), and the process runs on as before.
attach_leftovers() {
	local dir port rc=0
	dir=$ATTACH_TMP/pyprof-attach.$(id -u)
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" sleep 3
	"$PP_PYPROF" attach "$TPID" --duration 1 -o "$T/$1.1.pb.gz" \
		2>"$T/$1.1.err" || { cat "$T/$1.1.err"; fail "attach"; }
	[[ ! -e $dir/$TPID.py ]] ||
		fail "the script is left behind once the library is in: $(ls "$dir")"
	finish_target "$1" ready done
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" sleep 1
	"$PP_PYPROF" attach "$TPID" --duration 4 -o "$T/$1.2.pb.gz" \
		2>"$T/$1.2.err" || { cat "$T/$1.2.err"; fail "attach"; }
	finish_target "$1" ready done
	[[ -z $(find "$dir" -name "$TPID.*") ]] ||
		fail "files of a target that ended in the window: $(ls "$dir")"
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" accept 0.3
	"$PP_PYPROF" attach "$TPID" --duration 1 --timeout 1 \
		-o "$T/$1.3.pb.gz" 2>"$T/$1.3.err" || rc=$?
	[[ $rc == 1 ]] || { cat "$T/$1.3.err"; fail "attach exited $rc, not 1"; }
	[[ ! -e $dir/$TPID.py ]] ||
		fail "the script of an attach that timed out stayed"
	port=$(awk '/^port/ {print $2}' "$T/$1.out")
	"$PP_HOST_PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
	finish_target "$1" "port $port" ready done
	[[ -z $(find "$dir" -name "$TPID.*") ]] ||
		fail "files of a target that timed out, then ran and ended: $(ls "$dir")"
}

@test "attach leaves no file behind: the script once the library is in, a target's files once it ended, the script of an attach that timed out" {
	attach_each attach_leftovers
}

# Heap from the moment of attach (tests/targets/attach_heap.py): blocks
# from before are kept and half of them freed inside the window; what the
# program allocated after is in use by its functions, as it measures it
# (sys.getsizeof), within 15% (sampling every 16 KiB: about 700 and 1,200
# samples, 15% is four standard errors); nothing from before is counted,
# and the window is as long as the program needs (Ctrl-C).
attach_heap() {
	local prof=$T/$1.pb.gz v ap rc=0 f a
	touch "$T/$1.go0"
	"$2" "$PP_TARGETS/attach_heap.py" "$T/$1.go0" "$T/$1.go0" \
		>"$T/$1.plain" 2>&1 </dev/null 3>&- ||
		fail "the program alone failed"
	start_target "$1" "$2" "$PP_TARGETS/attach_heap.py" "$T/$1.go" \
		"$T/$1.end"
	"$PP_PYPROF" attach "$TPID" --heap --heap-rate 16384 -o "$prof" -v \
		>"$T/$1.att.out" 2>"$T/$1.att.err" </dev/null 3>&- &
	ap=$!
	KIDS+=("$ap")
	wait_for_line "$T/$1.att.err" "attached to process $TPID" 20
	touch "$T/$1.go"
	wait_for_line "$T/$1.out" '^\{' 30
	kill -INT "$ap"
	wait "$ap" || rc=$?
	cat "$T/$1.att.err"
	[[ $rc == 0 ]] || fail "attach exited with status $rc"
	touch "$T/$1.end"
	wait "$TPID" || fail "the target exited with status $?"
	[[ ! -s $T/$1.err ]] || { cat "$T/$1.err"; fail "target's stderr"; }
	assert_same_file "$T/$1.plain" "$T/$1.out" "the program's output"
	[[ -s $T/$1.heap.pb.gz ]] || fail "no heap profile beside $prof"
	# alloc_objects alloc_space inuse_objects inuse_space (then the
	# peak's), per function
	for f in after_small after_big before_small before_big churn; do
		v=$($HEAP_CHECK values "$T/$1.heap.pb.gz" "$f")
		echo "$f: $v (program: $(want "$1" "$f"))"
		read -ra a <<<"$v"
		case $f in
		after_*) within "${a[3]}" "$(want "$1" "$f")" 15 "$f in use" ;;
		before_*) [[ $v =~ ^0( 0)*$ ]] ||
			fail "$f allocated before the attach, counted: $v" ;;
		churn) ((a[1] > 0 && a[3] * 100 < a[1])) ||
				fail "churn: allocated ${a[1]}, in use ${a[3]}" ;;
		esac
	done
}

# want NAME KEY: the program's own figure from its JSON line
want() {
	"$PP_HOST_PYTHON" -c 'import json, sys
print(json.loads(open(sys.argv[1]).read().splitlines()[1])[sys.argv[2]])' \
		"$T/$1.out" "$2" 2>/dev/null || echo 0
}

# within GOT WANT PCT WHAT
within() {
	(($2 > 0)) || fail "$4: nothing to compare with"
	local d=$(($1 - $2))
	((d < 0)) && d=$((-d))
	((d * 100 <= $2 * $3)) || fail "$4: $1, $2 by the program's own measure (over $3%)"
}

@test "attach --heap: what the program allocated after the attach, in use by its functions within 15%; blocks from before freed uncounted" {
	HEAP_CHECK="$PP_HOST_PYTHON $PP_ROOT/tests/lib/heap_check.py"
	attach_each attach_heap
}

# attach_waits NAME EXE: attach --waits for 1 s into a process whose
# threads contend for one lock (tests/targets/attach_waits.py): the block
# profile has each waiting function's waits and some for the GIL, the
# mutex profile charges the long holder with most of them (8 ms holds
# against 2 ms: about 90% by the overlap, a third by Go's charge at
# release). On 3.14 the library comes with --waits; on 3.15 a first
# attach without them loads it, and the second asks for waits for its
# window (pyprof ctl start --waits).
attach_waits() {
	start_target "$1" "$2" "$PP_TARGETS/attach_waits.py" "$T/$1.stop"
	if [[ $1 == 3.15* ]]; then
		"$PP_PYPROF" attach "$TPID" --duration 1 -o "$T/$1.first.pb.gz" \
			2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "first attach"; }
		[[ ! -e $T/$1.first.block.pb.gz ]] || fail "waits without --waits"
	fi
	"$PP_PYPROF" attach "$TPID" --waits --duration 1 -o "$T/$1.pb.gz" \
		2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "attach"; }
	touch "$T/$1.stop"
	cat "$T/$1.att.err"
	grep -qE "wrote $T/$1.block.pb.gz \(block profile, [1-9][0-9]* waits\)" "$T/$1.att.err" ||
		fail "the block profile is not named"
	grep -qE "wrote $T/$1.mutex.pb.gz \(mutex profile, [1-9][0-9]* waits\)" "$T/$1.att.err" ||
		fail "the mutex profile is not named"
	finish_target "$1" ready done
	"$PP_HOST_PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
import pprof_raw

def cum(path):
    """delay per function anywhere on the stack (once per sample)"""
    _, samples, locs, _ = pprof_raw.parse(pprof_raw.decode(path))
    out = {}
    for s in samples:
        for name in {locs[l][0] for l in s["locs"]}:
            out[name] = out.get(name, 0) + s["value"]
    return out

block, mutex = cum(sys.argv[2]), cum(sys.argv[3])
print("block ms:", {k: round(v / 1e6, 1) for k, v in block.items()
                    if k in ("wait_a", "wait_b", "hold_short", "hold_long", "[GIL]")})
print("mutex ms:", {k: round(v / 1e6, 1) for k, v in mutex.items()
                    if k in ("wait_a", "wait_b", "hold_short", "hold_long")})
for f in ("wait_a", "wait_b", "hold_short", "[GIL]"):
    assert block.get(f, 0) > 0, "no waits of %s in the block profile" % f
four = sum(mutex.get(f, 0) for f in ("wait_a", "wait_b", "hold_short", "hold_long"))
share = 100.0 * mutex.get("hold_long", 0) / four if four else 0
print("hold_long charged %.1f%% of the waiting in the mutex profile" % share)
assert share >= 70, "hold_long charged %.1f%% only" % share
' "$PP_ROOT/tests/lib" "$T/$1.block.pb.gz" "$T/$1.mutex.pb.gz" ||
		fail "the waits seen after the attach"
}

@test "attach --waits: block and mutex profiles of the window, each waiting function in them, the long holder charged most (3.15: at a second attach)" {
	attach_each attach_waits
}

attach_fifty() {
	# (long enough for a loaded machine: the main thread, where the
	# attach script runs, shares the GIL with 50 others)
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" threads 8
	# CPU mode: every thread that existed before the attach got its CPU
	# timer (the 50 workers and the main thread: armed=51 or more when sampling
	# started; which of them the GIL lets run is not ours to say)
	"$PP_PYPROF" attach "$TPID" --duration 1 -v -o "$T/$1.cpu.pb.gz" \
		2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "attach"; }
	grep -E 'ctl start: 0 .*status=ok sampling=on .*armed=5[1-9] ' \
		"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "not 51 armed"; }
	finish_target "$1" ready done
	# wall mode: each thread's stack, named, sampled
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" threads 8
	"$PP_PYPROF" attach "$TPID" --duration 2 --mode wall \
		-o "$T/$1.pb.gz" 2>"$T/$1.att.err" ||
		{ cat "$T/$1.att.err"; fail "attach"; }
	shares threads "$T/$1.pb.gz" >"$T/$1.threads"
	[[ $(grep -c 'worker-' "$T/$1.threads") == 50 ]] || {
		cat "$T/$1.threads"
		fail "not every one of the 50 threads was sampled"
	}
	for i in 0 17 49; do
		pprof_top "$T/$1.pb.gz" | grep -q " busy_$i\$" ||
			fail "busy_$i is not in the profile"
	done
	finish_target "$1" ready done
}

@test "attach to a process with 50 threads started before: every one sampled" {
	attach_each attach_fifty
}

attach_sleep() {
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" sleep 5
	"$PP_PYPROF" attach "$TPID" --duration 1 --mode wall \
		-o "$T/$1.pb.gz" 2>"$T/$1.att.err" ||
		{ cat "$T/$1.att.err"; fail "attach"; }
	pprof_top "$T/$1.pb.gz" | tee "$T/$1.top" | grep -q ' nap$' ||
		fail "wall mode: the sleeping function is not in the profile"
	finish_target "$1" ready done
}

@test "attach to a process sleeping in time.sleep (wall mode)" {
	attach_each attach_sleep
}

attach_accept() {
	local port rc=0
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" accept 0.5
	# the only thread is blocked in accept(): no bytecode runs, so the
	# library cannot be loaded; attach says so, what the main thread is
	# blocked in and what to do, withdraws its request and leaves
	# nothing behind
	"$PP_PYPROF" attach "$TPID" --duration 1 --timeout 2 \
		-o "$T/$1.pb.gz" 2>"$T/$1.att.err" || rc=$?
	cat "$T/$1.att.err"
	[[ $rc == 1 ]] || fail "attach exited $rc, not 1"
	grep -q "ran no Python code within 2 s: its main thread is blocked in one call (accept" "$T/$1.att.err"
	grep -qF "\`pyprof dump $TPID\` reads its stacks from outside" \
		"$T/$1.att.err" || fail "no word of pyprof dump"
	[[ $(wc -l <"$T/$1.att.err") == 1 ]] || fail "more than one line"
	[[ ! -e $ATTACH_TMP/pyprof-attach.$(id -u)/$TPID.py ]] ||
		fail "the script stayed: the request was not withdrawn"
	# once it runs again it finds no request and does nothing
	port=$(awk '/^port/ {print $2}' "$T/$1.out")
	"$PP_HOST_PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
	# checked while it naps after accept (0.5 s), not once it is gone
	sleep 0.2
	if grep -q libpyprof.so "/proc/$TPID/maps"; then
		fail "the library was loaded once the target ran again"
	fi
	finish_target "$1" "port $port" ready done
}

@test "attach to a process blocked in socket.accept: one line naming the call and pyprof dump, the request withdrawn, nothing loaded later" {
	attach_each attach_accept
}

# The main thread blocked in one call that does not return for seconds
# (join, a lock, accept, time.sleep) while another thread runs Python
# code: that thread takes the request and the library loads; the
# profile has the worker's function, the program's output, status and
# stderr are unchanged, and the script's file is gone once the library
# is in. Before, attach waited for the main thread and gave up.
attach_main_blocked() {
	local how
	for how in join lock accept sleep; do
		start_target "$1.$how" "$2" "$PP_TARGETS/attach_blocked.py" \
			"main-$how" 4
		"$PP_PYPROF" attach "$TPID" --duration 1 --hz 250 --timeout 3 \
			-o "$T/$1.$how.pb.gz" 2>"$T/$1.$how.att.err" ||
			{ cat "$T/$1.$how.att.err"; fail "attach: main in $how"; }
		[[ ! -e $ATTACH_TMP/pyprof-attach.$(id -u)/$TPID.py ]] ||
			fail "$how: the script stayed"
		pprof_top "$T/$1.$how.pb.gz" | grep -q ' work_loop$' ||
			fail "$how: work_loop is not in the profile"
		finish_target "$1.$how" ready done
	done
}

@test "attach to a process whose main thread is blocked in join, a lock, accept or sleep while another thread runs Python: loaded through that thread" {
	attach_each attach_main_blocked
}

attach_collector() {
	local prof
	collector_start
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" threads 5
	"$PP_PYPROF" attach "$TPID" --collector "$SOCK" 2>"$T/$1.att.err" ||
		{ cat "$T/$1.att.err"; fail "attach --collector"; }
	grep -q "now reports to $SOCK" "$T/$1.att.err"
	"$PP_PYPROF" ctl status --socket "$SOCK" --pid "$TPID" |
		grep -q 'sampling=on'
	finish_target "$1" ready done
	prof=$(wait_profile "$TPID")
	pprof_top "$prof" | grep -q busy_
}

@test "attach --collector: the process joins a running collector, sampling" {
	attach_each attach_collector
}

# refused PATTERN CMD...: CMD exits 1 with one line on stderr matching
# PATTERN.
refused() {
	local pat=$1 rc=0
	shift
	"$@" >"$T/ref.out" 2>"$T/ref.err" || rc=$?
	cat "$T/ref.err"
	[[ $rc == 1 ]] || fail "exit status $rc, not 1"
	[[ $(wc -l <"$T/ref.err") == 1 ]] || fail "not one line"
	grep -qE "$pat" "$T/ref.err" || fail "no '$pat'"
	[[ ! -s $T/ref.out ]]
}

attach_refusals() {
	local yama
	# remote debugging switched off, both ways
	PYTHON_DISABLE_REMOTE_DEBUG=1 start_target "$1-env" "$2" \
		"$PP_TARGETS/attach_blocked.py" sleep 2
	refused 'remote debugging is off in process [0-9]+ .*PYTHON_DISABLE_REMOTE_DEBUG' \
		"$PP_PYPROF" attach "$TPID" --duration 1
	finish_target "$1-env" ready done
	start_target "$1-x" "$2" -X disable-remote-debug \
		"$PP_TARGETS/attach_blocked.py" sleep 2
	refused 'remote debugging is off' "$PP_PYPROF" attach "$TPID"
	finish_target "$1-x" ready done
	# another user's process, without CAP_SYS_PTRACE
	start_target "$1-user" "$2" "$PP_TARGETS/attach_blocked.py" sleep 3
	refused "process $TPID belongs to root: attaching needs the same user or CAP_SYS_PTRACE" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		--inh-caps=-all --bounding-set=-all \
		"$PP_PYPROF" attach "$TPID"
	# Yama, each setting
	yama=$T/ptrace_scope
	for s in 1 2; do
		echo "$s" >"$yama"
		refused "Yama ptrace_scope is $s" env PYPROF_TEST_YAMA_FILE="$yama" \
			setpriv --reuid=0 --inh-caps=-all --bounding-set=-sys_ptrace \
			"$PP_PYPROF" attach "$TPID"
	done
	echo 3 >"$yama"
	refused 'Yama ptrace_scope is 3: no process may be attached to until reboot; start the program with PYPROF_START=off' \
		env PYPROF_TEST_YAMA_FILE="$yama" "$PP_PYPROF" attach "$TPID"
	finish_target "$1-user" ready done
	# another mount namespace
	start_target "$1-ns" unshare -m "$2" "$PP_TARGETS/attach_blocked.py" sleep 2
	TPID=$(pgrep -P "$TPID" -f attach_blocked.py || echo "$TPID")
	refused 'is in another mount namespace .*run pyprof inside it' \
		"$PP_PYPROF" attach "$TPID"
}

@test "refusals: remote debugging off, another user, Yama, another namespace" {
	attach_each attach_refusals
}

@test "refusals: no such process, not Python, Python before 3.14; --heap with --format" {
	local old i
	refused '^pyprof: error: no process 4194303$' "$PP_PYPROF" attach 4194303
	sleep 5 &
	KIDS+=($!)
	# (the forked shell is not sleep until it has exec'd)
	for ((i = 0; i < 100; i++)); do
		[[ $(cat "/proc/$!/comm" 2>/dev/null) == sleep ]] && break
		sleep 0.05
	done
	refused "process $! \(sleep\) is not a Python process" \
		"$PP_PYPROF" attach "$!"
	old=$(pyprof_pythons | awk '$1 ~ /^3\.11/ {print $2; exit}')
	[[ -n $old ]] || old=/usr/bin/python3
	start_target old "$old" "$PP_TARGETS/attach_blocked.py" sleep 2
	refused "runs Python 3\.[0-9]+, which has no safe point .*PEP 768.*pyprof record --pid [0-9]+. profiles it from outside.*PYPROF_START=off LD_PRELOAD=.*pyprof ctl start" \
		"$PP_PYPROF" attach "$TPID"
	refused "^pyprof: error: process $TPID runs Python 3\.[0-9]+: pyprof dump --native reads stacks with the interpreter's own remote unwinder, which came in 3\.14 \(.pyprof dump $TPID. without --native reads its Python stacks\)$" \
		"$PP_PYPROF" dump "$TPID" --native
	finish_target old ready done
	run_capture heapfmt "$PP_PYPROF" attach "$TPID" --heap --format svg
	assert_eq 2 "$RC" "exit status of --heap --format svg"
	grep -q '^pyprof: error: --heap writes pprof files only' "$T/heapfmt.err"
}

dump_ten() {
	local i tid
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" ten 4
	"$PP_PYPROF" dump "$TPID" >"$T/$1.dump" 2>"$T/$1.dump.err" ||
		{ cat "$T/$1.dump.err"; fail "dump"; }
	cat "$T/$1.dump"
	[[ ! -s $T/$1.dump.err ]]
	head -1 "$T/$1.dump" | grep -q "^Process $TPID: "
	# the main thread, blocked in join, and each sleeper in its function
	grep -A1 "^Thread $TPID \"MainThread\"$" "$T/$1.dump" | tail -1 |
		grep -qE '^    .*(join|wait|acquire) \(.*threading.py:[0-9]+\)$'
	for i in 0 1 2 3 4 5 6 7 8 9; do
		tid=$(grep -l "^sleeper-$i\$" /proc/"$TPID"/task/*/comm |
			awk -F/ '{print $5}')
		grep -A1 "^Thread $tid \"sleeper-$i\"$" "$T/$1.dump" | tail -1 |
			grep -qE "^    sleeper_$i \(<string>:2\)$" ||
			fail "sleeper-$i ($tid) is not named with its function"
	done
	[[ $(grep -c '^Thread ' "$T/$1.dump") == 11 ]]
	# nothing was loaded into it, and it went on as before
	if grep -q libpyprof.so "/proc/$TPID/maps"; then
		fail "the library was loaded"
	fi
	finish_target "$1" ready done
}

@test "dump: a process with 10 threads, each named with its innermost function" {
	attach_each dump_ten
}

# dump of a process started with the library: through its collector's
# HTTP server (a window in its own mode: wall here), any version; no attach, the
# program's output unchanged. A collector without HTTP: one line.
dump_ctl_ten() {
	local i
	PYPROF_SOCKET=$SOCK PYPROF_START=off PYPROF_MODE=wall \
		LD_PRELOAD=$PP_LIB \
		start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" ten 4
	"$PP_PYPROF" dump "$TPID" >"$T/$1.dump" 2>"$T/$1.dump.err" ||
		{ cat "$T/$1.dump.err"; fail "dump"; }
	cat "$T/$1.dump"
	[[ ! -s $T/$1.dump.err ]]
	head -1 "$T/$1.dump" | grep -q "^Process $TPID: through its collector on $SOCK "
	for i in 0 1 2 3 4 5 6 7 8 9; do
		# the name label can miss a 1 s window of a just-woken
		# process (read every 250 ms): "?" then (see the report)
		grep -A1 -E "^Thread [0-9]+ \"(sleeper-$i|\?)\"$" "$T/$1.dump" |
			grep -qE "^    sleeper_$i \(<string>:2\)$" ||
			fail "sleeper-$i: no thread with its function"
	done
	[[ $(grep -c '^Thread ' "$T/$1.dump") == 11 ]]
	[[ -z $(find "$ATTACH_TMP" -name "$TPID.sock" 2>/dev/null) ]] ||
		fail "dump attached"
	finish_target "$1" ready done
}

@test "dump of a process started with the library: every thread and its function through the collector" {
	local name exe kind last=
	collector_start --http 0
	wait_for_line "$SOCK.http-addr" . 10
	while read -r name exe kind; do
		[[ $kind == missing ]] && continue
		dump_ctl_ten "$name" "$exe"
		last=$exe
	done < <(PYPROF_TEST_PYTHONS="${PYPROF_TEST_PYTHONS:-3.8 3.11 3.14}" pyprof_pythons)
	collector_stop
	collector_start
	PYPROF_SOCKET=$SOCK PYPROF_START=off LD_PRELOAD=$PP_LIB \
		start_target nohttp "$last" "$PP_TARGETS/attach_blocked.py" ten 2
	refused "process $TPID reports to the collector on $SOCK, which serves no HTTP" \
		"$PP_PYPROF" dump "$TPID"
	finish_target nohttp ready done
	collector_stop
}

# block FILE NAME: the lines of thread NAME's stack in dump FILE
block() {
	awk -v h="\"$2\"" '/^Thread / { on = ($3 == h); next } on' "$1"
}

# in_order FILE RE...: each RE matches a line of FILE, in this order
in_order() {
	local f=$1 at=0 n
	shift
	for re in "$@"; do
		# (the pattern through the environment: -v would eat its \\)
		n=$(RE=$re awk -v a="$at" \
			'NR > a && $0 ~ ENVIRON["RE"] { print NR; exit }' "$f")
		[[ -n $n ]] || { cat "$f"; fail "no line /$re/ after line $at"; }
		at=$n
	done
}

dump_native() {
	local i tid d=$T/$1.ndump
	start_target "$1" "$2" "$PP_TARGETS/attach_blocked.py" native 3
	sleep 0.2 # each thread from "here" into its call
	"$PP_PYPROF" dump "$TPID" --native >"$d" 2>"$d.err" ||
		{ cat "$d.err"; fail "dump --native"; }
	# a thread with a tracer already (one thread of ten: the others are
	# seized first, and must be let go): one line; while it still runs
	tid=$(grep -l '^zipper$' /proc/"$TPID"/task/*/comm | awk -F/ '{print $5}')
	python3 -c 'import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, int(sys.argv[1]), 0, 0) != 0:  # PTRACE_SEIZE
    sys.exit("ptrace: errno %d" % ctypes.get_errno())
print("seized", flush=True)
time.sleep(30)' "$tid" >"$T/$1.tracer" 2>&1 &
	KIDS+=($!)
	wait_for_line "$T/$1.tracer" '^seized$' 10
	refused "^pyprof: error: dump --native: process $TPID is traced by process $! \(a debugger\?\), and a thread has one tracer only: \`pyprof dump $TPID\` without --native reads its Python stacks\$" \
		"$PP_PYPROF" dump "$TPID" --native
	kill "$!"
	cat "$d"
	[[ ! -s $d.err ]]
	[[ $(grep -c '^Thread ' "$d") == 11 ]]
	# (a `! cmd` does not fail a bats test: `if` instead)
	if grep -q 'merge failed\|unwind failed\|not stopped' "$d"; then
		fail "a stack not merged, unwound or stopped"
	fi
	# innermost first: libc's wait, the sleeper's own function, the
	# thread's start in C (on 3.14 under a line that says its outer
	# eval-loop calls' Python frames are not read)
	for i in 0 1 2 3 4 5 6; do
		block "$d" "sleeper-$i" >"$d.$i"
		in_order "$d.$i" '^    clock_nanosleep \(libc\.so' \
			"^    sleeper_$i \\(<string>:3\\)\$" '^    Thread\.run \(' \
			'^    .*\((libc\.so|python3)'
		# the sleeper's eval-loop call replaced by its frames
		if sed -n "1,/^    sleeper_$i /p" "$d.$i" | grep -q '_PyEval_EvalFrame'; then
			fail "sleeper-$i: its eval-loop call not replaced"
		fi
	done
	block "$d" MainThread >"$d.main"
	in_order "$d.main" '^    clock_nanosleep \(libc' '^    native \(.*:[0-9]+\)$' \
		'^    main \(' '^    <module> \(' '^    Py_(RunMain|BytesMain) \(' \
		'^    _start \('
	# the lock's wait in the interpreter's C code, under its caller
	block "$d" locker >"$d.lock"
	in_order "$d.lock" '^    _PySemaphore_Wait \(' \
		'^    native\.<locals>\.locked_out \(' '^    Thread\.run \('
	# C calling back into Python: qsort's frames between the two Python
	# frames, the interpreter's folded away on 3.15; on 3.14 after the
	# line that says the outer calls' Python frames are not read
	block "$d" sorter >"$d.sort"
	if [[ $1 == 3.14* ]]; then
		in_order "$d.sort" '^    clock_nanosleep \(libc' \
			'^    native\.<locals>\.cmp_slow \(' \
			'^    \[the Python frames of [0-9]+ outer eval-loop calls are not read' \
			'^    qsort_r \(libc' '^    _PyEval_EvalFrameDefault \('
	else
		in_order "$d.sort" '^    clock_nanosleep \(libc' \
			'^    native\.<locals>\.cmp_slow \(' '^    qsort_r \(libc' \
			'^    ffi_call \(' '^    native\.<locals>\.sorter \(' \
			'^    Thread\.run \(' '^    Thread\._bootstrap \('
		if grep -q '_PyEval_EvalFrame\|outer eval-loop' "$d.sort"; then
			fail "sorter: an eval-loop call not replaced"
		fi
		# between the outermost and innermost Python frames, none of
		# the interpreter's own (its call machinery folded away)
		if sed -n '/cmp_slow (/,/Thread\._bootstrap (/p' "$d.sort" |
			grep -qE '\(python3[.0-9]*\)$'; then
			fail "sorter: the interpreter's frames between Python ones"
		fi
	fi
	block "$d" zipper | grep -qE '^    native\.<locals>\.squeeze \('
	# the threads went on: each wait lasted as asked, same output
	if grep -q libpyprof.so "/proc/$TPID/maps"; then
		fail "the library was loaded"
	fi
	finish_target "$1" ready done
}

@test "dump --native: 10 threads' C frames merged with their Python ones; the process goes on" {
	attach_each dump_native
}

top_pid() {
	local sess=pyprof-top-$$-${1//./_} i ok= t0
	start_target "$1" "$2" "$PP_TARGETS/attach_shares.py" 10 "$T/$1.calls"
	t0=$EPOCHREALTIME
	tmux -L "$sess" new-session -d -s "$sess" -x 160 -y 40 \
		"$PP_PYPROF top --pid $TPID -n 8 2>$T/$1.top.err; sleep 30"
	# a terminal shows the hot function within 3 s of the start
	for ((i = 0; i < 100; i++)); do
		sleep 0.1
		# 3 s from the command's start
		"$PP_HOST_PYTHON" -c "import sys; sys.exit($EPOCHREALTIME - $t0 > 3)" ||
			break
		tmux -L "$sess" capture-pane -p -t "$sess" >"$T/$1.screen"
		if grep -qE '^ +[0-9.]+m?s +[0-9.]+% .* share_fifty ' \
			"$T/$1.screen"; then
			ok=1
			break
		fi
	done
	cat "$T/$1.screen" "$T/$1.top.err"
	# Ctrl-C ends it, the process goes on
	tmux -L "$sess" send-keys -t "$sess" C-c
	sleep 1
	tmux -L "$sess" kill-server || true
	[[ -n $ok ]] || fail "no table with share_fifty within 3 s"
	# the screen was redrawn in place: one header on it
	[[ $(grep -c '^pyprof top: process' "$T/$1.screen") == 1 ]]
	finish_target "$1" ready done
}

@test "top --pid in a terminal (tmux): the hot function within 3 s" {
	command -v tmux >/dev/null || fail "tmux is not installed (make deps)"
	attach_each top_pid
}

# A process started with the library, reporting to a running collector
# that serves HTTP: top reads that collector's live profiles (no attach:
# nothing in attach's directory), for one process (--pid, in a terminal)
# or for all of them (--collector, one table after the other when not a
# terminal); a collector without HTTP is one line. Not interpreter
# specific (the library is preloaded): one interpreter.
@test "top --pid over a running collector (tmux): its live profile within 3 s, no attach; top --collector for all its processes" {
	command -v tmux >/dev/null || fail "tmux is not installed (make deps)"
	local sess=pyprof-topc-$$ i ok= t0 exe
	read -r _ exe _ < <(PYPROF_TEST_PYTHONS=3.14 pyprof_pythons)
	collector_start --http 0
	wait_for_line "$SOCK.http-addr" . 10
	PYPROF_SOCKET=$SOCK PYPROF_START=off LD_PRELOAD=$PP_LIB \
		start_target pre "$exe" "$PP_TARGETS/attach_shares.py" 7 \
		"$T/pre.calls"
	t0=$EPOCHREALTIME
	tmux -L "$sess" new-session -d -s "$sess" -x 160 -y 40 \
		"$PP_PYPROF top --pid $TPID -n 8 2>$T/topc.err; sleep 30"
	for ((i = 0; i < 100; i++)); do
		sleep 0.1
		"$PP_HOST_PYTHON" -c "import sys; sys.exit($EPOCHREALTIME - $t0 > 3)" ||
			break
		tmux -L "$sess" capture-pane -p -t "$sess" >"$T/topc.screen"
		if grep -qE '^ +[0-9.]+m?s +[0-9.]+% .* share_fifty ' \
			"$T/topc.screen"; then
			ok=1
			break
		fi
	done
	cat "$T/topc.screen" "$T/topc.err"
	tmux -L "$sess" send-keys -t "$sess" C-c
	sleep 1
	tmux -L "$sess" kill-server || true
	[[ -n $ok ]] || fail "no table with share_fifty within 3 s"
	grep -q "^pyprof top: process $TPID " "$T/topc.screen"
	[[ ! -s $T/topc.err ]] || fail "top wrote on stderr"
	# read from the collector: no attach socket, one library mapped
	[[ -z $(find "$ATTACH_TMP" -name "$TPID.sock" 2>/dev/null) ]] ||
		fail "top attached"
	# every process of the collector, not a terminal: table after table
	"$PP_PYPROF" top --collector "$SOCK" --duration 2 -n 5 \
		>"$T/all.out" 2>"$T/all.err" || { cat "$T/all.err"; fail "top --collector"; }
	cat "$T/all.out"
	grep -q "^pyprof top: every process of $SOCK, cpu" "$T/all.out"
	grep -qE '^ +[0-9.]+m?s +[0-9.]+% .* share_fifty ' "$T/all.out"
	finish_target pre ready done
	collector_stop
	[[ ! -e $SOCK.http-addr ]] || fail "$SOCK.http-addr left after exit"
	# a collector that serves no HTTP: one line
	collector_start
	refused "the collector on $SOCK serves no HTTP .*start it with --http" \
		"$PP_PYPROF" top --collector "$SOCK"
	collector_stop
}

attach_native() {
	start_target "$1" "$2" "$PP_TARGETS/attach_shares.py" 5 "$T/$1.calls"
	"$PP_PYPROF" attach "$TPID" --native --duration 2 -o "$T/$1.pb.gz" \
		2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "attach"; }
	pprof_traces "$T/$1.pb.gz" >"$T/$1.traces"
	# Python frames with the interpreter's own frames below them
	grep -qE '^ +share_fifty$' "$T/$1.traces" || fail "no Python frame"
	grep -qE '^ +(_?Py[A-Za-z_]+|python3\.[0-9]+\+0x[0-9a-f]+)$' \
		"$T/$1.traces" || { head -40 "$T/$1.traces"; fail "no native frame"; }
	finish_target "$1" ready done
}

@test "attach --native: native stacks from a library that arrived late" {
	attach_each attach_native
}

attach_native_prethreads() {
	start_target "$1" "$2" "$PP_TARGETS/prethreads.py" 5
	"$PP_PYPROF" attach "$TPID" --native --duration 2 -o "$T/$1.pb.gz" \
		2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "attach"; }
	local all failed
	all=$(shares count "$T/$1.pb.gz" worker_spin | awk -F'\t' '$1 == "worker_spin" {print $2}')
	failed=$(shares count "$T/$1.pb.gz" '[native unwind failed]' |
		awk -F'\t' '$1 == "[native unwind failed]" {print $2}')
	echo "worker_spin: ${all:-0} samples, [native unwind failed]: ${failed:-0}"
	((${all:-0} >= 20)) || fail "too few samples of the workers"
	# the workers ran before the library: their stacks are unwound by
	# its own tables (libunwind, which needs each thread prepared, only
	# where the tables cannot say)
	((${failed:-0} * 20 <= ${all:-0})) ||
		fail "more than 5% of the samples lost their native stack"
	pprof_traces "$T/$1.pb.gz" >"$T/$1.traces"
	grep -qE '^ +(_?Py[A-Za-z_]+|python3\.[0-9]+\+0x[0-9a-f]+)$' \
		"$T/$1.traces" || fail "no native frame"
	finish_target "$1" ready done
}

# A first attach of a process whose threads started before it: 100% of
# their samples were "[native unwind failed]" (issue 43.1)
@test "attach --native: threads that ran before the attach have their native stacks" {
	attach_each attach_native_prethreads
}

attach_crash() {
	local rc_plain=0 rc=0
	"$2" -X faulthandler "$PP_TARGETS/attach_crash.py" 0.5 \
		>"$T/$1.plain.out" 2>"$T/$1.plain.err" || rc_plain=$?
	start_target "$1" "$2" -X faulthandler "$PP_TARGETS/attach_crash.py" 3
	"$PP_PYPROF" attach "$TPID" --duration 1 -o "$T/$1.pb.gz" \
		2>"$T/$1.att.err" || { cat "$T/$1.att.err"; fail "attach"; }
	wait "$TPID" || rc=$?
	[[ $rc == "$rc_plain" && $rc == 139 ]] ||
		fail "exit status $rc after an attach, $rc_plain without"
	# the same report, but for addresses
	sed -E 's/0x[0-9a-f]+/ADDR/g; s/[+]0x[0-9a-f]+//g' "$T/$1.plain.err" >"$T/a"
	sed -E 's/0x[0-9a-f]+/ADDR/g; s/[+]0x[0-9a-f]+//g' "$T/$1.err" >"$T/b"
	grep -q 'Fatal Python error: Segmentation fault' "$T/b"
	diff "$T/a" "$T/b" || fail "faulthandler's report differs"
}

@test "a crash after an attach is reported and ends the process as without one" {
	attach_each attach_crash
}

dump_vdso() {
	local i d=$T/$1.vdump hit=
	start_target "$1" "$2" "$PP_TARGETS/clockloop.py" 4
	# a thread reading the clock is in the vDSO much of the time: one of
	# ten dumps finds it there
	for ((i = 0; i < 10; i++)); do
		"$PP_PYPROF" dump "$TPID" --native >"$d.$i" 2>"$d.$i.err" ||
			{ cat "$d.$i.err"; fail "dump --native"; }
		if grep -q 'merge failed' "$d.$i"; then
			cat "$d.$i"
			fail "dump $i lost the native stack"
		fi
		if grep -qE '^    [_a-z]*clock_gettime \(\[vdso\]\)$' "$d.$i"; then
			hit=$i
			break
		fi
	done
	[[ -n $hit ]] || { cat "$d.0"; fail "no dump named a frame in [vdso]"; }
	cat "$d.$hit"
	# the whole stack through the vDSO: libc's clock_gettime above it,
	# the script's line, the interpreter's start below
	grep -A3 -E '^    [_a-z]*clock_gettime \(\[vdso\]\)$' "$d.$hit" |
		grep -q 'clock_gettime (libc' || fail "no libc frame above the vDSO's"
	grep -q 'clockloop.py:10)' "$d.$hit" || fail "the script's line is missing"
	grep -qE '^    (Py_RunMain|Py_BytesMain|_start) ' "$d.$hit" ||
		fail "the stack stops short of the interpreter's start"
	finish_target "$1" ready done
}

# 3.14's unwinding lost such a thread's whole native stack ("[merge
# failed: 0 eval-loop calls...]"): the vDSO has no file for libunwind
@test "dump --native unwinds through the kernel's vDSO (a thread inside clock_gettime) and names its frames, 3.14 and 3.15" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.14 3.15)" for_each_python dump_vdso
}
