#!/usr/bin/env bats
# inert.bats - in a process that is not CPython, libpyprof.so does nothing
# at all: byte-identical stdout and stderr, the same exit status, nothing
# printed even when logging is asked for, no connection to the collector.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
}

teardown() {
	common_teardown
}

# same_with_and_without NAME CMD...: runs CMD without, then with, the
# library; stdout, stderr and status must match. Retries (up to 3 times)
# only when two runs without the library already differ, which means CMD's
# output changed under us (a directory's mtime or link count; ls -la /
# showed /proc's link count, the number of processes, which a busy
# machine changes between two runs: hence /usr).
same_with_and_without() {
	local name=$1 try rc_without rc_with rc_again
	shift
	for try in 1 2 3; do
		run_capture "$name.without" "$@"
		rc_without=$RC
		run_capture "$name.with" profiled "$@"
		rc_with=$RC
		run_capture "$name.again" "$@"
		rc_again=$RC
		if cmp -s "$T/$name.without.out" "$T/$name.again.out" &&
			cmp -s "$T/$name.without.err" "$T/$name.again.err" &&
			((rc_without == rc_again)); then
			break
		fi
		echo "output of '$*' changed between two plain runs; retrying"
	done
	assert_same_file "$T/$name.without.out" "$T/$name.with.out" "stdout of '$*'"
	assert_same_file "$T/$name.without.err" "$T/$name.with.err" "stderr of '$*'"
	assert_eq "$rc_without" "$rc_with" "exit status of '$*'"
}

@test "ls -la /usr is unchanged with the library preloaded" {
	same_with_and_without ls ls -la /usr
}

@test "sh -c 'echo hi; exit 3' is unchanged with the library preloaded" {
	same_with_and_without sh sh -c 'echo hi; echo err >&2; exit 3'
	assert_eq 3 "$RC" "exit status"
}

@test "gcc --version is unchanged with the library preloaded" {
	same_with_and_without gcc gcc --version
}

@test "PYPROF_LOG=debug prints nothing in a non-Python process" {
	PYPROF_LOG=debug same_with_and_without sh sh -c 'echo hi; exit 3'
	PYPROF_LOG=debug same_with_and_without ls ls -la /usr
}

@test "a non-Python process never connects to the collector" {
	collector_start
	PYPROF_LOG=debug same_with_and_without sh sh -c 'echo hi; exit 3'
	collector_stop
	local n
	n=$(find "$OUT" -type f | wc -l)
	((n == 0)) || fail "the collector wrote $n file(s): $(ls "$OUT")"
}
