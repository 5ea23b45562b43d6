#!/usr/bin/env bats
# robust.bats - the profiled program does not depend on the collector: it
# finishes normally when the collector dies mid-run or was never there, and
# samples taken before the collector starts still reach it once it does.
# "Runs normally without a collector" on every interpreter in
# tests/lib/pythons.sh; the other two on 2.7, 3.11 (shared and static), 3.13.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
}

teardown() {
	common_teardown
}

@test "the program finishes normally when the collector is killed mid-run" {
	check() {
		local exe=$2 rc_without
		# The reference run: outputs.py's output does not depend on how
		# long it works, so it need not be as long as the profiled one.
		run_capture plain "$exe" "$PP_TARGETS/outputs.py" ok 0.1
		rc_without=$RC
		collector_start
		profiled "$exe" "$PP_TARGETS/outputs.py" ok 2 \
			>"$T/with.out" 2>"$T/with.err" </dev/null 3>&- &
		PID=$!
		sleep 1
		kill -0 "$PID" 2>/dev/null || fail "the program ended within 1 s"
		collector_kill
		RC=0
		wait "$PID" || RC=$?
		assert_same_file "$T/plain.out" "$T/with.out" "stdout"
		assert_same_file "$T/plain.err" "$T/with.err" "stderr"
		assert_eq "$rc_without" "$RC" "exit status"
	}
	# what matters is the collector, not the version: the oldest, the
	# newest, 3.11 shared and static
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 3.13 system) for_each_python check
}

@test "the program runs normally when no collector ever listens" {
	check() {
		local exe=$2 rc_without
		run_capture plain "$exe" "$PP_TARGETS/outputs.py" exit3 0.3
		rc_without=$RC
		run_capture with profiled "$exe" "$PP_TARGETS/outputs.py" exit3 0.3
		assert_same_file "$T/plain.out" "$T/with.out" "stdout"
		assert_same_file "$T/plain.err" "$T/with.err" "stderr"
		assert_eq "$rc_without" "$RC" "exit status"
	}
	for_each_python check
}

@test "samples taken before the collector starts still reach it" {
	check() {
		local exe=$2 f
		rm -f "$SOCK"
		PYPROF_HZ=250 profiled "$exe" "$PP_TARGETS/phases.py" 1 1 \
			>"$T/phases.out" 2>"$T/phases.err" </dev/null 3>&- &
		PID=$!
		# early() takes the first 1 s of CPU; the collector comes at 1.3 s.
		sleep 1.3
		collector_start
		RC=0
		wait "$PID" || RC=$?
		cat "$T/phases.out" "$T/phases.err"
		assert_eq 0 "$RC" "exit status"
		f=$(wait_profile "$PID")
		collector_stop
		tail -1 "$T/phases.out" >"$T/truth.json"
		pprof_raw "$f" >"$T/raw"
		# 2 s of CPU at 250 Hz: ~500 samples. Plausible shares: each
		# within 10 points of the measured 50%.
		shares compare "$T/raw" "$T/truth.json" --tol 10 --min-samples 200
	}
	# what matters is the collector, not the version: the oldest, the
	# newest, 3.11 shared and static
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 3.13 system) for_each_python check
}
