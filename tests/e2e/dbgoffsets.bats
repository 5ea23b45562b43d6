#!/usr/bin/env bats
# dbgoffsets.bats - CPython 3.13+ described by its own _Py_DebugOffsets.
#
# A minor version released after this pyprof was built has no compiled
# row. PYPROF_TEST_WITHHOLD_TABLE (a switch for tests, preload/agent/init.c)
# makes a real 3.13, 3.14 or 3.15 look like one:
#   row     its compiled row is withheld: the library must profile it from
#           the offsets the interpreter states in _Py_DebugOffsets, the
#           facts the block lacks taken from another 3.13+ row;
#   layout  the block's layout is withheld too (a new minor whose block
#           changed shape): refused, with one line saying why;
#   skew    the compiled row is made wrong (a patched build): logged, and
#           the interpreter's own offsets win.
# The whole of the other end-to-end checks with the rows withheld runs as
# `make check-debug-offsets` (smoke, stacks, truth, threads, native and
# this file on 3.13, 3.14 and 3.15 with PYPROF_TEST_WITHHOLD_TABLE=row).

load ../lib/common

setup() {
	common_setup
	CALLS=$PP_TARGETS/calls.py
}

teardown() {
	common_teardown
}

# The interpreters with a _Py_DebugOffsets block among those selected.
new_pythons() {
	pythons_of 3.13 3.14 3.15
}

# check_calls RAW: outer, middle and inner named with their file and def
# line, and middle at its call line.
check_calls() {
	local raw=$1 fn
	shares funcs "$raw" | tee "$T/funcs"
	for fn in outer middle inner; do
		grep -qE "^ *[0-9.]+% +[0-9.]+% +[0-9]+  $fn $CALLS:$(marker_line "$CALLS" "def_$fn")\$" \
			"$T/funcs" || fail "$fn not found as '$fn $CALLS:<line of @def_$fn>'"
	done
	shares lines "$raw" middle | tee "$T/middle"
	[[ $(sed -n 2p "$T/middle") == *"line $(printf %5d "$(marker_line "$CALLS" middle_call)"):"*"100.00%"* ]] ||
		fail "middle is not always at its call line"
}

@test "1.1 a 3.13+ interpreter without a compiled row is profiled from its own _Py_DebugOffsets" {
	check() {
		local exe=$2 mm f
		mm=$(python_major_minor "$exe")
		collector_start
		PYPROF_TEST_WITHHOLD_TABLE=row PYPROF_LOG=info run_capture calls \
			profiled "$exe" "$CALLS" 0.5
		assert_eq 0 "$RC" "exit status"
		grep -E "Python $mm: no compiled layout; offsets from its _Py_DebugOffsets \(read as $mm's\), other facts from the 3\.1[345] row\$" \
			"$T/calls.err" || fail "no line saying the layout came from _Py_DebugOffsets"
		grep -q "other facts from the $mm row" "$T/calls.err" &&
			fail "the withheld $mm row was used for the other facts"
		f=$(wait_profile "$PID")
		pprof_raw "$f" >"$T/raw"
		check_calls "$T/raw"
		collector_stop
	}
	PYPROF_TEST_PYTHONS=$(new_pythons) for_each_python check
}

@test "1.2 a block whose layout is not known: refused with one line saying why, the program untouched" {
	check() {
		local exe=$2 mm
		mm=$(python_major_minor "$exe")
		run_capture plain "$exe" -c 'import sys; print("hello"); sys.exit(3)'
		PYPROF_TEST_WITHHOLD_TABLE=layout run_capture rec "$PP_PYPROF" record \
			-o "$T/p.pb.gz" -- "$exe" -c 'import sys; print("hello"); sys.exit(3)'
		cat "$T/rec.err"
		assert_eq 3 "$RC" "exit status"
		assert_same_file "$T/plain.out" "$T/rec.out" "stdout"
		grep -qE "^pyprof: 1 process not profiled: Python $mm is not supported by this pyprof \(_Py_DebugOffsets fits no known layout \(3\.[0-9]+'s: [^()]+ beyond size [0-9]+\)\) \(profiling off\)\$" \
			"$T/rec.err" || fail "no 'not profiled' line with the layout's reason"
		[[ $(grep -c "_Py_DebugOffsets" "$T/rec.err") == 2 ]] ||
			fail "not exactly the library's line and the summary's"
	}
	PYPROF_TEST_PYTHONS=$(new_pythons) for_each_python check
}

@test "1.3 a compiled row that disagrees with _Py_DebugOffsets is logged and the interpreter's offsets win" {
	check() {
		local exe=$2 mm f
		mm=$(python_major_minor "$exe")
		collector_start
		PYPROF_TEST_WITHHOLD_TABLE=skew PYPROF_LOG=warn run_capture calls \
			profiled "$exe" "$CALLS" 0.5
		assert_eq 0 "$RC" "exit status"
		cat "$T/calls.err"
		grep -qE "^pyprof\[[0-9]+:[0-9]+\] warn: Python $mm: co_qualname is [0-9]+ in _Py_DebugOffsets, [0-9]+ in the compiled $mm row; using the interpreter's own offsets\$" \
			"$T/calls.err" || fail "no warning naming the mismatch"
		f=$(wait_profile "$PID")
		pprof_raw "$f" >"$T/raw"
		check_calls "$T/raw"
		# profiling goes on: without PYPROF_LOG the program's stderr is
		# its own
		PYPROF_TEST_WITHHOLD_TABLE=skew run_capture quiet profiled "$exe" "$CALLS" 0.2
		assert_eq 0 "$RC" "exit status"
		[[ ! -s $T/quiet.err ]] || fail "stderr without PYPROF_LOG: $(cat "$T/quiet.err")"
		collector_stop
	}
	PYPROF_TEST_PYTHONS=$(new_pythons) for_each_python check
}
