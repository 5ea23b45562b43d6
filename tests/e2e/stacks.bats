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
# takes a few. A test first profiles its program under every interpreter,
# two at a time, then checks each profile in turn.

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

# profile_one NAME EXE PROGRAM: profiles PROGRAM (in tests/targets/stacks/)
# under EXE, unless it does not run on that version, into $T/prof/NAME-PROGRAM.*:
# .na (why it does not run there) or .rc (its exit status), .err (its
# stderr and any error finding its profile) and .pb.gz.
profile_one() {
	local exe=$2 path=$STACKS/$3 key=$T/prof/$1-$3 v pid rc=0 f
	v=$(python_major_minor "$exe") || v=unknown
	echo "$v" >"$key.version"
	if ! stacks applies "$path" "$v" >"$key.na"; then
		return 0
	fi
	rm -f "$key.na"
	PYPROF_HZ=$STACKS_HZ profiled "$exe" "$path" "$STACKS_SECONDS" \
		>"$key.out" 2>"$key.err" </dev/null 3>&- &
	pid=$!
	wait "$pid" || rc=$?
	echo "$rc" >"$key.rc"
	if f=$(wait_profile "$pid" 2>>"$key.err"); then
		cp "$f" "$key.pb.gz"
	fi
}

# profile_all PROGRAM...: profile_one for every PROGRAM under every
# selected interpreter, two at a time (the programs run on CPU time:
# two cores, two programs). Missing interpreters are for_each_python's
# to report.
profile_all() {
	local name exe kind prog done_pid pid running=() left
	mkdir -p "$T/prof"
	while read -r name exe kind; do
		[[ $kind != missing ]] || continue
		for prog in "$@"; do
			profile_one "$name" "$exe" "$prog" 3>&- &
			running+=($!)
			if ((${#running[@]} >= 2)); then
				# Only our jobs: a bare wait would wait for the collector.
				wait -n -p done_pid "${running[@]}" || true
				left=()
				for pid in "${running[@]}"; do
					[[ $pid == "$done_pid" ]] || left+=("$pid")
				done
				running=("${left[@]}")
			fi
		done
	done < <(pyprof_pythons)
	for pid in "${running[@]}"; do
		wait "$pid" || true
	done
}

# stack_check NAME EXE KIND PROGRAM...: for each PROGRAM profiled under
# this interpreter (profile_all), checks its declared stack. Fails if none
# of them runs here, unless the last argument is "--maybe-none".
stack_check() {
	local name=$1 prog key v rc n=0 none_ok=
	shift 3
	if [[ ${!#} == --maybe-none ]]; then
		none_ok=1
		set -- "${@:1:$#-1}"
	fi
	for prog in "$@"; do
		key=$T/prof/$name-$prog
		v=$(cat "$key.version")
		if [[ -f $key.na ]]; then
			echo "   $(cat "$key.na")"
			continue
		fi
		n=$((n + 1))
		rc=$(cat "$key.rc")
		if ((rc != 0)); then
			cat "$key.err"
			fail "$prog exited with status $rc under the library"
		fi
		if [[ ! -f $key.pb.gz ]]; then
			cat "$key.err"
			fail "$prog: no profile"
		fi
		rc=0
		stacks check "$STACKS/$prog" "$v" "$key.pb.gz" >"$T/check" ||
			rc=$?
		sed 's/^/   /' "$T/check"
		((rc == 0)) || fail "$prog: the expected stack is not in the profile"
	done
	if ((n == 0)) && [[ -z $none_ok ]]; then
		fail "none of $* runs on Python $v"
	fi
}

# stack_test PROGRAM... [--maybe-none]: the body of every test here.
stack_test() {
	local progs=("$@")
	[[ ${progs[-1]} != --maybe-none ]] || unset 'progs[-1]'
	collector_start
	profile_all "${progs[@]}"
	for_each_python stack_check "$@"
}

@test "plain calls: each caller is at its call line, the leaf at its loop" {
	stack_test plain.py
}

@test "a recursion 800 deep is in the profile whole: 802 frames, none cut" {
	stack_test recursion.py
}

@test "a generator runs on top of the loop that iterates it" {
	stack_test generators.py
}

@test "yield from puts the delegating generator between the loop and the inner generator" {
	stack_test yield_from.py --maybe-none
}

@test "a coroutine driven by asyncio runs under the event loop and its awaiting coroutine" {
	stack_test coroutine.py --maybe-none
}

@test "a method, a classmethod and a staticmethod are named by their class from 3.11" {
	stack_test methods.py
}

@test "nested functions and closures are named through their enclosing functions from 3.11" {
	stack_test nested.py
}

@test "a lambda is a frame of its own at its line" {
	stack_test lambdas.py
}

@test "a list comprehension has its own frame up to 3.11 and is inlined from 3.12" {
	stack_test listcomp.py
}

@test "a decorated function runs under each decorator's wrapper frame" {
	stack_test decorators.py
}

@test "a non-ASCII function name in a non-ASCII file name comes out as UTF-8" {
	# The program's path reaches Python through argv: decoded as UTF-8.
	export LC_ALL=C.UTF-8
	stack_test модуль_é.py модуль_é_py2.py
}

@test "a non-ASCII file name is its UTF-8 even when Python decoded it in the C locale" {
	# LC_ALL=C (common_setup): 3.7+ switch to UTF-8 mode (PEP 540), 2.7
	# keeps bytes, but 3.6 decodes argv as ASCII with surrogateescape, so
	# co_filename holds U+DC80-U+DCFF for the bytes of "модуль_é". The
	# profile must still name the file as it is on disk, in UTF-8 (what
	# os.fsencode gives back), not as replacement characters.
	stack_test модуль_é.py модуль_é_py2.py
}

@test "code run through exec is a <module> of file <string> at the exec'd lines" {
	stack_test exec_code.py
}

@test "a loop at module level is sampled as <module> at the loop's line" {
	stack_test module_loop.py
}
