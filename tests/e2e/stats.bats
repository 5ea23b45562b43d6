#!/usr/bin/env bats
# stats.bats - the numbers can be acted on: `pyprof top --intervals` holds
# the true share about as often as it says, and `pyprof diff --test`
# finds a function that grew from 10% to 15% of the work and finds nothing
# when nothing changed.
#
# Truth by construction: tests/targets/stats_shares.py runs four
# functions of one loop body in a random order, grow() at a share set on
# its command line, and measures each one's CPU time itself. 10 profiles
# at 1 kHz of 2 s of CPU (two at a time) with grow at 10%, 3 more with
# grow at 15% (`pyprof record --repeat 3`): 30 s of CPU in all. The full calibration (200
# function-profiles at 100 Hz and 1 kHz, 1 and 4 threads, 20 + 20 pairs)
# takes minutes: `tests/lib/stats_calib.py bench DIR` (docs/reading.md
# gives its figures).
#
# The bounds leave room for chance, so that the file does not fail one
# run in a hundred: at most 2 of 5 unchanged pairs reported (the test's
# 5% gives 2 or more in 2% of runs, 3 or more in 0.1%), at least 2 of 3
# changes found and named (at 2000 samples a side the change is 4.8
# standard errors; the calibration found 20 of 20), at least 85% of 40
# intervals holding the truth.
#
# It times things, so it starts first:
# tests/run: quiet

load ../lib/common

CALIB=$PP_ROOT/tests/lib/stats_calib.py

setup_file() {
	local py=/usr/bin/python3
	[[ -x $py ]] || py=python3
	export SDIR=$BATS_FILE_TMPDIR/stats
	mkdir -p "$SDIR"
	# perf counters: a sample at each period of a thread's CPU where it
	# runs, which the intervals assume. The default clocks charge a
	# thread where it stopped, and this program reads its clock after
	# every call (its truth): a thread preempted there puts its call's
	# time on the read, a bias larger than the interval (31 of 40 held
	# it; docs/reading.md)
	export PYPROF_CPU_SOURCE=perf
	PYPROF=$PP_BUILD/pyprof "$py" "$CALIB" record "$SDIR" before 10 0.10 2 1 1000 2 \
		>"$SDIR/record.log" 2>&1 || true
	"$PP_BUILD/pyprof" record --repeat 3 --hz 1000 -o "$SDIR/after.pb.gz" -- \
		"$py" "$PP_ROOT/tests/targets/stats_shares.py" 0.15 2 1 7 \
		"$SDIR/after.json" >>"$SDIR/record.log" 2>&1 || true
	local i
	for i in 1 2 3 4 5; do
		mv "$SDIR/before.$((i + 5)).pb.gz" "$SDIR/null.$i.pb.gz" 2>/dev/null
		mv "$SDIR/before.$((i + 5)).json" "$SDIR/null.$i.json" 2>/dev/null
	done
}

setup() {
	common_setup
	export PYPROF=$PP_BUILD/pyprof
	[[ -s $SDIR/before.5.pb.gz && -s $SDIR/null.5.pb.gz && -s $SDIR/after.3.pb.gz ]] ||
		fail "profiles missing: $(cat "$SDIR/record.log")"
}

teardown() {
	common_teardown
}

@test "diff --test: at most 2 of 5 unchanged pairs changed; grow 10% -> 15% found and named in 2 of 3" {
	"$PP_HOST_PYTHON" "$CALIB" pairs "$SDIR" before null 5 >"$T/null"
	cat "$T/null"
	local n
	n=$(sed -n 's/^changed before\/null: \([0-9]*\) of 5$/\1/p' "$T/null")
	[[ -n $n ]] || fail "no count"
	((n <= 2)) || fail "$n of 5 pairs with nothing changed reported a change"
	"$PP_HOST_PYTHON" "$CALIB" pairs "$SDIR" before after 3 --expect grow >"$T/grew"
	cat "$T/grew"
	n=$(sed -n 's/^named grow: \([0-9]*\) of 3$/\1/p' "$T/grew")
	[[ -n $n ]] || fail "no count"
	((n >= 2)) || fail "grow named in $n of 3 pairs only"
}

@test "top --intervals: at least 85% of 40 intervals hold the share the program measured" {
	"$PP_HOST_PYTHON" "$CALIB" coverage "$SDIR" before 5 >"$T/cov"
	"$PP_HOST_PYTHON" "$CALIB" coverage "$SDIR" null 5 >>"$T/cov"
	cat "$T/cov"
	local k
	k=$(awk '/^coverage/ { s += $3 } END { print s }' "$T/cov")
	[[ -n $k ]] || fail "no count"
	((k >= 34)) || fail "only $k of 40 intervals hold the truth"
}

@test "diff --test exit status: 1 for a real change, 0 under --fail-on-increase above it, 2 on error; several runs a side" {
	run "$PYPROF" diff --test "$SDIR/before.1.pb.gz" -- "$SDIR/after.1.pb.gz"
	echo "$output"
	((status == 1)) || fail "exit $status for a real change"
	grep -q '^!.*  grow  ' <<<"$output" || fail "grow not marked failing"
	run "$PYPROF" diff --test --fail-on-increase 20 "$SDIR/before.1.pb.gz" "$SDIR/after.1.pb.gz"
	((status == 0)) || fail "exit $status with --fail-on-increase 20"
	grep -q '^\*.*  grow  ' <<<"$output" || fail "grow not marked real"
	grep -q 'real increases\? of at least 20 points' <<<"$output" || fail "no verdict line"
	run "$PYPROF" diff --test "$SDIR/before.1.pb.gz" -- "$SDIR/nothing.pb.gz"
	((status == 2)) || fail "exit $status for a missing profile"
	run "$PYPROF" diff --test --fail-on-increase x "$SDIR/before.1.pb.gz" "$SDIR/after.1.pb.gz"
	((status == 2)) || fail "exit $status for a bad --fail-on-increase"
	[[ $output == *"--fail-on-increase accepts percentage points"* ]] || fail "$output"
	run "$PYPROF" diff --test "$SDIR"/before.{1,2,3}.pb.gz -- "$SDIR"/after.{1,2,3}.pb.gz
	echo "$output"
	[[ $output == *"between runs (Welch's t)"* ]] || fail "not Welch's t"
	[[ $(grep -m1 '^[*!]' <<<"$output") == *"  grow  "* ]] || fail "grow not the first real change"
}
