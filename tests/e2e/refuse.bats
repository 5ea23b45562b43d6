#!/usr/bin/env bats
# refuse.bats - a process the library does not profile (a Python version
# without a layout, here simulated on every real interpreter by withholding
# the compiled table with PYPROF_TEST_WITHHOLD_TABLE, a switch for tests)
# is named, with its reason, in pyprof record's summary without PYPROF_LOG,
# logged and counted by the collector (--summary), and otherwise left
# alone: same output, same exit status, children included. The other
# reasons (a debug or free-threaded build, PyPy, a version from the
# future) come from tests/targets/fakepy.c, as in versions.bats.

load ../lib/common

setup() {
	common_setup
}

teardown() {
	common_teardown
}

# A parent that runs two children of the same interpreter, prints, exits 3.
PARENT='import subprocess, sys
for i in range(2):
    subprocess.call([sys.executable, "-c", "print(%d)" % i])
print("parent")
sys.exit(3)'

@test "pyprof record names the processes it could not profile and why, without PYPROF_LOG" {
	check() {
		local exe=$2 mm
		mm=$(python_major_minor "$exe")
		run_capture plain "$exe" -c "$PARENT"
		PYPROF_TEST_WITHHOLD_TABLE=1 run_capture rec "$PP_PYPROF" record \
			-o "$T/p.pb.gz" -- "$exe" -c "$PARENT"
		cat "$T/rec.err"
		assert_eq 3 "$RC" "exit status"
		assert_same_file "$T/plain.out" "$T/rec.out" "stdout"
		grep -qxF "pyprof: 3 processes not profiled: Python $mm is not supported by this pyprof (profiling off)" \
			"$T/rec.err" || fail "no 'not profiled' line naming 3 processes and Python $mm"
		# the generic guess is not printed when the reason is known
		! grep -q "a CPython program" "$T/rec.err" ||
			fail "the 'is it a CPython program?' hint was printed"
		grep -qE '\(0 samples, 0 processes, 0 dropped\)$' "$T/rec.err" ||
			fail "summary counts a refused process as profiled"
	}
	for_each_python check
}

@test "a profiled run prints no 'not profiled' line" {
	check() {
		local exe=$2
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- "$exe" -c "$PARENT"
		cat "$T/rec.err"
		assert_eq 3 "$RC" "exit status"
		! grep -q "not profiled" "$T/rec.err" || fail "a 'not profiled' line on a supported Python"
		# (short-lived children may end before they connect: not counted here)
		grep -qE ', [1-9][0-9]* process(es)?, [0-9]+ dropped\)$' "$T/rec.err" ||
			fail "no process profiled"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.13 3.11) for_each_python check
}

@test "the collector logs each process that is not profiled and counts it in --summary" {
	check() {
		local exe=$2 mm pid
		mm=$(python_major_minor "$exe")
		collector_start --summary "$T/summary.txt"
		PYPROF_TEST_WITHHOLD_TABLE=1 profiled "$exe" -c 'import os; print(os.getpid())' >"$T/pid"
		pid=$(cat "$T/pid")
		collector_stop
		cat "$T/collector.log" "$T/summary.txt"
		grep -qE "pid $pid \(.*\) is not profiled: Python $mm is not supported by this pyprof\$" \
			"$T/collector.log" || fail "the collector did not log pid $pid as not profiled"
		head -1 "$T/summary.txt" | grep -qxE 'processes=0 samples=0 lost=0 refused=1' ||
			fail "first summary line: $(head -1 "$T/summary.txt")"
		grep -qxF "refused 1 Python $mm is not supported by this pyprof" "$T/summary.txt" ||
			fail "no reason line in the summary"
		# nothing written for it
		[[ -z $(ls "$OUT") ]] || fail "a profile was written for a process that was not profiled: $(ls "$OUT")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.13 3.14 system) for_each_python check
}

@test "pyprof record names each reason: a future version, a debug build, a free-threaded build, PyPy" {
	local variant flags version want
	while IFS='|' read -r variant flags version want; do
		# shellcheck disable=SC2086 # flags: zero or one word
		cc -rdynamic -o "$T/$variant" $flags "$PP_TARGETS/fakepy.c" ||
			fail "cannot build the fake interpreter $variant"
		FAKEPY_VERSION=$version run_capture "rec-$variant" "$PP_PYPROF" record \
			-o "$T/$variant.pb.gz" -- "$T/$variant"
		cat "$T/rec-$variant.err"
		assert_eq 3 "$RC" "$variant: the program's exit status"
		grep -qxF "pyprof: 1 process not profiled: $want (profiling off)" "$T/rec-$variant.err" ||
			fail "$variant: no line 'pyprof: 1 process not profiled: $want (profiling off)'"
	done <<'EOF'
future||3.99.0 (fake)|Python 3.99 is not supported by this pyprof
debug|-DDEBUG_BUILD|3.11.7 (fake)|Python 3.11 is a debug build, which pyprof does not support
ft|-DFREE_THREADED|3.13.0 (fake)|Python 3.13 is a free-threaded build, which pyprof does not support yet
pypy|-DPYPY||PyPy is not supported by pyprof (it profiles CPython)
EOF
}
