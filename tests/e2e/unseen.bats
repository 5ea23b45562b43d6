#!/usr/bin/env bats
# unseen.bats - the program cannot see the library (issue 27): its
# descriptors sit high and close-on-exec, as the profiled program itself
# finds them in /proc/self/fd; one the program closes under it (a daemon's
# os.closerange) is opened again and what went unsampled is counted; a
# 3.12+ main thread's os.fork() gets no "multi-threaded" warning at the
# default rate; every thread the library has is named pyprof-*. CPython's
# own test suites under the library are regrtest.bats' (make
# check-regrtest).
#
# Interpreters: 3.11 (Debian's) and 3.14 for the descriptors, the 3.12+
# ones selected for the fork warning (only they warn).

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# Where the library parks under a soft limit of 1024 (preload/base/fdutil.c):
# above it, out of reach of the program's own numbers and of a scan of
# every number below the limit (CPython's fd_status.py), when the hard
# limit allows; else the top 128 numbers under it.
if (($(ulimit -H -n) > 1024 + 128)) 2>/dev/null || [[ $(ulimit -H -n) == unlimited ]]; then
	FLOOR=1024
else
	FLOOR=896
fi

# selfview EXE OUTNAME [PYPROF_X=V...]: tests/targets/selfview.py under
# `ulimit -S -n 1024`, plainly (OUTNAME.plain) and profiled (OUTNAME.with).
selfview() {
	local exe=$1 name=$2
	shift 2
	(ulimit -S -n 1024 && "$exe" "$PP_TARGETS/selfview.py") \
		>"$T/$name.plain" 2>"$T/$name.plain.err" </dev/null 3>&- ||
		fail "plain run failed: $(cat "$T/$name.plain.err")"
	(ulimit -S -n 1024 && env "$@" profiled "$exe" "$PP_TARGETS/selfview.py") \
		>"$T/$name.with" 2>"$T/$name.with.err" </dev/null 3>&- ||
		fail "profiled run failed: $(cat "$T/$name.with.err")"
	grep -qx done "$T/$name.with" || fail "no 'done': $(cat "$T/$name.with")"
}

# extra_fds NAME: "NUMBER CLOEXEC TARGET" of every descriptor number the
# profiled run had open and the plain run had not.
extra_fds() {
	awk 'NR == FNR { if ($1 == "fd") plain[$2] = 1; next }
	     $1 == "fd" && !($2 in plain) { t = $4; sub(/:\[.*/, "", t); print $2, $3, t }' \
		"$T/$1.plain" "$T/$1.with"
}

@test "every descriptor the library keeps is above the floor and close-on-exec, as the program sees them, and is one environment.md lists" {
	check() {
		local exe=$2 mode extra n
		for mode in default native; do
			if [[ $mode == native ]]; then
				# past the tick with native stacks: perf counters and
				# libunwind's own pipe
				selfview "$exe" "$mode" PYPROF_NATIVE=1 PYPROF_HZ=1000
			else
				selfview "$exe" "$mode"
			fi
			extra=$(extra_fds "$mode")
			echo "# $1 $mode: the library's descriptors:" $extra >&3
			n=$(printf '%s\n' "$extra" | grep -c . || true)
			# the collector socket at least (and /proc/PID/stat,
			# /proc/PID/task, the wake-up pipe)
			((n >= 2)) || fail "$mode: only $n descriptor(s) of the library seen: $extra"
			printf '%s\n' "$extra" | awk -v floor=$FLOOR -v m="$mode" '
				$1 < floor { print m ": descriptor " $1 " (" $3 ") below " floor; bad = 1 }
				$2 != 1 { print m ": descriptor " $1 " (" $3 ") not close-on-exec"; bad = 1 }
				END { exit bad }' || fail "$(cat "$T/$mode.with")"
			# exactly the rows of docs/environment.md's table
			# ("Descriptors") for this mode: the wake-up pipe's two
			# ends, /proc/PID/stat, /proc/PID/task and the socket;
			# with native stacks also libunwind's pipe and the one
			# thread's perf counter
			local kinds want="pipe pipe proc-stat proc-task socket"
			[[ $mode == native ]] && want="anon_inode pipe pipe pipe pipe proc-stat proc-task socket"
			kinds=$(printf '%s\n' "$extra" | awk '{ k = $3
				if (k ~ /^\/proc\/[0-9]+\/stat$/) k = "proc-stat"
				else if (k ~ /^\/proc\/[0-9]+\/task$/) k = "proc-task"
				print k }' | sort | tr '\n' ' ')
			[[ $kinds == "$want " ]] ||
				fail "$mode: the library's descriptors are '$kinds', environment.md lists '$want'"
		done
	}
	PYPROF_TEST_PYTHONS=$(pythons_of system 3.14) for_each_python check
}

# The numbers a program gets next are its own, at every moment: the
# library makes its sockets before the program runs (the constructor, a
# fork child before fork returns; transport_prepare in
# preload/agent/transport.h), and a failed connect keeps its socket for
# the next try. With no collector listening the library tries again and
# again (50 ms, doubling to 1 s): each try used to make a new socket,
# which sat at the lowest free number until it was moved high, so a
# program watching 3 to 5 saw 3 open in about half of 1.5 s windows (2.7,
# 3.11, 3.15); with a collector the first connection did the same, in the
# program's start-up (test_subprocess's test_pass_fds on 3.15, one run in
# about ten under make check: "fd to be closed passed").
@test "with no collector listening, the library's attempts to connect never hold a number the program would get next" {
	check() {
		local exe=$2 plain out
		# what is open without the library (bats may leave some open)
		plain=$("$exe" "$PP_TARGETS/fdwatch.py" 0.2 </dev/null 3>&-) ||
			fail "fdwatch.py failed plainly"
		out=$( (ulimit -S -n 1024 && LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$T/none/c.sock \
			"$exe" "$PP_TARGETS/fdwatch.py" 1.5) 2>"$T/fdwatch.err" </dev/null 3>&-) ||
			fail "fdwatch.py failed: $(cat "$T/fdwatch.err")"
		echo "   plainly ${plain% probes *}; with the library ${out% probes *} (${out##* probes } rounds)"
		[[ ${out% probes *} == "${plain% probes *}" ]] ||
			fail "a descriptor of the library at a low number: ${out% probes *}, plainly ${plain% probes *}"
	}
	mkdir -p "$T/none"
	for_each_python check
}

@test "after os.closerange(3, ...) native sampling past the tick goes on, and what it missed is counted as lost" {
	check() {
		local exe=$2 f truth got lost
		# pyprof record: one profile for the process across the
		# reconnection its closerange forces
		f=$T/cr.pb.gz
		run_capture cr "$PP_PYPROF" record --native --hz 1000 -o "$f" -- \
			"$exe" "$PP_TARGETS/closerange.py" 0.6
		((RC == 0)) || fail "status $RC: $(cat "$T/cr.err")"
		shares funcs "$f" >"$T/cr.funcs"
		# the program's own thread CPU time for the phase after the close
		truth=$(awk '$1 == "after_close" { printf "%d", $2 * 1000 }' "$T/cr.out")
		got=$(awk '$4 == "after_close" { print $3 }' "$T/cr.funcs")
		lost=$(awk '/\[lost: descriptor closed\]/ { print $3 }' "$T/cr.funcs")
		echo "# $1: after_close ${got:-0} samples of 1 ms, ${lost:-0} counted lost; the thread's CPU clock says $truth ms" >&3
		# sampling went on: most of the phase is in the profile (the
		# counter is checked every 200 ms, the rest counted lost)
		((${got:-0} * 2 >= truth)) || fail "after_close: ${got:-0} samples for $truth ms: $(cat "$T/cr.funcs")"
		# and nothing vanished silently: sampled + lost cover the phase
		# (user time only is counted; this loop spends little in the kernel)
		(((${got:-0} + ${lost:-0}) * 10 >= truth * 7)) ||
			fail "after_close ${got:-0} + lost ${lost:-0} for $truth ms"
		# nor is much counted twice (the loss is counted from the last
		# tick that saw the counter open: 20 ms at most before the close)
		(((${got:-0} + ${lost:-0}) * 10 <= truth * 12)) ||
			fail "after_close ${got:-0} + lost ${lost:-0} for $truth ms: too much counted lost"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of system 3.14) for_each_python check
}

@test "a 3.12+ main thread's os.fork() gets no 'multi-threaded' warning at the default rate, and sampling goes on after it" {
	check() {
		local exe=$2 f n truth
		run_capture fw profiled "$exe" -W always::DeprecationWarning \
			"$PP_TARGETS/forkwarn.py" 3
		((RC == 0)) || fail "status $RC: $(cat "$T/fw.err")"
		grep -qx "forked 3" "$T/fw.out" || fail "$(cat "$T/fw.out")"
		! grep -F "multi-threaded" "$T/fw.err" || fail "the warning: $(cat "$T/fw.err")"
		[[ ! -s $T/fw.err ]] || fail "stderr: $(cat "$T/fw.err")"
		f=$(wait_profile "$PID")
		shares funcs "$f" >"$T/fw.funcs"
		# samples of the parent after its forks: the agent came back
		# (10 ms each) against the thread's own CPU clock there
		n=$(awk '$4 == "after_fork" { print $3 }' "$T/fw.funcs")
		truth=$(awk '$1 == "after_fork" { printf "%d", $2 * 1000 }' "$T/fw.out")
		echo "# $1: no warning; after_fork ${n:-0} samples for $truth ms of CPU" >&3
		((${n:-0} * 10 * 2 >= truth && truth >= 50)) ||
			fail "after_fork has ${n:-0} samples for $truth ms: $(cat "$T/fw.funcs")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.12 3.13 3.14 3.15) for_each_python check
}

@test "every thread of the library is named pyprof-*, in every mode" {
	check() {
		local exe=$2 mode
		for mode in default native wall; do
			case $mode in
			default) selfview "$exe" "$mode" ;;
			native) selfview "$exe" "$mode" PYPROF_NATIVE=1 ;;
			wall) selfview "$exe" "$mode" PYPROF_MODE=wall ;;
			esac
			awk '$1 == "thread"' "$T/$mode.with" >"$T/$mode.threads"
			echo "# $1 $mode:" $(awk '$3 != "MAIN" { print $4 }' "$T/$mode.threads") >&3
			grep -q ' - pyprof-' "$T/$mode.threads" || fail "$mode: no pyprof thread: $(cat "$T/$mode.threads")"
			! awk '$3 != "MAIN" && $4 !~ /^pyprof-/' "$T/$mode.threads" | grep . ||
				fail "$mode: a thread of the library without a pyprof- name"
		done
	}
	PYPROF_TEST_PYTHONS=$(pythons_of system 3.14) for_each_python check
}

# threadfds EXE: threads started and ended at 1 kHz in CPU mode while the
# program lists its descriptors, again and again: nothing of the
# library's appears, not even for a moment (each thread's perf counter is
# opened by the library's CPU-clock thread in a table of its own).
threadfds() {
	local pid f
	PYPROF_HZ=1000 profiled "$2" "$PP_TARGETS/threadfds.py" 300 >"$T/$1.fd" 2>"$T/$1.err" &
	pid=$!
	wait "$pid" || fail "run failed: $(cat "$T/$1.err")"
	cat "$T/$1.fd"
	grep -qx done "$T/$1.fd" || fail "no 'done'"
	! grep -q '^extra' "$T/$1.fd" || fail "the program saw a descriptor it did not open"
	f=$(wait_profile "$pid")
	go tool pprof -comments "$f" 2>/dev/null | grep -q "CPU time from perf_event counters" ||
		fail "the profile does not come from the perf counters"
}

@test "threads that start and end under the default CPU mode at 1 kHz: the program's own listing of its descriptors never sees one of the library's" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.11 3.15)" for_each_python threadfds
}
