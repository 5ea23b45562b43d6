#!/usr/bin/env bats
# stress.bats - tests/targets/stress_code.py sampled at the highest rate
# (PYPROF_HZ=10000): functions' __code__ swapped under running callers,
# code objects compiled, run and freed in a loop, exceptions raised and
# caught, in five threads for 3 s. The program must behave as
# it does without the library, and its profile must name nothing the
# program did not run there: tests/lib/stress_names.py judges every frame
# of every sample (its header lists the rules) and prints how many were
# [unknown]. Every interpreter in tests/lib/pythons.sh.

load ../lib/common

STRESS_SECONDS=3

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# stress_once NAME EXE: runs stress_code.py once per bats file and
# interpreter, without and with the library, and leaves in
# $BATS_FILE_TMPDIR/stress-NAME/: {without,with}.{out,err,rc}, names.json
# (the profiled run's) and profile.pb.gz.
stress_once() {
	local name=$1 exe=$2 dir=$BATS_FILE_TMPDIR/stress-$1 f
	if [[ -f $dir/done ]]; then
		return 0
	fi
	if [[ -f $dir/error ]]; then
		cat "$dir/error" >&2
		return 1
	fi
	mkdir -p "$dir"
	run_capture without "$exe" "$PP_TARGETS/stress_code.py" \
		"$STRESS_SECONDS" "$dir/names-without.json"
	echo "$RC" >"$dir/without.rc"
	cp "$T/without.out" "$T/without.err" "$dir/"
	PYPROF_HZ=10000 run_capture with profiled "$exe" \
		"$PP_TARGETS/stress_code.py" "$STRESS_SECONDS" "$dir/names.json"
	echo "$RC" >"$dir/with.rc"
	cp "$T/with.out" "$T/with.err" "$dir/"
	if ! f=$(wait_profile "$PID" 2>"$dir/error"); then
		cat "$dir/error" >&2
		return 1
	fi
	cp "$f" "$dir/profile.pb.gz"
	touch "$dir/done"
}

@test "stress_code.py at 10000 Hz: same output and exit status as without the library, no crash" {
	check() {
		local dir=$BATS_FILE_TMPDIR/stress-$1
		stress_once "$1" "$2"
		cat "$dir/with.out"
		assert_eq 0 "$(cat "$dir/without.rc")" "exit status without the library"
		assert_same_file "$dir/without.out" "$dir/with.out" "stdout"
		assert_same_file "$dir/without.err" "$dir/with.err" "stderr"
		assert_eq "$(cat "$dir/without.rc")" "$(cat "$dir/with.rc")" \
			"exit status with the library"
	}
	for_each_python check
}

@test "stress_code.py at 10000 Hz: every name and line in the profile is code the program ran there" {
	check() {
		local dir=$BATS_FILE_TMPDIR/stress-$1
		stress_once "$1" "$2"
		[[ -s $dir/names.json ]] ||
			fail "the profiled run wrote no names.json (exit status $(cat "$dir/with.rc"))"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/stress_names.py" \
			"$dir/profile.pb.gz" "$dir/names.json"
	}
	for_each_python check
}
