#!/usr/bin/env bats
# smoke.bats - the spine end to end, quickly: a Python program profiled
# through LD_PRELOAD and a collector, its profile read back with the real
# `go tool pprof`, for every interpreter in tests/lib/pythons.sh.
#
# The target is tests/targets/calls.py (<module> -> outer -> middle ->
# inner); expected lines come from its "# @tag" comments. One profile per
# interpreter is taken by the first test that needs it and reused by the
# others (cached_profile). Part of QUICK=1 (make check-quick).

load ../lib/common

setup() {
	common_setup
	CALLS=$PP_TARGETS/calls.py
}

teardown() {
	common_teardown
}

# calls_profile NAME EXE: the cached profile of calls.py under EXE.
calls_profile() {
	cached_profile "$1-calls" "$2" "$CALLS" 1.5
}

@test "every interpreter selected for testing is installed" {
	check() { "$2" -c 'import sys' || fail "$2 does not run"; }
	for_each_python check
}

@test "go tool pprof -raw parses the profile of a Python program" {
	collector_start
	check() {
		local prof
		prof=$(calls_profile "$1" "$2")
		pprof_raw "$prof" >"$T/raw" || fail "go tool pprof -raw failed"
		shares summary "$T/raw"
		grep -qx 'samples/count cpu/nanoseconds' "$T/raw" ||
			grep -qx 'samples/count\[dflt\] cpu/nanoseconds' "$T/raw" ||
			grep -qx 'samples/count cpu/nanoseconds\[dflt\]' "$T/raw" ||
			fail "sample types are not samples/count cpu/nanoseconds"
		grep -qx 'PeriodType: cpu nanoseconds' "$T/raw" ||
			fail "period type is not cpu/nanoseconds"
		local n
		n=$(shares summary "$T/raw" | sed -n 's/^samples: \([0-9]*\) .*/\1/p')
		# 1.5 s of CPU at 100 Hz: about 150.
		((n >= 75)) || fail "only $n samples for 1.5 s of CPU at 100 Hz"
	}
	for_each_python check
}

@test "the profile file is named <comm>.<pid>.<UTC time>Z.pb.gz" {
	collector_start
	check() {
		run_capture calls profiled "$2" "$CALLS" 0.2
		((RC == 0)) || fail "calls.py exited with status $RC"
		local f
		f=$(wait_profile "$PID")
		[[ $(basename "$f") =~ ^[^/]+\.$PID\.[0-9]{8}T[0-9]{6}Z\.pb\.gz$ ]] ||
			fail "unexpected name $(basename "$f")"
	}
	for_each_python check
}

@test "functions carry their name, file and def line" {
	collector_start
	check() {
		local prof fn tag
		prof=$(calls_profile "$1" "$2")
		pprof_raw "$prof" >"$T/raw"
		shares funcs "$T/raw" | tee "$T/funcs"
		for fn in outer middle inner; do
			tag=def_$fn
			grep -qE "^ *[0-9.]+% +[0-9.]+% +[0-9]+  $fn $CALLS:$(marker_line "$CALLS" "$tag")\$" \
				"$T/funcs" ||
				fail "$fn not found as '$fn $CALLS:<line of @$tag>'"
		done
	}
	for_each_python check
}

@test "each frame is at the line it was executing" {
	collector_start
	check() {
		local prof
		prof=$(calls_profile "$1" "$2")
		pprof_raw "$prof" >"$T/raw"
		# Callers are always at their call line.
		shares expect-line "$T/raw" middle "$(marker_line "$CALLS" middle_call)" \
			--min 0 --min-share 0.5
		# A caller's samples as a caller are all at its call line; as the
		# leaf it may be at its first line (entered, not yet calling: a
		# sampler that finds the thread where it stopped sees that more
		# often than one that interrupts it, 2 of 118 once on 3.12).
		local fn mark
		for fn in middle outer; do
			mark=$(marker_line "$CALLS" "${fn}_call")
			shares lines "$T/raw" "$fn" | tee "$T/$fn"
			awk -v want="$mark" '$1 == "line" { l = $2; sub(":", "", l); leaf = $NF; sub(/\)/, "", leaf)
				if (l == want) at += $3 - leaf; else if ($3 - leaf > 0) bad = 1 }
				END { exit !(at > 0 && !bad) }' "$T/$fn" ||
				fail "$fn is not always at its call line when it calls"
		done
		shares lines "$T/raw" '<module>' --file "$CALLS" | tee "$T/module"
		grep -q "line $(printf %5d "$(marker_line "$CALLS" module_call)"):" "$T/module" ||
			fail "<module> is never at its call line"
		# The leaf is inside inner's loop (while, body, increment).
		local w b i
		w=$(marker_line "$CALLS" inner_while)
		b=$(marker_line "$CALLS" inner_body)
		i=$(marker_line "$CALLS" inner_incr)
		shares lines "$T/raw" inner | tee "$T/inner"
		local inloop total
		total=$(sed -n 's/^function inner: \([0-9]*\) of.*/\1/p' "$T/inner")
		inloop=$(awk -v w="$w" -v b="$b" -v i="$i" \
			'$1 == "line" { l = $2 + 0; if (l == w || l == b || l == i) s += $3 } END { print s + 0 }' \
			"$T/inner")
		((inloop * 100 >= total * 95)) ||
			fail "only $inloop of $total samples of inner are on its loop lines $w-$i"
	}
	for_each_python check
}

@test "go tool pprof -traces shows the stack leaf first" {
	collector_start
	check() {
		local prof
		prof=$(calls_profile "$1" "$2")
		pprof_traces "$prof" >"$T/traces" || fail "go tool pprof -traces failed"
		head -20 "$T/traces"
		# A trace block lists inner, middle, outer, <module> in this order.
		awk '
			/^-+\+/ { s = ""; next }
			{ sub(/^ *[0-9.]+[a-z]*s? +/, ""); gsub(/^ +| +$/, ""); s = s "|" $0 }
			s ~ /\|inner\|middle\|outer\|<module>/ { found = 1 }
			END { exit !found }' "$T/traces" ||
			fail "no trace reads inner, middle, outer, <module>"
	}
	for_each_python check
}

@test "go tool pprof -top shows inner as the hottest function" {
	collector_start
	check() {
		local prof first
		prof=$(calls_profile "$1" "$2")
		pprof_top "$prof" >"$T/top" || fail "go tool pprof -top failed"
		cat "$T/top"
		first=$(awk 'f { print $NF; exit } /flat%/ { f = 1 }' "$T/top")
		assert_eq inner "$first" "top function by flat time"
	}
	for_each_python check
}

@test "every sample is labelled with the process id" {
	collector_start
	check() {
		run_capture calls profiled "$2" "$CALLS" 0.5
		((RC == 0)) || fail "calls.py exited with status $RC"
		local f
		f=$(wait_profile "$PID")
		pprof_raw "$f" >"$T/raw"
		shares labels "$T/raw" pid | tee "$T/pids"
		assert_eq "$PID" "$(awk '{ print $1 }' "$T/pids" | tr '\n' ' ' | sed 's/ $//')" \
			"pid labels"
		shares labels "$T/raw" thread_id | tee "$T/tids"
		! grep -q '^<none>' "$T/tids" || fail "samples without a thread_id label"
	}
	for_each_python check
}

@test "the library and the collector meet on the default socket" {
	# The quick start's second form: no --socket, no PYPROF_SOCKET. A
	# private XDG_RUNTIME_DIR keeps it away from a real user's collector.
	export XDG_RUNTIME_DIR=$SOCKDIR/xdg
	mkdir -m 0700 "$XDG_RUNTIME_DIR"
	"$PP_COLLECTOR" --output-dir "$OUT" >"$T/collector.log" 2>&1 3>&- &
	COLLECTOR_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		[[ -S $XDG_RUNTIME_DIR/pyprof/collector.sock ]] && break
		sleep 0.05
	done
	[[ -S $XDG_RUNTIME_DIR/pyprof/collector.sock ]] ||
		fail "no socket at \$XDG_RUNTIME_DIR/pyprof/collector.sock: $(cat "$T/collector.log")"
	check() {
		LD_PRELOAD=$PP_LIB "$2" "$PP_TARGETS/calls.py" 0.3 \
			>"$T/out" 2>"$T/err" </dev/null 3>&- &
		PID=$!
		wait "$PID" || fail "calls.py failed: $(cat "$T/err")"
		wait_profile "$PID" >/dev/null
	}
	for_each_python check
}
