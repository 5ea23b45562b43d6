#!/usr/bin/env bats
# exit.bats - what the library does when a profiled process ends: with no
# collector listening it does not wait for one (what was sampled is
# dropped and the log says so), whether it was sampling or dormant, in the
# parent and in forked children; with a collector, everything arrives.
# Every interpreter in tests/lib/pythons.sh.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
}

teardown() {
	common_teardown
}

# ms_since START: milliseconds since $EPOCHREALTIME was START.
ms_since() {
	local now=$EPOCHREALTIME
	echo $(((${now/./} - ${1/./}) / 1000))
}

# Before, every process waited 2 s for a collector at exit. The log must
# say that it did not wait; and beside the same program run without the
# library just before, the difference must stay far under those 2 s (a
# margin of 1 s: this checks behaviour, not speed, on a loaded machine).
@test "with no collector listening, a process exits without waiting for one" {
	check() {
		local t0 ms plain
		t0=$EPOCHREALTIME
		run_capture plain "$2" "$PP_TARGETS/outputs.py" ok
		plain=$(ms_since "$t0")
		t0=$EPOCHREALTIME
		run_capture run env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			PYPROF_LOG=info "$2" "$PP_TARGETS/outputs.py" ok
		ms=$(ms_since "$t0")
		assert_eq 0 "$RC" "exit status"
		grep -q "no collector at $SOCK: exiting at once, [0-9]* samples dropped" \
			"$T/run.err" || { cat "$T/run.err"; fail "no log line saying it did not wait"; }
		echo "   $ms ms with the library, $plain ms without"
		((ms - plain < 1000)) || fail "the library added $((ms - plain)) ms"
	}
	for_each_python check
}

@test "with no collector listening, a dormant process and forked children exit without waiting" {
	check() {
		local t0 ms n
		t0=$EPOCHREALTIME
		run_capture run env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			PYPROF_LOG=info PYPROF_START=off "$2" -c '
import os, time
pids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.2)  # the agent of the child is up
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
'
		ms=$(ms_since "$t0")
		assert_eq 0 "$RC" "exit status"
		n=$(grep -c "no collector at $SOCK: exiting at once" "$T/run.err" || true)
		assert_eq 4 "$n" "processes that said they exited at once"
		echo "   $ms ms"
	}
	for_each_python check
}

@test "with a collector, a short process's samples all arrive at exit" {
	check() {
		local f
		collector_start
		run_capture run env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			PYPROF_LOG=debug "$2" "$PP_TARGETS/spin.py" 0.3
		assert_eq 0 "$RC" "exit status"
		grep -q "exit: .* ms sending what was left" "$T/run.err" ||
			{ cat "$T/run.err"; fail "no flush at exit"; }
		f=$(wait_profile "$PID")
		pprof_raw "$f" | grep -q 'spin.py' || fail "no samples of spin.py in $f"
		collector_stop
	}
	for_each_python check
}

# An exec that fails returns to the program, which may catch the error and
# go on: sampling must go on too. Before, the exec wrapper switched it off
# for good, and what ran after the failed exec was missing. before() and
# after() burn the same CPU; after() must have a fair share (at least a
# fifth of the two: the agent re-arms the timers within 200 ms, later on
# a loaded machine; before, it had none).
@test "a failed exec that the program catches leaves sampling on" {
	check() {
		local f
		collector_start
		run_capture run profiled "$2" -c '
import os, time
def burn(s):
    end = time.time() + s
    while time.time() < end:
        pass
def before(): burn(0.6)
def after(): burn(0.6)
before()
for fn in (os.execv, os.execvp):
    try:
        fn("/nonexistent/pyprof-no-such-program", ["x"])
    except OSError:
        pass
after()
'
		assert_eq 0 "$RC" "exit status"
		f=$(wait_profile "$PID")
		shares funcs "$f" >"$T/funcs"
		"$PP_HOST_PYTHON" - "$T/funcs" <<'PY'
import re, sys
cum = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)%\s+\S+\s+\d+\s+(\S+)", line)
    if m and m.group(2) in ("before", "after"):
        cum[m.group(2)] = cum.get(m.group(2), 0) + float(m.group(1))
print("   shares (cumulative): %r" % cum)
b, a = cum.get("before", 0), cum.get("after", 0)
sys.exit(0 if b > 0 and a >= (a + b) / 5 else 1)
PY
		collector_stop
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.15) for_each_python check
}

# The names thread took the GIL (PyGILState_Ensure) after reading that
# finalization had not begun; a busy machine could stop it between the two
# for as long as the main thread took to tear the runtime down, and Ensure
# then met a runtime being freed: 3.14, 1 kHz with heap profiling, "Fatal
# Python error: gilstate_tss_set", "get_modules_dict" or a SIGSEGV, in 5 of
# 600 runs of exit_threads.py beside another such loop (design.md, "The
# library's threads": the exit gate). Here about 8 s of such runs, two at
# a time, on each selected 3.14+ interpreter (3.14 and 3.15 if none).
exit_churn() {
	local exe=$2 d=$T/churn-$1 end n=0 i bad=0 pids arg
	mkdir -p "$d"
	end=$((SECONDS + 8))
	while ((SECONDS < end)); do
		pids=()
		for i in 0 1; do
			arg=()
			(((n + i) % 2)) && arg=(join)
			"$PP_PYPROF" record --hz 1000 --heap -o "$d/p$i.pb.gz" -- \
				"$exe" "$PP_TARGETS/exit_threads.py" "${arg[@]}" \
				>"$d/o$i" 2>"$d/e$i" </dev/null &
			pids+=($!)
		done
		for i in 0 1; do
			if ! wait "${pids[i]}" ||
				grep -q "Fatal Python error\|Segmentation" "$d/e$i"; then
				bad=$((bad + 1))
				grep -v "^pyprof: wrote" "$d/e$i" | head -5
			fi
		done
		n=$((n + 2))
	done
	echo "   $n runs, $bad ended badly"
	((bad == 0)) || fail "$bad of $n runs crashed at exit"
	((n >= 16)) || fail "only $n runs in 8 s: too few to say"
}

@test "threads starting and ending as the interpreter finalizes, at 1 kHz with heap profiling: no run crashes at exit (3.14+)" {
	local name exe kind sel=()
	while read -r name exe kind; do
		[[ $kind != missing ]] || continue
		[[ $(python_major_minor "$exe") =~ ^3\.(1[4-9]|[2-9][0-9])$ ]] && sel+=("$name")
	done < <(pyprof_pythons)
	((${#sel[@]})) || sel=(3.14 3.15)
	PYPROF_TEST_PYTHONS="${sel[*]}" for_each_python exit_churn
}
