#!/usr/bin/env bats
# stacks.bats - exact stacks: for each Python feature, a program in
# tests/targets/stacks/ spends its time in one hot spot, and the profile
# must have that spot's whole stack, root to leaf, with every frame's name,
# file and line as the program declares it ("# @expect" lines; see
# tests/targets/stacks/README.md). tests/lib/stacks.py resolves the
# declaration for each interpreter's version (line tags, co_qualname from
# 3.11, co_name before) and checks that at least half of the samples carry
# exactly that stack.
#
# One feature per @test, every interpreter in tests/lib/pythons.sh inside
# it; a program that cannot run on an interpreter (yield from on 2.7) is
# reported as not applicable there. Each program runs for $STACKS_SECONDS
# of CPU at $STACKS_HZ: about 125 samples, of which the start-up (imports)
# takes a few.

load ../lib/common

STACKS_SECONDS=${STACKS_SECONDS:-0.5}
STACKS_HZ=${STACKS_HZ:-250}

setup() {
	common_setup
	STACKS=$PP_TARGETS/stacks
}

teardown() {
	common_teardown
}

stacks() { "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/stacks.py" "$@"; }

# stack_check NAME EXE KIND PROGRAM...: profiles each PROGRAM (in
# tests/targets/stacks/) that runs on this interpreter and checks its
# declared stack. Fails if none of them runs here unless the last argument
# is "--maybe-none".
stack_check() {
	local exe=$2 v prog path f rc n=0 none_ok=
	shift 3
	if [[ ${!#} == --maybe-none ]]; then
		none_ok=1
		set -- "${@:1:$#-1}"
	fi
	v=$(python_major_minor "$exe")
	for prog in "$@"; do
		path=$STACKS/$prog
		if ! stacks applies "$path" "$v" >"$T/applies"; then
			echo "   $(cat "$T/applies")"
			continue
		fi
		n=$((n + 1))
		PYPROF_HZ=$STACKS_HZ run_capture stack profiled "$exe" "$path" \
			"$STACKS_SECONDS"
		if ((RC != 0)); then
			cat "$T/stack.err"
			fail "$prog exited with status $RC under the library"
		fi
		f=$(wait_profile "$PID")
		rc=0
		stacks check "$path" "$v" "$f" >"$T/check" || rc=$?
		sed 's/^/   /' "$T/check"
		((rc == 0)) || fail "$prog: the expected stack is not in the profile"
	done
	if ((n == 0)) && [[ -z $none_ok ]]; then
		fail "none of $* runs on Python $v"
	fi
}

@test "plain calls: each caller is at its call line, the leaf at its loop" {
	collector_start
	for_each_python stack_check plain.py
}

@test "a recursion 800 deep is in the profile whole: 802 frames, none cut" {
	collector_start
	for_each_python stack_check recursion.py
}

@test "a generator runs on top of the loop that iterates it" {
	collector_start
	for_each_python stack_check generators.py
}

@test "yield from puts the delegating generator between the loop and the inner generator" {
	collector_start
	for_each_python stack_check yield_from.py --maybe-none
}

@test "a coroutine driven by asyncio runs under the event loop and its awaiting coroutine" {
	collector_start
	for_each_python stack_check coroutine.py --maybe-none
}

@test "a method, a classmethod and a staticmethod are named by their class from 3.11" {
	collector_start
	for_each_python stack_check methods.py
}

@test "nested functions and closures are named through their enclosing functions from 3.11" {
	collector_start
	for_each_python stack_check nested.py
}

@test "a lambda is a frame of its own at its line" {
	collector_start
	for_each_python stack_check lambdas.py
}

@test "a list comprehension has its own frame up to 3.11 and is inlined from 3.12" {
	collector_start
	for_each_python stack_check listcomp.py
}

@test "a decorated function runs under each decorator's wrapper frame" {
	collector_start
	for_each_python stack_check decorators.py
}

@test "a non-ASCII function name in a non-ASCII file name comes out as UTF-8" {
	collector_start
	# The program's path reaches Python through argv: decoded as UTF-8.
	export LC_ALL=C.UTF-8
	for_each_python stack_check модуль_é.py модуль_é_py2.py
}

@test "a non-ASCII file name is its UTF-8 even when Python decoded it in the C locale" {
	collector_start
	# LC_ALL=C (common_setup): 3.7+ switch to UTF-8 mode (PEP 540), 2.7
	# keeps bytes, but 3.6 decodes argv as ASCII with surrogateescape, so
	# co_filename holds U+DC80-U+DCFF for the bytes of "модуль_é". The
	# profile must still name the file as it is on disk, in UTF-8 (what
	# os.fsencode gives back), not as replacement characters.
	for_each_python stack_check модуль_é.py модуль_é_py2.py
}

@test "code run through exec is a <module> of file <string> at the exec'd lines" {
	collector_start
	for_each_python stack_check exec_code.py
}

@test "a loop at module level is sampled as <module> at the loop's line" {
	collector_start
	for_each_python stack_check module_loop.py
}
