#!/usr/bin/env bats
# scrape.bats - pyprof-collector --http scraped as Grafana Alloy's
# pyroscope.scrape and Parca's scrape_configs scrape it: the exact
# requests they send (path, query, headers, schedule), replayed by
# tests/lib/scrape_client.py (no Alloy or Parca can be installed
# here), scaled down to a 3 s interval: Alloy asks seconds=2 (its
# interval minus one), Parca seconds=3 (its interval).
#
# What a user of those systems checks, from the profiles alone: one
# scraper's windows tile time (each one's time_nanos is the previous
# one's end, exactly), each process is counted for the time it lived
# and only in the windows it lived in, and the CPU the windows hold is
# the CPU the process measured itself (tests/targets/scrape_worker.py).
# Also ?service= and ?command=, that a one-off request still covers the
# next N seconds, that a dormant process scraped as a series samples
# between requests, and that Alloy's memory scrape (allocs) is
# cumulative. Version-independent: one interpreter (the first of
# tests/lib/pythons.sh's list). About a minute.
#
# Rerun one test:  bats -f 'tile' tests/e2e/scrape.bats

load ../lib/common

WORKER=$PP_ROOT/tests/targets/scrape_worker.py
CLIENT="$PP_HOST_PYTHON $PP_ROOT/tests/lib/scrape_client.py"

setup_file() {
	local p
	ST=$(mktemp -d /tmp/pyprof-scrape.XXXXXX)
	export ST SSOCK=$ST/c.sock
	for v in $(compgen -e PYPROF_); do
		case $v in PYPROF_TEST_* | PYPROF_BUILD) ;; *) unset "$v" ;; esac
	done
	"$PP_COLLECTOR" --socket "$SSOCK" --output-dir "$ST/out" --http 0 -v \
		>"$ST/collector.log" 2>&1 3>&- &
	export SCPID=$!
	p=$(http_port "$ST/collector.log")
	export ADDR=127.0.0.1:$p TOKEN
	TOKEN=$(cat "$SSOCK.http-token")
	PY=$(pyprof_pythons | head -1 | cut -d' ' -f2)
	[[ -x $PY ]] || fail "no interpreter: '$(pyprof_pythons | head -1)'"
	export PY
}

teardown_file() {
	local rc=0
	kill -TERM "$SCPID" 2>/dev/null || true
	wait "$SCPID" || rc=$?
	if ((rc != 0)); then
		echo "the collector exited with status $rc; its log:" >&2
		tail -40 "$ST/collector.log" >&2
	fi
	rm -rf "$ST"
	return $rc
}

setup() {
	common_setup
}

teardown() {
	common_teardown
	if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
		echo "# collector log (last 30 lines):" >&3
		tail -30 "$ST/collector.log" | sed 's/^/#   /' >&3
	fi
}

# worker NAME SECONDS [EXE [ENV=VALUE...]]: starts scrape_worker.py
# under the library (as EXE, a link to the interpreter, to give it that
# process name; with the variables given); its pid, spawn time and log in
# NAME_PID, NAME_SPAWN, NAME_LOG.
worker() {
	local exe=${3:-$PY}
	printf -v "$1_SPAWN" '%s' "$(date +%s.%N)"
	printf -v "$1_LOG" '%s' "$T/$1.log"
	env "${@:4}" LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$SSOCK "$exe" "$WORKER" "$1" "$2" "$T/$1.log" \
		>"$T/$1.out" 2>&1 </dev/null 3>&- &
	printf -v "$1_PID" '%s' "$!"
}

# connected PID: waits until the index page lists PID.
connected() {
	local i
	for ((i = 0; i < 200; i++)); do
		curl -s -H "Authorization: Bearer $TOKEN" "http://$ADDR/debug/pprof/" |
			grep -q "data-pid=\"$1\"" && return 0
		sleep 0.05
	done
	fail "pid $1 did not connect"
}

# status URL: the HTTP status, and the body in $T/body.
status() {
	curl -s -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "http://$ADDR$1"
}

@test "Alloy's and Parca's scrapes, replayed at once, each tile time and count every process's CPU once, in the windows it lived in" {
	worker steady 32
	connected "$steady_PID"
	$CLIENT alloy "$ADDR" "$SSOCK.http-token" "$T/alloy" 3 9 >"$T/alloy.out" 2>&1 3>&- &
	apid=$!
	$CLIENT parca "$ADDR" "$SSOCK.http-token" "$T/parca" 3 8 >"$T/parca.out" 2>&1 3>&- &
	ppid=$!
	# Processes that start and end mid-window.
	sleep 4.3
	worker early 5
	sleep 7.9
	worker late 3.7
	wait "$apid" || fail "alloy client: $(cat "$T/alloy.out")"
	wait "$ppid" || fail "parca client: $(cat "$T/parca.out")"
	wait "$steady_PID" "$early_PID" "$late_PID"
	head -2 "$T/alloy/index" "$T/parca/index"
	grep -q ' /debug/pprof/profile?seconds=2$' "$T/alloy/index" ||
		fail "not Alloy's request"
	grep -q ' /debug/pprof/profile?seconds=3$' "$T/parca/index" ||
		fail "not Parca's request"
	rc=0
	for s in "alloy 2" "parca 3"; do
		set -- $s
		echo "== $1: tiling"
		$CLIENT tiles "$T/$1" "$2" || rc=1
		echo "== $1: CPU per process"
		$CLIENT cpu "$T/$1" "steady:$steady_PID:$steady_SPAWN:$steady_LOG" \
			"early:$early_PID:$early_SPAWN:$early_LOG" \
			"late:$late_PID:$late_SPAWN:$late_LOG" || rc=1
	done
	((rc == 0)) || fail "see above"
	# The reference reader takes a continued window as any other.
	go tool pprof -raw "$T/alloy/004.pb.gz" >"$T/raw" || fail "go tool pprof"
	grep -q steady_work "$T/raw" || fail "no steady_work in a continued window"
}

@test "a one-off profile?seconds=N covers the next N seconds, and so does a repeat later than its bound" {
	worker steady 6
	connected "$steady_PID"
	for i in 1 2; do
		t0=$(date +%s.%N)
		[[ $(status "/debug/pprof/profile?seconds=1&pid=$steady_PID") == 200 ]] ||
			fail "status: $(cat "$T/body")"
		cp "$T/body" "$T/one$i.pb.gz"
		$PP_HOST_PYTHON "$PP_ROOT/tests/lib/pprof_pb.py" times "$T/one$i.pb.gz" >"$T/times"
		cat "$T/times"
		grep -qx 'duration_nanos 1000000000' "$T/times" || fail "not 1 s"
		start=$(sed -n 's/^time_nanos //p' "$T/times")
		(($(echo "($start / 10^9 - $t0) < 0.25 && ($start / 10^9 - $t0) > -0.05" | bc -l))) ||
			fail "starts at $start, asked at $t0"
		# The same request again after more than its bound (1 s).
		sleep 1.3
	done
	go tool pprof -raw "$T/one1.pb.gz" | grep -q steady_work || fail "go tool pprof cannot read it"
	wait "$steady_PID"
}

@test "?service= and ?command= select processes by name and command line; bad values get one clear 400" {
	ln -s "$PY" "$T/billing"
	ln -s "$PY" "$T/search"
	worker billing 8 "$T/billing"
	worker search 8 "$T/search"
	connected "$billing_PID"
	connected "$search_PID"
	for q in "service=billing billing search" "command=scrape_worker.py%20search search billing"; do
		set -- $q
		[[ $(status "/debug/pprof/profile?seconds=1&$1") == 200 ]] ||
			fail "$1: $(cat "$T/body")"
		$PP_HOST_PYTHON "$PP_ROOT/tests/lib/pprof_pb.py" pids "$T/body" >"$T/pids"
		echo "$1: pids $(tr '\n' ' ' <"$T/pids")"
		in=${2}_PID out=${3}_PID
		grep -qx "${!in}" "$T/pids" || fail "$1: $2 missing"
		! grep -qx "${!out}" "$T/pids" || fail "$1: $3 is in it"
		go tool pprof -raw "$T/body" | grep -q "${2}_work" || fail "$1: no ${2}_work"
	done
	for q in "service=" "service=a-name-longer-than-fifteen" "command=" \
		"service=billing&pid=$billing_PID"; do
		[[ $(status "/debug/pprof/profile?seconds=1&$q") == 400 ]] || fail "$q: not 400"
		echo "$q: $(cat "$T/body")"
		[[ $(wc -l <"$T/body") == 1 ]] || fail "$q: not one line"
	done
	status "/debug/pprof/profile?seconds=1&service=" >/dev/null
	grep -q "^service must be a process name (the process label): 1 to 15 bytes" "$T/body" ||
		fail "unclear: $(cat "$T/body")"
	[[ $(status "/debug/pprof/heap?service=billing") == 404 ]] ||
		fail "heap of a service without heap sampling: $(cat "$T/body")"
	wait "$billing_PID" "$search_PID"
}

@test "a dormant process (PYPROF_START=off) scraped as a series samples without a break once its series is continued" {
	worker steady 14 "$PY" PYPROF_START=off
	connected "$steady_PID"
	$CLIENT alloy "$ADDR" "$SSOCK.http-token" "$T/alloy" 3 4 >"$T/alloy.out" 2>&1 3>&- ||
		fail "alloy client: $(cat "$T/alloy.out")"
	$CLIENT tiles "$T/alloy" 2 || fail "the windows do not tile"
	wait "$steady_PID" # its notes are written as it exits
	# The first window's hold ends with it and a one-off's standby keeps
	# nothing on: the second window misses its first second. From the
	# third on, the series' standbys hold sampling on between requests.
	$CLIENT cpu --skip 2 "$T/alloy" "steady:$steady_PID:$steady_SPAWN:$steady_LOG" ||
		fail "the series' windows miss CPU of the dormant process"
}

@test "Alloy's memory scrape (allocs, no seconds=) gets allocations that only grow, as its own subtraction needs" {
	PYPROF_HEAP_RATE=64k LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$SSOCK "$PY" "$PP_TARGETS/heap_leak.py" 9 \
		>"$T/leak.out" 2>&1 </dev/null 3>&- &
	lpid=$!
	connected "$lpid"
	$CLIENT alloy "$ADDR" "$SSOCK.http-token" "$T/mem" 2 3 /debug/pprof/allocs \
		>"$T/mem.out" 2>&1 3>&- || fail "alloy client: $(cat "$T/mem.out")"
	cat "$T/mem/index"
	grep -q ' /debug/pprof/allocs$' "$T/mem/index" || fail "not Alloy's memory request"
	$CLIENT grows "$T/mem" "$lpid" || fail "allocs is not cumulative"
	go tool pprof -raw "$T/mem/002.pb.gz" | grep -q leak || fail "go tool pprof: no leak()"
	wait "$lpid"
}
