#!/usr/bin/env bats
# versions.bats - what the library refuses: a process that looks like a
# Python pyprof does not know gets exactly one line on stderr saying so,
# and otherwise runs as without the library (same output, same status; its
# one refusal notice to the collector is refuse.bats' business). The
# "interpreters" are tests/targets/fakepy.c built with the markers the
# library looks for.

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
}

teardown() {
	common_teardown
}

# build VARIANT CFLAGS...: compiles fakepy.c into $T/VARIANT
build() {
	local name=$1
	shift
	cc -rdynamic -o "$T/$name" "$@" "$PP_TARGETS/fakepy.c" ||
		fail "cannot build the fake interpreter $name"
}

# refused NAME PATTERN [ENV...]: with the library, stdout and status are
# unchanged and stderr is exactly one line matching PATTERN.
refused() {
	local name=$1 pattern=$2
	shift 2
	local rc_plain=0 rc_with=0
	env "$@" "$T/$name" >"$T/plain.out" 2>"$T/plain.err" || rc_plain=$?
	env "$@" LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" "$T/$name" \
		>"$T/with.out" 2>"$T/with.err" || rc_with=$?
	assert_eq 3 "$rc_plain" "the fake interpreter's own status"
	assert_same_file "$T/plain.out" "$T/with.out" "stdout"
	assert_eq "$rc_plain" "$rc_with" "exit status"
	assert_eq 0 "$(wc -l <"$T/plain.err")" "lines on stderr without pyprof"
	assert_eq 1 "$(wc -l <"$T/with.err")" "lines on stderr with pyprof"
	grep -qE "$pattern" "$T/with.err" ||
		fail "stderr does not say '$pattern': $(cat "$T/with.err")"
}

@test "a future CPython version is refused with one line, never guessed" {
	build future
	refused future "Python 3\.99 is not supported" FAKEPY_VERSION="3.99.0 (fake)"
}

@test "a debug build is refused with one line" {
	build debug -DDEBUG_BUILD
	refused debug "debug build" FAKEPY_VERSION="3.11.7 (fake)"
}

@test "a free-threaded build is refused with one line" {
	build ft -DFREE_THREADED
	refused ft "free-threaded" FAKEPY_VERSION="3.13.0 (fake)"
}

@test "PyPy is refused with one line" {
	build pypy -DPYPY
	refused pypy "PyPy is not supported"
}

@test "an unreadable version string is refused with one line" {
	build garbled
	refused garbled "cannot tell this Python's version" FAKEPY_VERSION="banana"
}

@test "an interpreter that never initializes exits at once, silently, without connecting" {
	build neverinit
	collector_start
	local s=$SECONDS
	env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" "$T/neverinit" \
		>"$T/out" 2>"$T/err" || true
	assert_eq "fake python ran" "$(cat "$T/out")" "stdout"
	assert_eq 0 "$(wc -c <"$T/err")" "bytes on stderr"
	((SECONDS - s <= 2)) || fail "exit took $((SECONDS - s)) s"
	collector_stop
	! grep -q "connected" "$T/collector.log" 2>/dev/null ||
		fail "the process connected to the collector"
}
