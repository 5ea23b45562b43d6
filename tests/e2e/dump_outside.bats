#!/usr/bin/env bats
# dump_outside.bats - `pyprof dump PID` of a process started without the
# library, on every interpreter (2.7 to 3.15, pyenv's and Debian's): read
# from outside by the library's own walker (pyprof/walk.h), nothing
# loaded into the target, nothing run in it or for it. And the
# hostile targets: absurd sizes, a frame chain that loops, a process that
# exits while it is read.

load ../lib/common

setup() {
	common_setup
	KIDS=()
}

teardown() {
	local k
	for k in "${KIDS[@]}"; do
		kill -9 "$k" 2>/dev/null || true
	done
	common_teardown
}

# target NAME EXE SCRIPT ARGS...: started in the background, its output in
# $T/NAME.out; TPID; waits for "ready".
target() {
	local name=$1 exe=$2
	shift 2
	rm -f "$T/$name.out" "$T/$name.err"
	"$exe" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/$name.out" '^ready$' 20
}

# dump NAME: pyprof dump $TPID into $T/NAME.dump (stderr .dump.err) in 10
# seconds at most; RC its status.
dump() {
	RC=0
	timeout 10 "$PP_PYPROF" dump "$TPID" >"$T/$1.dump" 2>"$T/$1.dump.err" ||
		RC=$?
	cat "$T/$1.dump" "$T/$1.dump.err" | head -60
}

# block FILE NAME: the lines of the stack of the thread named NAME.
block() {
	awk -v n="\"$2\"" '/^Thread / { on = ($3 == n) ; next } on' "$1"
}

three_threads() {
	local name=$1 exe=$2 f=$PP_TARGETS/dump_outside.py s tid th
	target "$name" "$exe" "$f" "$T/$name.stop" 7
	dump "$name"
	assert_eq 0 "$RC" "exit status of dump"
	[[ ! -s $T/$name.dump.err ]] || fail "dump wrote on stderr"
	head -1 "$T/$name.dump" | grep -qE "^Process $TPID: .*\(Python [23]\.[0-9]+, "
	[[ $(grep -c '^Thread ' "$T/$name.dump") == 4 ]] || fail "not 4 threads"
	grep -A1 "^Thread $TPID \"MainThread\"" "$T/$name.dump" | tail -1 |
		grep -qxF "    <module> ($f:$(marker_line "$f" main))"
	# each worker by its OS name (/proc/PID/task/TID/comm), its tid the
	# one /proc gives that name
	for th in alpha deep gen; do
		tid=$(grep -l "^worker-$th\$" /proc/"$TPID"/task/*/comm |
			awk -F/ '{print $5}')
		grep -q "^Thread $tid \"worker-$th\"" "$T/$name.dump" ||
			fail "worker-$th ($tid) not found by its tid and name"
	done
	block "$T/$name.dump" worker-alpha | head -1 |
		grep -qxF "    in_alpha ($f:$(marker_line "$f" alpha))"
	# 800 recursive calls whole, the innermost first, down to the thread's
	# first frame
	block "$T/$name.dump" worker-deep >"$T/$name.deep"
	head -1 "$T/$name.deep" | grep -qxF "    deep_bottom ($f:$(marker_line "$f" bottom))"
	s=$(grep -cxF "    deep ($f:$(marker_line "$f" deep))" "$T/$name.deep")
	assert_eq 800 "$s" "recursive frames on the marked line"
	tail -1 "$T/$name.deep" | grep -qE '^    .*bootstrap \(.*threading\.py:[0-9]+\)$' ||
		fail "the deep stack does not end at the thread's start"
	# the generator's frame, then the frame that iterates it
	block "$T/$name.dump" worker-gen | head -2 >"$T/$name.gen"
	printf '    gen_sleeper (%s:%s)\n    consume (%s:%s)\n' \
		"$f" "$(marker_line "$f" gen)" "$f" "$(marker_line "$f" consume)" |
		diff - "$T/$name.gen"
	# nothing of ours in it; it goes on and ends as it would have
	! grep -q libpyprof "/proc/$TPID/maps" || fail "libpyprof mapped"
	! ls -l /proc/"$TPID"/fd | grep -E "libpyprof|$PP_BUILD" ||
		fail "a file of ours"
	touch "$T/$name.stop"
	s=0
	wait "$TPID" || s=$?
	assert_eq 7 "$s" "the target's exit status"
	printf 'ready\ndone\n' | diff - "$T/$name.out"
	[[ ! -s $T/$name.err ]] || { cat "$T/$name.err"; fail "target's stderr"; }
}

@test "dump from outside: three named threads, 800-deep recursion whole, a generator; the target unchanged" {
	for_each_python three_threads
}

# A target that is its own saboteur: ctypes makes a name and a line table
# claim absurd sizes, or the outermost frames' link point back at the
# innermost (a loop). The dump ends in time with what it could read.
# threading_names NAME EXE: threads named by threading only (no OS names
# before 3.14, cut to 15 bytes on 3.14+), each by its whole name.
threading_names() {
	local name=$1 exe=$2 f=$PP_TARGETS/threading_names.py s th
	target "$name" "$exe" "$f" "$T/$name.stop" 7
	dump "$name"
	assert_eq 0 "$RC" "exit status of dump"
	[[ ! -s $T/$name.dump.err ]] || fail "dump wrote on stderr"
	[[ $(grep -c '^Thread ' "$T/$name.dump") == 4 ]] || fail "not 4 threads"
	grep -q "^Thread $TPID \"MainThread\"" "$T/$name.dump" ||
		fail "no MainThread"
	for th in alpha beta gamma; do
		block "$T/$name.dump" "threading-name-$th" | head -1 |
			grep -qxF "    sleeper ($f:$(marker_line "$f" sleep))" ||
			fail "threading-name-$th not found by its name, asleep"
	done
	touch "$T/$name.stop"
	s=0
	wait "$TPID" || s=$?
	assert_eq 7 "$s" "the target's exit status"
}

@test "dump from outside: threads named by threading only, by those names" {
	for_each_python threading_names
}

hostile_one() {
	local name=$1 exe=$2 how=$3 f=$PP_TARGETS/dump_hostile.py
	target "$name-$how" "$exe" "$f" "$how"
	dump "$name-$how"
	case $how in
	sizes)
		assert_eq 0 "$RC" "exit status of dump"
		# the name too long to be a name, the table too big to be one:
		# the function is unknown, its caller named, its line the first
		grep -q '^    \[unknown\] (' "$T/$name-$how.dump" ||
			fail "the absurd name was not refused"
		grep -qF "    sized_caller ($f:" "$T/$name-$how.dump"
		;;
	loop)
		# a loop is read to the frame cap, then cut, with a line
		[[ $RC == 0 ]] || fail "dump status $RC"
		grep -q '^    (cut: ' "$T/$name-$how.dump" ||
			fail "no line saying the stack was cut"
		;;
	names)
		# threading names that are no names: the OS's instead
		assert_eq 0 "$RC" "exit status of dump"
		[[ $(grep -c '^Thread ' "$T/$name-$how.dump") == 3 ]] ||
			fail "not 3 threads"
		grep -q "^Thread $TPID \"MainThread\"" "$T/$name-$how.dump" ||
			fail "no MainThread"
		! grep -E '"(hostile-absurd-name|12345)"' "$T/$name-$how.dump" ||
			fail "a name that is no name"
		;;
	esac
	kill -9 "$TPID"
}

hostile() {
	hostile_one "$1" "$2" sizes
	hostile_one "$1" "$2" loop
	hostile_one "$1" "$2" names
}

@test "dump from outside: absurd sizes, a looping frame chain and threading names that are no names end in time with a line" {
	for_each_python hostile
}

# A process that exits while it is read: each dump ends within its time
# limit, with status 0 (read whole) or 1 and exactly one line on stderr.
exiting() {
	local name=$1 exe=$2 i rc
	for ((i = 0; i < 5; i++)); do
		target "$name" "$exe" "$PP_TARGETS/dump_hostile.py" exit
		while kill -0 "$TPID" 2>/dev/null; do
			rc=0
			timeout 10 "$PP_PYPROF" dump "$TPID" >"$T/$name.dump" \
				2>"$T/$name.dump.err" || rc=$?
			case $rc in
			0) ;;
			1) [[ $(wc -l <"$T/$name.dump.err") == 1 ]] ||
				{ cat "$T/$name.dump.err"; fail "not one line"; } ;;
			*) cat "$T/$name.dump.err"; fail "dump status $rc" ;;
			esac
		done
		wait "$TPID" || true
	done
}

@test "dump from outside: a process that exits while it is read ends the command with a line" {
	for_each_python exiting
}
