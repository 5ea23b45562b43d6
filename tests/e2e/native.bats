#!/usr/bin/env bats
# native.bats - PYPROF_NATIVE: one stack from Python down into C.
#
# The profiles are read by the real `go tool pprof -raw` and checked by
# tests/lib/native_check.py (see its header for each question):
#   - numpy (Debian's python3 with python3-numpy, `make test-deps`): the Python
#     line, then numpy's extension, then cblas_dgemm/dgemm_ by name; the
#     shares under BLAS and under numpy's sort match the program's own CPU
#     timing within 5 points;
#   - every interpreter of tests/lib/pythons.sh, on native_cwork.py
#     (hashlib, zlib, re, sorted() with a Python key): the C functions
#     under the calling line; merged stacks rooted at the process entry
#     point, their Python frames in the order of the Python-only profile of
#     the same program, under 1% not merged; the native=yes/no label agrees
#     with the merged stacks within 5 points; interpreter frames between
#     Python frames folded, kept with PYPROF_NATIVE=all;
#   - nothing of it loads without PYPROF_NATIVE.
# Debian's python3 is stripped: its own functions (the re engine, sorted)
# have no names there, so for it those checks look for frames of the
# interpreter's code (unnamed) instead of names.

load ../lib/common

setup() {
	common_setup
	CHECK="$PP_HOST_PYTHON $PP_ROOT/tests/lib/native_check.py"
	CWORK=$PP_TARGETS/native_cwork.py
}

teardown() {
	common_teardown
}

native_profile() {
	PYPROF_NATIVE=1 PYPROF_HZ=250 cached_profile "$1-native" "$2" \
		"$CWORK" 3
}

@test "numpy: the Python line, numpy's C code, then the BLAS routine by name, shares within 5 points of the program's timing" {
	/usr/bin/python3 -c 'import numpy' ||
		fail "Debian's python3-numpy is missing (make test-deps installs it)"
	local prof=$T/numpy.pb.gz
	# through pyprof record --native, the way a user would
	run_capture numpy "$PP_PYPROF" record --native --hz 250 -o "$prof" -- \
		/usr/bin/python3 "$PP_TARGETS/native_numpy.py" 4
	((RC == 0)) || { cat "$T/numpy.err"; fail "pyprof record: $RC"; }
	tail -1 "$T/numpy.out" | tee "$T/truth.json"
	$CHECK numpy "$prof" "$T/truth.json" --tol 5 \
		--matmul-line "$(marker_line "$PP_TARGETS/native_numpy.py" matmul)" \
		--sort-line "$(marker_line "$PP_TARGETS/native_numpy.py" sort)"
}

# under_check NAME EXE KIND: each kind of C work of native_cwork.py has C
# functions below its calling line.
under_check() {
	local prof interp_re sre sorter
	prof=$(native_profile "$1" "$2")
	cat "$prof.stdout"
	if [[ $3 == static ]]; then
		# stripped: the interpreter's own functions have no names
		sre=@interp
		sorter=@interp
	else
		sre='(?i)sre'
		sorter='sort'
	fi
	$CHECK under "$prof" --func sha256 --native '(?i)sha' --min 0.8 \
		--line "$(marker_line "$CWORK" sha256)"
	$CHECK under "$prof" --func compress --native 'deflate' --min 0.8 \
		--line "$(marker_line "$CWORK" zlib)"
	$CHECK under "$prof" --func regex --native "$sre" --min 0.8 \
		--line "$(marker_line "$CWORK" regex)"
	$CHECK under "$prof" --func keysort --native "$sorter" --min 0.8 \
		--line "$(marker_line "$CWORK" keysort)"
}

@test "hashlib, zlib, re and sorted: their C functions appear under the calling line" {
	collector_start
	for_each_python under_check
}

merged_check() {
	local prof pyonly
	prof=$(native_profile "$1" "$2")
	pyonly=$(PYPROF_HZ=250 cached_profile "$1-pyonly" "$2" "$CWORK" 3)
	$CHECK merged "$prof" --pyonly "$pyonly" --max-unmerged 0.01 \
		--min-root 0.99 --max-unknown 0.01 --within main
}

@test "merged stacks start at the entry point, keep the Python-only profile's order, and under 1% are unmergeable" {
	collector_start
	for_each_python merged_check
}

label_check() {
	$CHECK label "$(native_profile "$1" "$2")" --tol 5
}

@test "the native=yes/no label agrees with the merged stacks' split within 5 points" {
	collector_start
	for_each_python label_check
}

fold_check() {
	local prof all
	prof=$(native_profile "$1" "$2")
	all=$(PYPROF_NATIVE=all PYPROF_HZ=250 cached_profile "$1-all" "$2" \
		"$CWORK" 3)
	$CHECK between "$prof" --outer keysort --inner key --native @interp \
		--expect-none
	$CHECK between "$all" --outer keysort --inner key --native @interp \
		--expect-some
}

@test "interpreter frames between two Python frames are folded, and kept with PYPROF_NATIVE=all" {
	collector_start
	for_each_python fold_check
}

@test "without PYPROF_NATIVE libunwind is not loaded; with it, it is" {
	local prog='import sys; print("libunwind" in open("/proc/self/maps").read())'
	run_capture off profiled /usr/bin/python3 -c "$prog"
	assert_eq False "$(cat "$T/off.out")" "libunwind mapped without PYPROF_NATIVE"
	PYPROF_NATIVE=1 run_capture on profiled /usr/bin/python3 -c "$prog"
	assert_eq True "$(cat "$T/on.out")" "libunwind mapped with PYPROF_NATIVE=1"
	PYPROF_NATIVE=maybe run_capture bad profiled /usr/bin/python3 -c "$prog"
	grep -q 'PYPROF_NATIVE="maybe" is not valid' "$T/bad.err" ||
		fail "a bad PYPROF_NATIVE value is not reported: $(cat "$T/bad.err")"
	assert_eq False "$(cat "$T/bad.out")" "libunwind mapped after a bad value"
}

fork_check() {
	local out
	# every child must exit: a hang is the failure (timeout)
	out=$(PYPROF_NATIVE=1 PYPROF_HZ=250 timeout 120 \
		"$PP_PYPROF" record --native -o "$T/fork-$1.pb.gz" -- \
		"$2" "$PP_TARGETS/native_fork.py" 30) ||
		fail "$1: native_fork.py did not finish ($?)"
	assert_eq "forks 30" "$out" "$1: the program's output"
}

@test "forking while threads are unwound never leaves a child hanging" {
	for_each_python fork_check
}
