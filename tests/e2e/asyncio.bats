#!/usr/bin/env bats
# asyncio.bats - asyncio as the programmer sees it, in wall mode
# (docs/asyncio.md): samples of a running task carry task=<its name>;
# while the event loop waits, each waiting task gets its own sample, its
# await chain on top of the loop's frames, the tick's time split among
# them. Checked against the programs' own clocks
# (tests/targets/asyncio_tasks.py) and against the waits they set up
# (tests/targets/asyncio_shapes.py), through the real `go tool pprof`, on
# every interpreter with asyncio.run (3.7+); for the C Task, its subclasses
# written in Python, and the pure-Python Task (asyncio.tasks._PyTask).

load ../lib/common

setup() {
	common_setup
	TASKS=$PP_TARGETS/asyncio_tasks.py
	SHAPES=$PP_TARGETS/asyncio_shapes.py
	MOD=$PP_ROOT/preload/module
}

teardown() {
	common_teardown
}

# The interpreters of each layout of asyncio's tasks and futures (3.7 and
# 3.10 for 3.7-3.10, then each minor), for the two longest tests (pure-Python
# tasks, the churn at 1 kHz: 6 to 7 s an interpreter); the others run on
# every interpreter with asyncio.run. make check's time (docs/testing.md).
ASYNCIO_LAYOUTS="3.7 3.10 3.11 3.12 3.13 3.14 3.15"

# has_asyncio_run EXE: 3.7+.
has_asyncio_run() { "$1" -c 'import asyncio; asyncio.run' 2>/dev/null; }

# record NAME EXE SCRIPT ARGS... -- OPTIONS...: SCRIPT under `pyprof
# record --mode wall` into $T/NAME.pb.gz, its output in $T/NAME.out.
record() {
	local name=$1 exe=$2 script=$3
	shift 3
	local args=()
	while (($#)) && [[ $1 != -- ]]; do
		args+=("$1")
		shift
	done
	shift
	run_capture "$name" "$PP_PYPROF" record --mode wall "$@" \
		-o "$T/$name.pb.gz" -- "$exe" "$script" "${args[@]}"
	cat "$T/$name.err"
	assert_eq 0 "$RC" "exit status of $script under pyprof record"
	[[ -s $T/$name.pb.gz ]] || fail "no profile $T/$name.pb.gz"
}

# chain_in FILE NAME...: go tool pprof -traces output FILE has a stack
# whose frames, leaf first, start with the NAMEs one after the other. A
# NAME *X matches a frame whose name ends with X; ?NAME (not the first or
# last) may be missing.
chain_in() {
	local file=$1
	shift
	awk -v want="$*" '
		function is(f, p) {
			sub(/^\?/, "", p)
			if (substr(p, 1, 1) != "*") return f == p
			p = substr(p, 2)
			return length(f) >= length(p) &&
			       substr(f, length(f) - length(p) + 1) == p
		}
		BEGIN { n = split(want, w, " ") }
		/^-----/ { k = 0; next }
		{
			f = $NF
			if (k >= n) next
			if (is(f, w[k + 1])) k++
			else if (w[k + 1] ~ /^\?/ && is(f, w[k + 2])) k += 2
			else k = is(f, w[1])
			if (k == n) found = 1
		}
		END { exit !found }' "$file"
}

@test "two endpoints as tasks: their wall shares by task= within 5 points of the program's clock; handler -> query -> sleep in go tool pprof -traces" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		record tasks "$2" "$TASKS" 3 -- --hz 100
		head -1 "$T/tasks.out" >"$T/truth.json"
		# wall time (the second sample type), among the samples that
		# carry a task (start-up and the interpreter's exit carry none)
		shares label-shares "$T/tasks.pb.gz" task "$T/truth.json" \
			--tol 5 --index 1 --labelled
		go tool pprof -symbolize=none -tagfocus task=slow -traces \
			"$T/tasks.pb.gz" >"$T/traces" 2>&1
		chain_in "$T/traces" sleep query handler slow main ||
			{ head -60 "$T/traces"; fail "no sleep <- query <- handler <- slow <- main stack for task=slow"; }
		# the event loop's frames stay at the root
		grep -q '_run_once' "$T/traces" || fail "no _run_once under the waiting chain"
		# the computing task's own frames while it runs
		go tool pprof -symbolize=none -tagfocus task=compute -top \
			"$T/tasks.pb.gz" >"$T/top" 2>&1
		grep -qE ' spin$' "$T/top" || { cat "$T/top"; fail "task=compute shows no spin"; }
	}
	for_each_python check
}

# tasks_checks NAME EXE KIND: asyncio_tasks.py with --tasks=KIND, the
# checks of the test above: the program ran the class asked for; shares by
# task= within 5 points of its clock; the slow task's chain (NAMEs, as
# chain_in takes them); the computing task's spin.
tasks_checks() {
	local name=$1 exe=$2 kind=$3 want_class=$4 chain=$5
	record "$name" "$exe" "$TASKS" 2 "--tasks=$kind" -- --hz 100
	head -1 "$T/$name.out" >"$T/$name.json"
	grep -q "\"class\": \"$want_class\"" "$T/$name.json" ||
		{ cat "$T/$name.json"; fail "$kind: the tasks are not $want_class"; }
	shares label-shares "$T/$name.pb.gz" task "$T/$name.json" \
		--tol 5 --index 1 --labelled
	go tool pprof -symbolize=none -tagfocus task=slow -traces \
		"$T/$name.pb.gz" >"$T/$name.traces" 2>&1
	# shellcheck disable=SC2086
	chain_in "$T/$name.traces" $chain ||
		{ head -60 "$T/$name.traces"; fail "$kind: no ${chain// / <- } stack for task=slow"; }
	grep -q '_run_once' "$T/$name.traces" || fail "$kind: no _run_once under the waiting chain"
	go tool pprof -symbolize=none -tagfocus task=compute -top \
		"$T/$name.pb.gz" >"$T/$name.top" 2>&1
	grep -qE ' spin$' "$T/$name.top" || { cat "$T/$name.top"; fail "$kind: task=compute shows no spin"; }
}

@test "pure-Python tasks (asyncio.tasks._PyTask: put in place of asyncio.Task, from a task factory, without the _asyncio extension): the same shares, chains and names as C tasks" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		local full="sleep query handler slow main"
		tasks_checks py "$2" py "python Task" "$full"
		# pure-Python futures too: main awaits gather's future through
		# its __await__, a generator at a plain yield, on the chain
		# where the version tells a yield from a finished frame (not
		# 3.10)
		tasks_checks noext "$2" noext "python Task" \
			"sleep query handler slow ?*__await__ main"
		# main stays a C task (made before the factory is set)
		tasks_checks factory "$2" factory "python Task" "$full"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of $ASYNCIO_LAYOUTS) for_each_python check
}

@test "a subclass of the C Task written in Python (class MyTask(asyncio.Task)) is read as a C task" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		tasks_checks sub "$2" subclass "c MyTask" "sleep query handler slow main"
	}
	for_each_python check
}

@test "a waiting task's stack goes on into the task waiting for it: await, gather, shield, wait_for, TaskGroup" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		record shapes "$2" "$SHAPES" 1.5 -- --hz 100
		shares folded "$T/shapes.pb.gz" >"$T/folded"
		local shape n=0
		while read -r shape; do
			n=$((n + 1))
			grep -qE "(^|;)by_$shape;([^;]*;)*child_$shape;nap;sleep " "$T/folded" ||
				{ grep "child_$shape" "$T/folded" | head; fail "$shape: no sleep <- nap <- child_$shape <- ... <- by_$shape stack"; }
		done <"$T/shapes.out"
		((n >= 4)) || fail "the program ran $n shapes"
	}
	for_each_python check
}

@test "waiting tasks carry the labels of their own context (pyprof.labels) beside task=" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		record lab "$2" "$TASKS" 2 --labels -- --hz 100
		# every sample of a task carries that task's endpoint, waiting
		# (in sleep) or running; read with `go tool pprof -raw`
		python3 - "$PP_ROOT/tests/lib" "$T/lab.pb.gz" <<-'EOF'
			import sys
			sys.path.insert(0, sys.argv[1])
			import pprof_shares
			seen = {}
			for _, _, labels in pprof_shares.load(sys.argv[2]).samples:
			    if "task" in labels:
			        seen.setdefault(labels["task"], set()).add(
			            labels.get("endpoint"))
			print(seen)
			assert {"slow", "compute"} <= set(seen), seen
			for task, eps in seen.items():
			    if task in ("slow", "compute"):
			        assert "/" + task in eps and eps <= {"/" + task, None}, \
			            (task, eps)
			    else:
			        # the main task (asyncio.run's, which creates the
			        # others and waits in gather): it runs outside every
			        # labels block, so a sample that finds it running
			        # (wall mode, more often on a loaded machine) has none
			        assert eps == {None}, (task, eps)
			EOF
	}
	for_each_python check
}

@test "tasks made, awaited, cancelled and renamed as fast as asyncio can, read at 1000 Hz: output and exit status unchanged (C tasks, then pure-Python ones)" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		local py
		for py in "" --py; do
			record "churn$py" "$2" "$PP_TARGETS/asyncio_churn.py" 2 ${py:+"$py"} -- --hz 1000
			grep -qx 'ok True' "$T/churn$py.out" ||
				{ cat "$T/churn$py.out"; fail "the program's checksum changed ($py)"; }
			shares labels "$T/churn$py.pb.gz" task | grep -q '^leaf' ||
				fail "no sample of a leaf task (renamed, 3.8+) ($py)"
		done
	}
	PYPROF_TEST_PYTHONS=$(pythons_of $ASYNCIO_LAYOUTS) for_each_python check
}

@test "PYPROF_ASYNCIO=0: no task labels, the loop's select as it is" {
	check() {
		has_asyncio_run "$2" || { echo "   no asyncio.run: skipped"; return 0; }
		PYPROF_ASYNCIO=0 record off "$2" "$TASKS" 1 -- --hz 100
		shares labels "$T/off.pb.gz" task >"$T/tasks"
		cat "$T/tasks"
		! grep -qv '^<none> ' "$T/tasks" || fail "task labels with PYPROF_ASYNCIO=0"
		shares folded "$T/off.pb.gz" | grep -q 'select' || fail "no select in the profile"
	}
	PYPROF_TEST_PYTHONS=${PYPROF_TEST_PYTHONS:-3.11} for_each_python check
}
