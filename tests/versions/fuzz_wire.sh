#!/bin/bash
# fuzz_wire.sh - the wire decoder's fuzz harness (tests/fuzz/wire_fuzz.c)
# for a fixed short budget, as part of `make check` (tests/run runs every
# tests/versions/*.sh driver; this one is not about Python versions but is
# counted the same way). FUZZ_CHECK_RUNS executions (default 100000, some
# twenty seconds) from the seed corpus into a fresh corpus, under ASan and
# UBSan; prints "ok wire fuzz: ..." or "FAIL wire fuzz: ..." (a finding is
# also copied to tests/fuzz/wire_found/ for test_wire_fuzz to replay).
# The long run is `make fuzz-wire`.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PYPROF_BUILD:-$top/build}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
dir=$BUILD/fuzz/check
rm -rf "$dir/wire_corpus"
mkdir -p "$dir"
exec "$top/tools/fuzz-wire" "$BUILD/fuzz/wire_fuzz" "$dir/wire_corpus" \
	-runs="${FUZZ_CHECK_RUNS:-100000}" -max_len=16384 -seed=1
