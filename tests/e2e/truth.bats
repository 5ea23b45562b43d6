#!/usr/bin/env bats
# truth.bats - the profile agrees with what the program measures itself.
#
# shares.py times every call of its three functions with a CPU clock; at
# 250 Hz for 2 s of CPU, each function's share of the samples (cumulative,
# among the three) must be within 3 points of its measured share.
# cwork.py spends its time in C (hashlib, sorted, zlib): those samples must
# be charged to the Python function and the line that made the call. Every
# interpreter in tests/lib/pythons.sh.
#
# It times things, so it starts first, before make check's tail:
# tests/run: quiet

load ../lib/common

setup() {
	common_setup
}

teardown() {
	common_teardown
}

@test "each function's share of the samples is within 3 points of the program's own measure" {
	collector_start
	check() {
		local prof
		prof=$(PYPROF_HZ=250 cached_profile "$1-shares" "$2" \
			"$PP_TARGETS/shares.py" 2)
		tail -1 "$prof.stdout" >"$T/truth.json"
		cat "$T/truth.json"
		pprof_raw "$prof" >"$T/raw"
		# 2 s at 250 Hz is ~500 samples; demand most of them.
		shares compare "$T/raw" "$T/truth.json" --tol 3 --min-samples 300
	}
	for_each_python check
}

# cwork_check NAME EXE KIND FUNC TAG: FUNC's samples are at its line @TAG.
cwork_check() {
	local prof line
	prof=$(PYPROF_HZ=250 cached_profile "$1-cwork" "$2" \
		"$PP_TARGETS/cwork.py" 1.5)
	cat "$prof.stdout"
	pprof_raw "$prof" >"$T/raw"
	line=$(marker_line "$PP_TARGETS/cwork.py" "$5")
	# Each function gets about a third of the CPU; at least 90% of its
	# samples must sit on the call's line, with no deeper Python frame.
	shares expect-line "$T/raw" "$4" "$line" --min 0.9 --min-share 0.2
}

@test "time in hashlib.sha256 is charged to its caller's line" {
	collector_start
	for_each_python cwork_check hash_sha256 sha256
}

@test "time in sorted() is charged to its caller's line" {
	collector_start
	for_each_python cwork_check sort_list sorted
}

@test "time in zlib.compress is charged to its caller's line" {
	collector_start
	for_each_python cwork_check compress_zlib zlib
}
