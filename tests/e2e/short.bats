#!/usr/bin/env bats
# short.bats - short processes under `pyprof record` (issue 27): a program
# of 10 ms, run 100 times each under its own `record` on every
# interpreter, is reported every time with its samples (it used to vanish
# on 3.14 and 3.15: the process ended before the library connected); a
# multiprocessing pool whose helpers end just after the main process
# (forkserver and spawn, 3.14's default) is not taken for a daemon, and
# every worker is in the summary. record.bats checks that a real daemon
# still gets the warning.

load ../lib/common

PB="$PP_HOST_PYTHON $PP_ROOT/tests/lib/pprof_pb.py"

setup() {
	common_setup
}

teardown() {
	common_teardown
}

# run_short EXE DIR I: record's run I of short_burn.py, into DIR. One run
# in ten burns nothing (0 samples: still reported); the others 10 ms.
run_short() {
	local exe=$1 d=$2 i=$3 ms=10
	((i % 10)) || ms=0
	echo "$ms" >"$d/r$i.ms"
	"$PP_PYPROF" record --hz 1000 -o "$d/r$i.pb.gz" -- \
		"$exe" "$PP_TARGETS/short_burn.py" "$ms" \
		>"$d/r$i.out" 2>"$d/r$i.err" || echo "run $i: status $?" >>"$d/status"
}

# 1 kHz: at the default 100 Hz a 10 ms program has one sample or none by
# chance (a timer's first expiry is random); at 1 kHz about ten, so a run
# without any says that sampling did not start with the program.
@test "100 runs of a 10 ms program under pyprof record, on every interpreter: each reported with its samples" {
	check() {
		local exe=$2 d=$T/$1 i
		mkdir -p "$d"
		# four at a time: two CPUs, and each run mostly waits
		for ((i = 1; i <= 100; i++)); do
			run_short "$exe" "$d" "$i" &
			((i % 4)) || wait
		done
		wait
		[[ ! -e $d/status ]] || fail "$(cat "$d/status")"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/short_check.py" "$d" 100
		# the reference reader agrees on the sum of all runs' samples (and dropped)
		local sum=0 got n
		for ((i = 1; i <= 100; i++)); do
			n=$(sed -nE 's/.*\(([0-9]+) samples?, .*, ([0-9]+) dropped\)$/\1 + \2/p' "$d/r$i.err")
			sum=$((sum + n))
		done
		got=$(go tool pprof -symbolize=none -raw "$d"/r*.pb.gz 2>/dev/null |
			awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
			     s && $1 ~ /^[0-9]+$/ && NF > 2 { n += $1 } END { print n + 0 }')
		assert_eq "$sum" "$got" "samples in go tool pprof's merge of the 100 profiles"
	}
	for_each_python check
}

# check_pool EXE METHOD: one pool run under record; no daemon warning,
# the parent, every worker and the helpers reported.
check_pool() {
	local exe=$1 method=$2 pid workers n
	run_capture pool "$PP_PYPROF" record -o "$T/pool.pb.gz" -- \
		"$exe" "$PP_TARGETS/short_pool.py" "$method"
	cat "$T/pool.out" "$T/pool.err"
	assert_eq 0 "$RC" "exit status"
	if grep -q 'daemon' "$T/pool.err"; then
		fail "$method: a daemon reported for a pool that ended"
	fi
	workers=$(sed -n 's/^workers //p' "$T/pool.out")
	[[ -n $workers ]] || fail "no workers line"
	$PB comments "$T/pool.pb.gz" >"$T/comments"
	for pid in $workers; do
		grep -q "^pid $pid command: " "$T/comments" ||
			fail "$method: worker $pid not in the profile"
	done
	# the parent, 3 workers, and (forkserver, spawn) the helpers
	n=$(grep -c '^pid [0-9]* command: ' "$T/comments")
	((n >= 4)) || fail "$method: only $n processes in the profile"
	grep -qE "^pyprof: wrote .* \([0-9]+ samples?, $n processes, [0-9]+ dropped\)\$" \
		"$T/pool.err" || fail "$method: the summary does not count $n processes"
	# A stack read that races a process's end may be dropped (a faulted
	# read, a stack that fails validation: 1 in about 60 runs of 3.15's
	# spawn beside a busy load); nothing may be lost on the way.
	if ! grep -q ' 0 dropped)$' "$T/pool.err"; then
		$PB bypid "$T/pool.pb.gz" | grep ' func \[lost: ' | tee "$T/lost"
		if grep -vE '\[lost: (faulted read|invalid stack|no thread state)\]' \
			"$T/lost"; then
			fail "$method: samples lost on the way"
		fi
	fi
}

@test "a multiprocessing pool (forkserver and spawn on 3.14+, the default elsewhere): no daemon warning, every worker reported" {
	check() {
		local exe=$2 method
		# 3.14+: the forkserver (their default) three times, spawn
		# twice; before, the default (fork) once
		case $(python_major_minor "$exe") in
		3.1[4-9]) methods="forkserver forkserver forkserver spawn spawn" ;;
		*) methods=default ;;
		esac
		for method in $methods; do
			check_pool "$exe" "$method"
		done
	}
	for_each_python check
}

# The library's thread may get no CPU at all while a short program runs
# (a loaded machine, one CPU): the program, pinned to one CPU with its
# threads at the same real-time priority (chrt -f), runs to its end
# before that thread is ever scheduled. The interpreter is gone by the
# time the library's destructor asks (PyInterpreterState_Head is NULL
# after Py_FinalizeEx), so whether it was a Python program is read from
# what CPython keeps after finalization (preload/cpython/pylife.h). It
# used to be left out ("no Python process reported"), 5 runs of 5 on
# 3.12 and 2.7. `python -V`, which never starts the interpreter, stays
# out.
@test "a program that ends before the library's thread ever runs is reported; python -V, which starts no interpreter, is not" {
	check() {
		local exe=$2 i
		for i in 1 2 3; do
			run_capture starved chrt -f 50 taskset -c 0 \
				"$PP_PYPROF" record --hz 1000 -o "$T/starved.pb.gz" -- "$exe" -c pass
			cat "$T/starved.err"
			assert_eq 0 "$RC" "exit status"
			grep -qE '^pyprof: wrote .* \([0-9]+ samples?, 1 process, 0 dropped\)$' "$T/starved.err" ||
				fail "run $i: the process is not in the summary"
		done
		run_capture version "$PP_PYPROF" record -o "$T/version.pb.gz" -- "$exe" -V
		cat "$T/version.err"
		grep -q 'no Python process reported' "$T/version.err" ||
			fail "python -V was reported as a Python process"
	}
	for_each_python check
}
