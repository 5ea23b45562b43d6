#!/usr/bin/env bats
# cycles.bats - tools/check-includes (make check-includes): a cycle between
# files is found, by includes and by the objects' link graph, and named;
# the allow list lets known cycles pass and fails on lines that no cycle
# needs any more; collector/ has no cycle at all. No interpreter needed.

load ../lib/common

setup() {
	common_setup
	CI=$PP_ROOT/tools/check-includes
}

teardown() {
	common_teardown
}

# tree DIR FILE:INCLUDE...: makes DIR with FILE including each INCLUDE
# (FILE:- for a file that includes nothing).
tree() {
	local dir=$1 spec f inc
	shift
	for spec in "$@"; do
		f=${spec%%:*}
		inc=${spec#*:}
		mkdir -p "$dir/$(dirname "$f")"
		touch "$dir/$f"
		[[ $inc == - ]] || echo "#include \"$inc\"" >>"$dir/$f"
	done
}

@test "1.1 an include cycle between two modules fails, naming both" {
	tree "$T/t" a.c:a.h a.c:b.h a.h:- b.c:b.h b.h:a.h
	run "$CI" "$T/t"
	echo "$output"
	[[ $status -eq 1 ]] || fail "status $status, want 1"
	[[ $output == *"cycle a -> b -> a"* ]] || fail "the cycle is not named"
	[[ ${lines[-1]} == "check-includes: FAIL: 1 trees, 2 modules checked" ]] ||
		fail "last line: ${lines[-1]}"
}

@test "1.2 X.c including X.h, and a chain without a way back, pass" {
	tree "$T/t" a.c:a.h a.c:b.h a.h:- b.c:b.h b.h:c.h c.h:- c.c:c.h
	run "$CI" "$T/t"
	echo "$output"
	[[ $status -eq 0 ]] || fail "status $status, want 0"
	[[ ${lines[-1]} == "check-includes: ok: 1 trees, 3 modules checked" ]] ||
		fail "last line: ${lines[-1]}"
}

@test "1.3 paths from the tree's root and beside the file both resolve" {
	# daemon/conn.c includes "daemon/control.h" (from the root, as with
	# -Icollector); daemon/control.c includes "conn.h" (beside it).
	tree "$T/t" daemon/conn.c:daemon/control.h daemon/conn.h:- \
		daemon/control.c:conn.h daemon/control.h:-
	run "$CI" "$T/t"
	echo "$output"
	[[ $status -eq 1 ]] || fail "status $status, want 1"
	[[ $output == *"cycle daemon/conn -> daemon/control -> daemon/conn"* ]] ||
		fail "the cycle is not named with its folders"
}

@test "1.4 a cycle of three names all three" {
	tree "$T/t" a.c:b.h b.h:- b.c:c.h c.h:- c.c:a.h a.h:-
	run "$CI" "$T/t"
	echo "$output"
	[[ $status -eq 1 ]] || fail "status $status, want 1"
	[[ $output == *"cycle a -> b -> c -> a"* ]] || fail "the cycle is not named"
}

@test "2.1 the allow list: a known cycle passes, a new one fails" {
	tree "$T/t" a.c:b.h a.h:- b.c:a.h b.h:- c.c:d.h c.h:- d.c:c.h d.h:-
	printf '# known\nt: a b\n' >"$T/allow"
	(cd "$T" && "$CI" --allow allow t) >"$T/out" && status=0 || status=$?
	cat "$T/out"
	[[ $status -eq 1 ]] || fail "status $status, want 1 (c <-> d is not allowed)"
	grep -q "t: known cycle (allowed by allow:2): a -> b -> a" "$T/out" ||
		fail "a <-> b not reported as known"
	grep -q "t: cycle c -> d -> c" "$T/out" || fail "c <-> d not reported"
	printf 't: c d\n' >>"$T/allow"
	(cd "$T" && "$CI" --allow allow t) >"$T/out" && status=0 || status=$?
	cat "$T/out"
	[[ $status -eq 0 ]] || fail "status $status with both allowed, want 0"
}

@test "2.2 an allow line that no cycle needs any more fails" {
	tree "$T/t" a.c:b.h a.h:- b.c:b.h b.h:-
	printf 't: a b\n' >"$T/allow"
	(cd "$T" && "$CI" --allow allow t) >"$T/out" && status=0 || status=$?
	cat "$T/out"
	[[ $status -eq 1 ]] || fail "status $status, want 1"
	grep -q "allow:1: no cycle among these t modules any more: remove the line" \
		"$T/out" || fail "the stale line is not named"
}

@test "3.1 the link graph: objects that call each other are a cycle" {
	mkdir -p "$T/o"
	printf 'void pong(int);\nvoid ping(int n) { if (n) pong(n - 1); }\n' \
		>"$T/o/ping.c"
	printf 'void ping(int);\nvoid pong(int n) { if (n) ping(n - 1); }\n' \
		>"$T/o/pong.c"
	printf 'void ping(int);\nvoid top(void) { ping(3); }\n' >"$T/o/top.c"
	for f in ping pong top; do
		cc -c "$T/o/$f.c" -o "$T/o/$f.o" || fail "cc $f.c"
	done
	run "$CI" --link objs "$T/o/ping.o" "$T/o/pong.o" "$T/o/top.o"
	echo "$output"
	[[ $status -eq 1 ]] || fail "status $status, want 1"
	[[ $output == *"objs: cycle ping -> pong -> ping"* ]] ||
		fail "the cycle is not named"
	run "$CI" --link objs "$T/o/ping.o" "$T/o/top.o"
	echo "$output"
	[[ $status -eq 0 ]] || fail "without pong.o: status $status, want 0"
}

@test "4.1 collector/ has no cycle, by includes or by links, without an allow list" {
	run "$CI" "$PP_ROOT/collector"
	echo "$output"
	[[ $status -eq 0 ]] || fail "collector/ has an include cycle"
	local objs
	objs=$(find "$PP_BUILD/collector" -name '*.o' ! -name 'main_*.o')
	[[ -n $objs ]] || fail "no collector objects in $PP_BUILD/collector"
	# shellcheck disable=SC2086
	run "$CI" --link collector.o $objs
	echo "$output"
	[[ $status -eq 0 ]] || fail "collector/'s objects have a link cycle"
}
