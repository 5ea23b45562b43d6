#!/usr/bin/env bats
# labels.bats - labels from the program's own code (the pyprof module):
# what the module promises inside the program (tests/targets/labels_api.py,
# with and without the library), and that CPU, wall and heap samples taken
# under pyprof.labels() carry them, in the shares the program measured
# itself (tests/targets/labels_shares.py; pprof_shares.py label-shares
# reads the profiles through the real `go tool pprof -raw`). Every
# interpreter; the asyncio checks on 3.7+ (contextvars), thread-scoped
# labels on 2.7 and 3.6.

load ../lib/common

setup() {
	common_setup
	API=$PP_TARGETS/labels_api.py
	SHARES=$PP_TARGETS/labels_shares.py
	MOD=$PP_ROOT/preload/module
}

teardown() {
	common_teardown
}

# record NAME EXE MODE SECONDS [pyprof record options...]: labels_shares.py
# MODE under `pyprof record` into $T/NAME.pb.gz, its own shares in
# $T/NAME.truth.json.
record() {
	local name=$1 exe=$2 mode=$3 secs=$4
	shift 4
	run_capture "$name" "$PP_PYPROF" record "$@" -o "$T/$name.pb.gz" -- \
		"$exe" "$SHARES" "$mode" "$secs"
	cat "$T/$name.err"
	assert_eq 0 "$RC" "exit status of labels_shares.py $mode under pyprof record"
	head -1 "$T/$name.out" >"$T/$name.truth.json"
	[[ -s $T/$name.pb.gz ]] || fail "no profile $T/$name.pb.gz"
}

# has_contextvars EXE: 3.7+.
has_contextvars() { "$1" -c 'import contextvars' 2>/dev/null; }

@test "pyprof.labels keeps its promises: nesting, exceptions, decorators, scope, bad input; a no-op without the library" {
	check() {
		local exe=$2
		run_capture off env PYTHONPATH="$MOD" "$exe" "$API" off
		cat "$T/off.out" "$T/off.err"
		assert_eq 0 "$RC" "labels_api.py without the library"
		grep -qx 'ok [0-9]*' "$T/off.out" || fail "no 'ok' without the library"
		[[ ! -s $T/off.err ]] || fail "the module wrote to stderr without the library"
		# preloaded, no collector listening: labels still in force
		run_capture on env PYTHONPATH="$MOD" LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCKDIR/nobody.sock" "$exe" "$API" on
		cat "$T/on.out" "$T/on.err"
		assert_eq 0 "$RC" "labels_api.py with the library"
		grep -qx 'ok [0-9]*' "$T/on.out" || fail "no 'ok' with the library"
		! grep -q 'labels are off' "$T/on.err" || fail "labels were switched off"
	}
	for_each_python check
}

@test "pyprof record: CPU samples carry the labels in force, in the program's own shares (within 4 points)" {
	check() {
		record cpu "$2" cpu 2.5 --hz 250
		shares label-shares "$T/cpu.pb.gz" endpoint "$T/cpu.truth.json" --tol 4
		# Go's own reader selects them
		go tool pprof -symbolize=none -tagfocus 'endpoint=/a' -top \
			"$T/cpu.pb.gz" >"$T/focus" 2>&1
		grep -qE ' burn$' "$T/focus" || { cat "$T/focus"; fail "-tagfocus endpoint=/a shows no burn"; }
		# and so does pyprof top
		"$PP_PYPROF" top --tag endpoint=/b "$T/cpu.pb.gz" >"$T/top" 2>&1
		grep -q 'burn' "$T/top" || { cat "$T/top"; fail "pyprof top --tag endpoint=/b shows no burn"; }
	}
	for_each_python check
}

@test "pyprof record --mode wall: wall samples carry the labels, sleeping or computing (within 5 points)" {
	check() {
		record wall "$2" wall 3 --mode wall --hz 100
		shares label-shares "$T/wall.pb.gz" endpoint "$T/wall.truth.json" --tol 5
	}
	for_each_python check
}

@test "asyncio (3.7+): each task's samples carry its own request's labels (within 5 points); tenants too" {
	check() {
		has_contextvars "$2" || { echo "   no contextvars: thread-scoped labels only"; return 0; }
		record async "$2" async 2.5 --hz 250
		shares label-shares "$T/async.pb.gz" endpoint "$T/async.truth.json" --tol 5
		shares labels "$T/async.pb.gz" tenant | tee "$T/tenants"
		local t
		for t in t0 t1 t2; do
			grep -q "^$t " "$T/tenants" || fail "no sample labelled tenant=$t"
		done
	}
	for_each_python check
}

@test "pyprof record --heap: heap samples carry the labels of the allocating code (in-use bytes within 8 points)" {
	check() {
		record heap "$2" heap 1 --heap --heap-rate 65536
		[[ -s $T/heap.heap.pb.gz ]] || fail "no heap profile"
		# inuse_space: the fourth of Go's heap sample types; among the
		# labelled bytes (the interpreter's own, unlabelled, are more
		# than the program's unlabelled block)
		shares label-shares "$T/heap.heap.pb.gz" endpoint \
			"$T/heap.truth.json" --tol 8 --index 3 --labelled
	}
	for_each_python check
}

@test "trace_id and span_id labels: every traced call's samples carry the ids the program set" {
	check() {
		record trace "$2" trace 1.5 --hz 250
		tail -n +2 "$T/trace.out" | awk '{print $1}' | sort >"$T/ids"
		shares labels "$T/trace.pb.gz" trace_id | awk '$1 != "<none>" {print $1}' |
			sort >"$T/seen"
		[[ -s $T/seen ]] || fail "no sample carries a trace_id"
		local stray
		stray=$(comm -13 "$T/ids" "$T/seen")
		[[ -z $stray ]] || fail "trace ids the program never set: $stray"
		# nearly every sample was taken inside a traced call
		local none total
		none=$(shares labels "$T/trace.pb.gz" trace_id | awk '$1 == "<none>" {print $2}')
		total=$(shares labels "$T/trace.pb.gz" trace_id | awk '{s += $2} END {print s}')
		((${none:-0} * 10 <= total)) || fail "$none of $total samples lack a trace_id"
		shares labels "$T/trace.pb.gz" span_id | grep -qv '^<none>' ||
			fail "no sample carries a span_id"
	}
	for_each_python check
}

@test "a long-running collector's profile carries labels (LD_PRELOAD and PYTHONPATH set by hand)" {
	collector_start
	check() {
		run_capture lp env PYTHONPATH="$MOD" LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" PYPROF_HZ=250 "$2" "$SHARES" cpu 1
		assert_eq 0 "$RC" "exit status"
		local f
		f=$(wait_profile "$PID")
		head -1 "$T/lp.out" >"$T/lp.truth.json"
		shares label-shares "$f" endpoint "$T/lp.truth.json" --tol 6
	}
	for_each_python check
}

# The README's middleware labels each request with its URL path: a long
# path (or one that is not valid text) must not fail the request, and the
# samples carry the value cut to fit, ending with the marker, as valid
# UTF-8 (Go's reader decodes it). Before, entering the block raised
# ValueError only while the library was loaded.
@test "a label value too long or not valid text is cut or replaced, never raised; samples carry it" {
	check() {
		run_capture long "$PP_PYPROF" record --hz 250 -o "$T/long.pb.gz" -- \
			"$2" -c '
import sys, time
sys.path.insert(0, sys.argv[1])
import pyprof
bad = u"/caf\udce9" if sys.version_info[0] > 2 else "/caf\xe9"
def burn(s):
    end = time.time() + s
    while time.time() < end:
        pass
with pyprof.labels(endpoint="/api/" + "x" * 3000, method="GET"):
    burn(0.4)
with pyprof.labels(endpoint=bad):
    burn(0.2)
print(pyprof.stats())
' "$MOD"
		cat "$T/long.out" "$T/long.err"
		assert_eq 0 "$RC" "exit status"
		grep -q "'values_cut': 1" "$T/long.out" || fail "the cut was not counted"
		grep -q "'values_replaced': 1" "$T/long.out" || fail "the replacement was not counted"
		shares labels "$T/long.pb.gz" endpoint >"$T/values"
		"$PP_HOST_PYTHON" - "$T/values" <<'PY'
import io, sys
vals = [l.rsplit(" ", 1)[0] for l in io.open(sys.argv[1], encoding="utf-8")]
cut = [v for v in vals if v.startswith(u"/api/")]
assert len(cut) == 1 and cut[0].endswith(u"\u2026"), vals
assert 900 < len(cut[0].encode("utf-8")) < 1024, len(cut[0])
assert u"/caf\ufffd" in vals, vals
print("   endpoint values: %d bytes ending with the marker; %r" % (
    len(cut[0].encode("utf-8")), [v for v in vals if not v.startswith(u"/api/")]))
PY
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 3.15) for_each_python check
}
