#!/usr/bin/env bats
# regrtest_attach.bats - issue 30: CPython's own tests give the same
# results while pyprof attaches to them again and again.
#
# In make check. Each test runs as a process of its own beside the lanes
# once the files that time things have ended (tests/run's "lane: tail";
# docs/testing.md).
#
# tests/run: lane: tail

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	collector_start
}

teardown() {
	common_teardown
}

# Issue 30's attach under load: `pyprof attach --duration 1` twenty times
# into a running `python -m test test_threading test_asyncio` (one
# process: the attach goes where the tests run), beside a run left alone;
# tests/lib/regrtest_attach.py compares them test by test (its header has
# the rule). 2 to 4 minutes per interpreter on the loaded 2-core machine
# (docs/testing.md). On 3.14 alone: 3.15 attaches the same way (PEP 768,
# attach.bats runs both), and its run took 4.5 minutes of make check's
# tail.
regrtest_attached() {
	local name exe kind
	read -r name exe kind < <(PYPROF_TEST_PYTHONS=$1 pyprof_pythons)
	if [[ $kind == missing || -z $exe ]]; then
		fail "no interpreter $1 (make test-deps fetches 3.14 and 3.15)"
		return 1
	fi
	echo "== $name $exe; work files in $T/work"
	# the attach's per-user directory: the test's own
	TMPDIR=$T "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/regrtest_attach.py" \
		--python "$exe" --pyprof "$PP_PYPROF" --work "$T/work" \
		--attaches 20 test_threading test_asyncio
}

@test "CPython 3.14's regression tests test_threading and test_asyncio give the same results while pyprof attaches 20 times" {
	regrtest_attached 3.14
}

