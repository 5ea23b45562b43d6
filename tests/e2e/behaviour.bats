#!/usr/bin/env bats
# behaviour.bats - a profiled Python program behaves exactly as it does
# without the library: the same stdout, stderr and exit status, including a
# non-zero exit and an uncaught exception; a segfault still kills it with
# SIGSEGV, and faulthandler still prints its report. Every interpreter in
# tests/lib/pythons.sh, with a collector receiving the samples.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# compare NAME EXE ARGS...: EXE ARGS run without and with the library;
# stdout, stderr and status must be identical. Leaves RC (with the
# library) for the caller.
compare() {
	local name=$1 rc_without
	shift
	run_capture "$name.without" "$@"
	rc_without=$RC
	run_capture "$name.with" profiled "$@"
	assert_same_file "$T/$name.without.out" "$T/$name.with.out" "stdout"
	assert_same_file "$T/$name.without.err" "$T/$name.with.err" "stderr"
	assert_eq "$rc_without" "$RC" "exit status"
}

@test "output on both streams and exit status 0 are unchanged" {
	check() {
		compare ok "$2" "$PP_TARGETS/outputs.py" ok
		assert_eq 0 "$RC" "exit status"
		grep -qx 'stderr line 4' "$T/ok.with.err" || fail "stderr lost"
	}
	for_each_python check
}

@test "sys.exit(3) still exits with status 3" {
	check() {
		compare exit3 "$2" "$PP_TARGETS/outputs.py" exit3
		assert_eq 3 "$RC" "exit status"
	}
	for_each_python check
}

@test "an uncaught exception prints the same traceback and exits 1" {
	check() {
		compare raise "$2" "$PP_TARGETS/outputs.py" raise
		assert_eq 1 "$RC" "exit status"
		grep -q '^ValueError: outputs.py: the expected failure' \
			"$T/raise.with.err" || fail "no traceback"
	}
	for_each_python check
}

@test "a segfault in ctypes still kills the program with SIGSEGV" {
	check() {
		compare segv "$2" "$PP_TARGETS/segv.py" ctypes
		assert_eq 139 "$RC" "exit status (128 + SIGSEGV)"
	}
	for_each_python check
}

@test "SIGSEGV sent with os.kill still kills the program" {
	check() {
		compare kill "$2" "$PP_TARGETS/segv.py" kill
		assert_eq 139 "$RC" "exit status (128 + SIGSEGV)"
	}
	for_each_python check
}

# faulthandler_check NAME EXE KIND HOW [MODE]: faulthandler (enabled by
# HOW: "-X" or "env") prints the same report with the library as without,
# for segv.py MODE (default ctypes).
faulthandler_check() {
	local exe=$2 how=$4 mode=${5:-ctypes} f
	if [[ $(python_major_minor "$exe") == 2.* ]]; then
		echo "   (Python 2 has no faulthandler: nothing to compare)"
		return 0
	fi
	if [[ $how == -X ]]; then
		compare fh "$exe" -X faulthandler "$PP_TARGETS/segv.py" "$mode" || true
	else
		PYTHONFAULTHANDLER=1 compare fh "$exe" "$PP_TARGETS/segv.py" "$mode" || true
	fi
	assert_eq 139 "$RC" "exit status (128 + SIGSEGV)"
	for f in without with; do
		# Thread ids differ from run to run.
		sed -E 's/0x[0-9a-f]+/0xADDR/g' "$T/fh.$f.err" >"$T/fh.$f.norm"
	done
	cat "$T/fh.with.err"
	grep -q '^Fatal Python error: Segmentation fault' "$T/fh.with.err" ||
		fail "no 'Fatal Python error: Segmentation fault' line"
	grep -q "segv.py\", line $(marker_line "$PP_TARGETS/segv.py" crash_ctypes) in crash" \
		"$T/fh.with.err" || fail "the traceback does not show crash()"
	assert_same_file "$T/fh.without.norm" "$T/fh.with.norm" \
		"faulthandler's report (addresses masked)"
}

@test "faulthandler (-X faulthandler) still reports a segfault" {
	for_each_python faulthandler_check -X
}

@test "faulthandler (PYTHONFAULTHANDLER=1) still reports a segfault" {
	for_each_python faulthandler_check env
}

# A vfork child (subprocess on 3.10+) resets faulthandler's SIGSEGV handler
# to SIG_DFL before it execs, through the interposed sigaction, in memory
# it shares with the parent: the parent must keep its own handler.
@test "faulthandler still reports a segfault after the program ran a subprocess" {
	for_each_python faulthandler_check -X subprocess
}
