#!/usr/bin/env bats
# http.bats - pyprof-collector --http: Go's /debug/pprof/ endpoints over
# live Python processes.
#
# One collector and two busy processes for the whole file (setup_file):
# alpha on the first interpreter of tests/lib/pythons.sh's list, beta on
# the last, each burning CPU in a function named after it
# (tests/targets/http_worker.py). Profiles are fetched and read by the
# real `go tool pprof` (URL as its source), raw requests are sent by
# tests/lib/http_raw.py, and the pages are used in headless Chromium by
# tests/lib/http_cdp.py (screenshots in build/test-artifacts/http/).
# Tests that need a collector of their own (token, shutdown) start one.
# Every collector here makes its own access token, as by default: the
# tests read it from SOCKET.http-token as a user would, and send it the
# ways clients can: in the URL (http://pyprof:TOKEN@host/ for curl and go
# tool pprof, ?token= for the browser, which then keeps its cookie) or as
# Authorization: Bearer in raw requests.
#
# Rerun one test:  bats -f 'pid=' tests/e2e/http.bats

load ../lib/common

WORKER=$PP_ROOT/tests/targets/http_worker.py
RAWHTTP="$PP_HOST_PYTHON $PP_ROOT/tests/lib/http_raw.py"
RAWPROF="$PP_HOST_PYTHON $PP_ROOT/tests/lib/pprof_raw.py"

setup_file() {
	local first last i
	HT=$(mktemp -d /tmp/pyprof-http.XXXXXX)
	export HT HSOCK=$HT/c.sock
	for v in $(compgen -e PYPROF_); do
		case $v in PYPROF_TEST_* | PYPROF_BUILD) ;; *) unset "$v" ;; esac
	done
	"$PP_COLLECTOR" --socket "$HSOCK" --output-dir "$HT/out" --http 0 -v \
		>"$HT/collector.log" 2>&1 3>&- &
	export HCPID=$!
	PORT=$(http_port "$HT/collector.log")
	export PORT TOKEN
	TOKEN=$(cat "$HSOCK.http-token")
	[[ $TOKEN =~ ^[0-9a-f]{32}$ ]] || fail "token file: '$TOKEN'"
	export BASE=http://pyprof:$TOKEN@127.0.0.1:$PORT
	first=$(pyprof_pythons | head -1)
	last=$(pyprof_pythons | tail -1)
	[[ $first != *" missing" && $last != *" missing" ]] ||
		fail "interpreter missing: '$first' / '$last'"
	export PYA PYB
	PYA=$(echo "$first" | cut -d' ' -f2)
	PYB=$(echo "$last" | cut -d' ' -f2)
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK "$PYA" "$WORKER" alpha 120 "$HT/alpha.cpu" \
		>"$HT/alpha.out" 2>&1 </dev/null 3>&- &
	export APID=$!
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK "$PYB" "$WORKER" beta 120 "$HT/beta.cpu" \
		>"$HT/beta.out" 2>&1 </dev/null 3>&- &
	export BPID=$!
	# Both connected and sending samples.
	for ((i = 0; i < 200; i++)); do
		if curl -s "$BASE/debug/pprof/" >"$HT/index.html" &&
			grep -q "data-pid=\"$APID\"" "$HT/index.html" &&
			grep -q "data-pid=\"$BPID\"" "$HT/index.html"; then
			return 0
		fi
		sleep 0.05
	done
	cat "$HT/collector.log" >&2
	fail "the two workers did not connect"
}

teardown_file() {
	local rc=0
	kill -TERM "$APID" "$BPID" 2>/dev/null || true
	wait "$APID" "$BPID" 2>/dev/null || true
	kill -TERM "$HCPID" 2>/dev/null || true
	wait "$HCPID" || rc=$?
	# The file's collector served every test: it must exit cleanly
	# (under PYPROF_BUILD=build-asan, with no leak either).
	if ((rc != 0)); then
		echo "the collector exited with status $rc; its log:" >&2
		tail -40 "$HT/collector.log" >&2
	fi
	rm -rf "$HT"
	return $rc
}

setup() {
	common_setup
	export PPROF_TMPDIR=$T # where go tool pprof saves what it fetched
}

teardown() {
	common_teardown
	if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
		echo "# collector log (last 30 lines):" >&3
		tail -30 "$HT/collector.log" | sed 's/^/#   /' >&3
	fi
}

# sum_label SUMMARY KEY=VALUE: the samples with that label (0 if none).
sum_label() {
	local n
	n=$(sed -n "s/^label $2 //p" "$1")
	echo "${n:-0}"
}

@test "go tool pprof -top over HTTP shows the functions of both processes" {
	go tool pprof -symbolize=none -top "$BASE/debug/pprof/profile?seconds=3" \
		>"$T/top" 2>"$T/top.err" || { cat "$T/top.err"; fail "pprof failed"; }
	cat "$T/top"
	grep -q 'alpha_work' "$T/top" || fail "alpha_work missing"
	grep -q 'beta_work' "$T/top" || fail "beta_work missing"
	grep -q 'Duration: 3s' "$T/top" || fail "not a 3 s profile"
}

@test "go tool pprof -raw over HTTP: both pids labelled, with the CPU each process measured itself in the window" {
	t0=$(date +%s.%N)
	a0=$(cat "$HT/alpha.cpu") b0=$(cat "$HT/beta.cpu")
	$RAWPROF summary "$BASE/debug/pprof/profile?seconds=2" >"$T/sum"
	a1=$(cat "$HT/alpha.cpu") b1=$(cat "$HT/beta.cpu")
	t1=$(date +%s.%N)
	cat "$T/sum"
	grep -q "^label command=.*http_worker.py alpha" "$T/sum" ||
		fail "no command label for alpha"
	grep -q "^type samples/count cpu/nanoseconds" "$T/sum"
	# Each process's own CPU clock from before the request to after the
	# answer (files refreshed every 50 ms) covers the 2 s window plus
	# `outside` seconds of wall time, in which it used at most that much
	# CPU. At 100 Hz a sample is 10 ms of CPU. The profile may not hold
	# more than the process used (3% and 70 ms for counting and for the
	# last file being up to 50 ms old): more means samples from outside
	# the window. Nor less than what it used in the window (10% slack):
	# less means samples of the window missing.
	outside=$(echo "$t1 - $t0 - 2" | bc -l)
	for x in "alpha $APID $a0 $a1" "beta $BPID $b0 $b1"; do
		set -- $x
		n=$(sum_label "$T/sum" "pid=$2")
		prof=$(echo "$n / 100" | bc -l)
		used=$(echo "$4 - $3" | bc -l)
		printf '%s: profile %.2fs, own clock %.2fs, outside the window %.2fs\n' \
			"$1" "$prof" "$used" "$outside"
		((n > 0)) || fail "$1 (pid $2) has no sample"
		(($(echo "$prof <= $used * 1.03 + 0.07" | bc -l))) ||
			fail "$1: more CPU in the profile than the process used"
		(($(echo "$prof >= ($used - $outside - 0.1) * 0.9" | bc -l))) ||
			fail "$1: the profile misses CPU time of the window"
	done
}

@test "?pid= narrows the profile to that process" {
	$RAWPROF summary "$BASE/debug/pprof/profile?seconds=2&pid=$APID" >"$T/sum"
	cat "$T/sum"
	a=$(sum_label "$T/sum" "pid=$APID")
	((a >= 1)) || fail "alpha: no sample"
	[[ $(sum_label "$T/sum" "pid=$BPID") == 0 ]] || fail "beta is in it"
	grep -q '^stack .*alpha_work' "$T/sum"
	! grep -q 'beta_work' "$T/sum" || fail "beta_work in a pid=$APID profile"
}

@test "a process that starts and ends during the window is in it for the time it ran" {
	curl -s -o "$T/g.pb.gz" "$BASE/debug/pprof/profile?seconds=3" 3>&- &
	cpid=$!
	sleep 0.7
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK "$PYB" "$WORKER" gamma 1 >"$T/gamma.out" 3>&- &
	gpid=$!
	wait "$gpid"
	wait "$cpid"
	$RAWPROF summary "$T/g.pb.gz" >"$T/sum"
	cat "$T/sum"
	grep -q '^stack .*gamma_work' "$T/sum" || fail "gamma_work missing"
	# It ran 1 s of wall time (part of it starting up): at most 100
	# samples at 100 Hz (+5% timer slack); the others ran all along.
	g=$(sum_label "$T/sum" "pid=$gpid")
	a=$(sum_label "$T/sum" "pid=$APID")
	echo "gamma $g, alpha $a"
	((g >= 1 && g <= 105)) || fail "gamma (pid $gpid): $g samples"
	((a > g)) || fail "alpha ($a) should have more than gamma ($g)"
}

# idx_field PID CLASS: that process's cell in the index page.
idx_field() {
	curl -s "$BASE/debug/pprof/" |
		sed -n "s|.*data-pid=\"$1\".*<td class=\"$2\">\([^<]*\)</td>.*|\1|p"
}

@test "a dormant process (PYPROF_START=off) samples for the window, and only then" {
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK PYPROF_START=off "$PYB" "$WORKER" delta 30 \
		>"$T/delta.out" 3>&- &
	dpid=$!
	for ((i = 0; i < 100; i++)); do
		[[ $(idx_field "$dpid" sampling) == dormant ]] && break
		sleep 0.05
	done
	[[ $(idx_field "$dpid" sampling) == dormant ]] || fail "not dormant: $(idx_field "$dpid" sampling)"
	[[ $(idx_field "$dpid" samples) == 0 ]]
	$RAWPROF summary "$BASE/debug/pprof/profile?seconds=2&pid=$dpid" >"$T/sum"
	cat "$T/sum"
	n=$(sum_label "$T/sum" "pid=$dpid")
	((n >= 1 && n <= 210)) || fail "dormant process: $n samples in 2 s"
	grep -q '^stack .*delta_work' "$T/sum"
	# Back to dormant: the sample count stops.
	for ((i = 0; i < 40; i++)); do
		[[ $(idx_field "$dpid" sampling) == dormant ]] && break
		sleep 0.05
	done
	[[ $(idx_field "$dpid" sampling) == dormant ]] || fail "still sampling"
	c1=$(idx_field "$dpid" samples)
	sleep 0.5
	c2=$(idx_field "$dpid" samples)
	kill "$dpid"
	wait "$dpid" || true
	[[ $c1 == "$c2" ]] || fail "samples still coming: $c1 then $c2"
	((c1 >= n)) || fail "the collector counted $c1 samples, the window $n"
}

@test "unknown pid, seconds=0 and seconds=100000 get clear errors, as go tool pprof shows them" {
	curl -s -i "$BASE/debug/pprof/profile?seconds=1&pid=999999" | tr -d '\r' >"$T/r1"
	grep -q '^HTTP/1.1 404' "$T/r1"
	grep -q '^X-Go-Pprof: 1' "$T/r1"
	grep -q '^Content-Type: text/plain' "$T/r1"
	grep -q 'no process with pid 999999 is connected' "$T/r1"
	curl -s -i "$BASE/debug/pprof/profile?seconds=0" | tr -d '\r' >"$T/r2"
	grep -q '^HTTP/1.1 400' "$T/r2"
	grep -q "seconds must be a whole number from 1 to 3600, not '0'" "$T/r2"
	curl -s -i "$BASE/debug/pprof/profile?seconds=100000" | tr -d '\r' >"$T/r3"
	grep -q '^HTTP/1.1 400' "$T/r3"
	grep -q "not '100000'" "$T/r3"
	curl -s -i "$BASE/flamegraph?seconds=2&mode=nap" | tr -d '\r' >"$T/r4"
	grep -q '^HTTP/1.1 400' "$T/r4"
	grep -q "mode must be cpu or wall, not 'nap'" "$T/r4"
	# What a Go user sees.
	run go tool pprof -top "$BASE/debug/pprof/profile?seconds=100000"
	echo "$output"
	((status != 0))
	[[ $output == *"400 Bad Request - seconds must be a whole number from 1 to 3600"* ]]
	run go tool pprof -top "$BASE/debug/pprof/profile?seconds=1&pid=999999"
	[[ $output == *"404 Not Found - no process with pid 999999"* ]]
}

@test "malformed, oversized and slow requests get their errors while a profile keeps streaming" {
	# The profile: 3 s, fetched meanwhile; it must arrive on time.
	curl -s -o "$T/p.pb.gz" -w '%{http_code} %{time_total}\n' \
		"$BASE/debug/pprof/profile?seconds=3" >"$T/curl.out" 3>&- &
	cpid=$!
	# A slow client: half a head, then a byte every 3 s, which must not
	# push back the time-out (10 s from the request's first byte).
	$RAWHTTP "$PORT" --send 'GET /debug/pprof/ HTTP/1.1\r\nHo' --pause 3 \
		--send 's' --send 't' --send ':' --timeout 14 >"$T/slow" 3>&- &
	spid=$!
	$RAWHTTP "$PORT" --send 'GET / HTTP/1.1\nHost: x\n\n' --timeout 3 >"$T/lf"
	$RAWHTTP "$PORT" --send 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: @20000*a\r\n\r\n' --timeout 3 >"$T/big"
	$RAWHTTP "$PORT" --send 'GET /@9000*a HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' --timeout 3 >"$T/uri"
	$RAWHTTP "$PORT" --send 'GET / HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n' --timeout 3 >"$T/v2"
	$RAWHTTP "$PORT" --send 'POST /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' --timeout 3 >"$T/te"
	$RAWHTTP "$PORT" --send 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: y\r\n\r\n' --timeout 3 >"$T/hosts"
	$RAWHTTP "$PORT" --send 'POST /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999\r\n\r\n' --timeout 3 >"$T/body"
	for f in lf big uri v2 te hosts body; do
		echo "== $f"
		cat "$T/$f"
	done
	grep -q 'response 1 status 400' "$T/lf"
	grep -q 'body bare LF' "$T/lf"
	grep -q 'response 1 status 431' "$T/big"
	grep -q 'response 1 status 414' "$T/uri"
	grep -q 'response 1 status 505' "$T/v2"
	grep -q 'response 1 status 501' "$T/te"
	grep -q 'response 1 status 400' "$T/hosts"
	grep -q 'response 1 status 413' "$T/body"
	for f in lf big uri v2 te hosts body; do
		grep -q '^eof yes' "$T/$f" || fail "$f: connection not closed"
		grep -q '^header x-go-pprof: 1' "$T/$f" || fail "$f: no X-Go-Pprof"
	done
	# Each refusal is logged (at info, up to 10 a minute).
	grep -q 'request refused: 400 bare LF in the request head' "$HT/collector.log"
	grep -q 'request refused: 431 request head too large' "$HT/collector.log"
	# Others are served meanwhile.
	curl -s -m 2 "$BASE/debug/pprof/" | grep -q "data-pid=\"$APID\""
	wait "$cpid"
	cat "$T/curl.out"
	read -r code secs <"$T/curl.out"
	[[ $code == 200 ]] || fail "profile: HTTP $code"
	(($(echo "$secs < 3.5" | bc -l))) || fail "profile took ${secs}s"
	go tool pprof -symbolize=none -top "$T/p.pb.gz" | grep -q alpha_work
	wait "$spid"
	cat "$T/slow"
	grep -q 'response 1 status 408' "$T/slow"
	grep -q '^eof yes' "$T/slow"
	el=$(sed -n 's/^elapsed //p' "$T/slow")
	(($(echo "$el >= 9.5 && $el < 13" | bc -l))) || fail "408 after ${el}s"
}

@test "keep-alive and pipelined requests are answered in order on one connection" {
	local auth="Authorization: Bearer $TOKEN\r\n"
	$RAWHTTP "$PORT" --send "GET /debug/pprof/cmdline?pid=$APID HTTP/1.1\r\nHost: 127.0.0.1\r\n$auth\r\nGET /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\n$auth\r\n" \
		--pause 0.3 --send "HEAD /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Connection: close\r\n\r\n" \
		--timeout 5 >"$T/ka"
	cat -v "$T/ka"
	grep -q 'response 1 status 200' "$T/ka"
	grep -a -q "^body .*http_worker.py.*alpha" "$T/ka"
	grep -q 'response 2 status 200' "$T/ka"
	grep -q '^body num_symbols: 1' "$T/ka"
	grep -q 'response 3 status 200' "$T/ka"
	grep -q '^header content-type: text/html' "$T/ka"
	grep -q '^eof yes' "$T/ka"
	# HTTP/1.0: kept only when asked, and then said so.
	$RAWHTTP "$PORT" --send "GET /debug/pprof/symbol HTTP/1.0\r\n${auth}Connection: keep-alive\r\n\r\n" \
		--pause 0.3 --send "GET /debug/pprof/symbol HTTP/1.0\r\n$auth\r\n" --timeout 5 >"$T/ka10"
	cat "$T/ka10"
	[[ $(grep -c '^header connection: keep-alive' "$T/ka10") == 1 ]]
	grep -q 'response 2 status 200' "$T/ka10"
	[[ $(grep -c '^header connection: close' "$T/ka10") == 1 ]]
	grep -q '^eof yes' "$T/ka10"
	# cmdline: the process's arguments joined by NUL, as Go's.
	curl -s "$BASE/debug/pprof/cmdline?pid=$APID" | tr '\0' '|' >"$T/cmd"
	[[ $(cat "$T/cmd") == "$PYA|$WORKER|alpha|120|$HT/alpha.cpu" ]] || fail "cmdline: $(cat "$T/cmd")"
}

@test "Chromium opens the index, sees both processes and clicks into one's flame graph" {
	shots=$PP_BUILD/test-artifacts/http
	timeout 120 "$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/http_cdp.py" \
		"http://127.0.0.1:$PORT/debug/pprof/?seconds=2&token=$TOKEN" --pid "$APID" --zoom alpha_work \
		--shots "$shots" >"$T/cdp" 2>"$T/cdp.err" || {
		cat "$T/cdp" "$T/cdp.err"
		fail "http_cdp.py failed"
	}
	cat "$T/cdp"
	"$PP_HOST_PYTHON" - "$T/cdp" "$APID" "$BPID" <<'EOF'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1])]
a, b = int(sys.argv[2]), int(sys.argv[3])
idx, flame, zoom = steps
rows = {r["pid"]: r for r in idx["rows"]}
assert a in rows and b in rows, rows
assert "http_worker.py alpha" in rows[a]["command"], rows[a]
assert "http_worker.py beta" in rows[b]["command"], rows[b]
assert rows[a]["mode"] == "cpu" and rows[a]["rate"] == "100 Hz", rows[a]
assert rows[a]["samples"] > 0, rows[a]
assert "seconds=2" in flame["url"] and "pid=%d" % a in flame["url"], flame
assert "alpha_work" in flame["names"], flame["names"]
assert "beta_work" not in flame["names"], flame["names"]
assert zoom["width"] > zoom["width_before"] or zoom["width"] >= 1100, zoom
assert zoom["unzoom_visible"], zoom
EOF
	for f in index flamegraph zoomed; do
		[[ -s $shots/$f.png ]] || fail "no screenshot $f.png"
	done
}

@test "POST /debug/pprof/symbol takes a body read over several reads, with Expect: 100-continue" {
	head -c 60000 /dev/zero | tr '\0' 'a' >"$T/body"
	curl -s -i -X POST -H 'Expect: 100-continue' --data-binary @"$T/body" \
		"$BASE/debug/pprof/symbol" | tr -d '\r' >"$T/r"
	cat "$T/r"
	grep -q '^HTTP/1.1 100 Continue' "$T/r"
	grep -q '^HTTP/1.1 200' "$T/r"
	grep -q '^num_symbols: 1' "$T/r"
}

@test "a client that goes away while it waits cancels its window" {
	curl -s -m 1 "$BASE/debug/pprof/profile?seconds=20" >/dev/null || true
	for ((i = 0; i < 40; i++)); do
		curl -s "$BASE/debug/pprof/" >"$T/i"
		grep -q ' 0 profiles being taken' "$T/i" && break
		sleep 0.05
	done
	grep -q ' 0 profiles being taken' "$T/i" || fail "$(grep count "$T/i")"
	grep -q 'client went away before its answer' "$HT/collector.log"
}

@test "mode=wall profiles the processes sampling wall time, mode=cpu the others" {
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK PYPROF_MODE=wall "$PYB" "$WORKER" delta 30 \
		>"$T/delta.out" 3>&- &
	dpid=$!
	for ((i = 0; i < 100; i++)); do
		curl -s "$BASE/debug/pprof/" | grep -q "data-pid=\"$dpid\"" && break
		sleep 0.05
	done
	curl -s -o "$T/w.pb.gz" "$BASE/debug/pprof/profile?seconds=1&mode=wall" &
	c1=$!
	curl -s -o "$T/c.pb.gz" "$BASE/debug/pprof/profile?seconds=1" &
	c2=$!
	curl -s -i "$BASE/debug/pprof/profile?seconds=1&pid=$dpid&mode=cpu" | tr -d '\r' >"$T/bad"
	wait "$c1" "$c2"
	kill "$dpid"
	wait "$dpid" || true
	$RAWPROF summary "$T/w.pb.gz" >"$T/ws"
	$RAWPROF summary "$T/c.pb.gz" >"$T/cs"
	grep -q '^type samples/count wall/nanoseconds' "$T/ws"
	grep -q '^stack .*delta_work' "$T/ws"
	((  $(sum_label "$T/ws" "pid=$APID") == 0 )) || fail "alpha in the wall profile"
	grep -q '^type samples/count cpu/nanoseconds' "$T/cs"
	! grep -q 'delta_work' "$T/cs" || fail "the wall process in the CPU profile"
	grep -q '^HTTP/1.1 400' "$T/bad"
	grep -q "pid $dpid samples in wall mode, not cpu" "$T/bad"
}

# (Idle connections without the token make room for newcomers: see "300
# idle connections" below. 503 is for when all 256 carried the token.)
@test "past 256 connections that carried the token the next client gets 503; the others are still served" {
	"$PP_HOST_PYTHON" - "$PORT" "$TOKEN" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
token = sys.argv[2]
req = ("GET /debug/pprof/symbol HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       "Authorization: Bearer %s\r\n\r\n" % token).encode()
held = [socket.create_connection(("127.0.0.1", port), 5) for _ in range(256)]
for s in held:
    s.sendall(req)
for s in held:
    s.settimeout(5)
    ans = s.recv(4096).decode()
    assert ans.startswith("HTTP/1.1 200 "), ans
extra = socket.create_connection(("127.0.0.1", port), 5)
extra.settimeout(5)
got = extra.recv(4096).decode()
print(got)
assert got.startswith("HTTP/1.1 503 "), got
assert "too many HTTP clients" in got, got
held[100].sendall(req)
ans = held[100].recv(4096).decode()
assert ans.startswith("HTTP/1.1 200 ") and "num_symbols: 1" in ans, ans
for s in held:
    s.close()
EOF
	curl -s -m 2 "$BASE/debug/pprof/" | grep -q "data-pid=\"$APID\""
}

# waits_locks.py (two holders, two waiters on one lock) started without
# waits: dormant on 3.11, sampling CPU by itself on 3.14. A CPU profile
# window for its pid opens first (on 3.11 it starts a session without
# waits), then block and mutex windows of 2 s at once, which switch waits
# on (joining that session); the profiles are compared with the program's
# own log over the same span (tests/lib/waits_check.py locks-window).
@test "block and mutex windows switch waits on in a process started without them: shares as the program measured them; 401 without the token, 400 on a bad rate (3.11, 3.14)" {
	curl -s -i "http://127.0.0.1:$PORT/debug/pprof/block?seconds=1" | tr -d '\r' | grep -q '^HTTP/1.1 401'
	curl -s -i "http://127.0.0.1:$PORT/debug/pprof/mutex?seconds=1" | tr -d '\r' | grep -q '^HTTP/1.1 401'
	curl -s -i "$BASE/debug/pprof/block?seconds=1&rate=0" | tr -d '\r' >"$T/r0"
	grep -q '^HTTP/1.1 400' "$T/r0"
	grep -q "rate must be a duration from 1ns to 1s with its unit (ns, us, ms), such as 100us, not '0'" "$T/r0"
	check() {
		local name=$1 exe=$2 pid start=on i bc mc
		[[ $name == 3.11* ]] && start=off
		LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$HSOCK PYPROF_START=$start "$exe" \
			"$PP_TARGETS/waits_locks.py" 3.5 "$T/log.json" >"$T/truth.out" 2>"$T/w.err" 3>&- &
		pid=$!
		for ((i = 0; i < 100; i++)); do
			[[ -n $(idx_field "$pid" sampling) ]] && break
			sleep 0.05
		done
		curl -s -o "$T/cpu.pb.gz" -w '%{http_code}' "$BASE/debug/pprof/profile?seconds=2&pid=$pid" >"$T/cc" &
		cc=$!
		sleep 0.1
		curl -s -o "$T/block.pb.gz" -w '%{http_code}' "$BASE/debug/pprof/block?seconds=2&pid=$pid" >"$T/bc" &
		bc=$!
		curl -s -o "$T/mutex.pb.gz" -w '%{http_code}' "$BASE/debug/pprof/mutex?seconds=2&pid=$pid" >"$T/mc"
		wait "$bc" "$cc"
		wait "$pid"
		[[ $(cat "$T/bc") == 200 && $(cat "$T/mc") == 200 && $(cat "$T/cc") == 200 ]] ||
			fail "status $(cat "$T/bc"), $(cat "$T/mc") and $(cat "$T/cc")"
		go tool pprof -raw "$T/cpu.pb.gz" 2>/dev/null | grep -q '^PeriodType: cpu nanoseconds' ||
			fail "the CPU window's profile"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/waits_check.py" locks-window \
			"$T/block.pb.gz" "$T/mutex.pb.gz" "$T/log.json"
		go tool pprof -top -sample_index=delay "$T/block.pb.gz" 2>/dev/null >"$T/top"
		grep -q ' wait_a$' "$T/top" && grep -q ' wait_b$' "$T/top" || fail "$(cat "$T/top")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.14) for_each_python check
}

@test "heap and allocs answer that no process samples its heap; unknown paths, methods and foreign Host names are refused" {
	curl -s -i "$BASE/debug/pprof/heap" | tr -d '\r' >"$T/h"
	grep -q '^HTTP/1.1 404' "$T/h"
	grep -q 'no process with heap sampling on' "$T/h"
	curl -s -i "$BASE/debug/pprof/allocs?pid=$APID" | tr -d '\r' >"$T/a"
	grep -q "pid $APID does not sample its heap" "$T/a"
	curl -s -i "$BASE/debug/pprof/goroutine" | tr -d '\r' >"$T/g"
	grep -q '^HTTP/1.1 404' "$T/g"
	grep -q 'Unknown profile' "$T/g"
	curl -s -i -X DELETE "$BASE/debug/pprof/" | tr -d '\r' >"$T/m"
	grep -q '^HTTP/1.1 405' "$T/m"
	grep -q '^Allow: GET, HEAD' "$T/m"
	curl -s -i "$BASE/" | tr -d '\r' >"$T/r"
	grep -q '^HTTP/1.1 301' "$T/r"
	grep -q '^Location: /debug/pprof/' "$T/r"
	# On loopback, only loopback names (a web page's own name rebound
	# to 127.0.0.1 must not read the pages).
	curl -s -i -H 'Host: evil.example:6060' "$BASE/debug/pprof/" | tr -d '\r' >"$T/host"
	grep -q '^HTTP/1.1 403' "$T/host"
	grep -q "Host 'evil.example:6060' is not a loopback name" "$T/host"
	curl -s -i -H "Host: localhost:$PORT" "$BASE/debug/pprof/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
}

@test "with --http-token: 401 without the token; Bearer and ?token= work, go tool pprof included" {
	collector_start --http 0 --http-token s3cret
	port=$(http_port "$T/collector.log")
	grep -q 'on http://127.0.0.1:' "$T/collector.log" # loopback by default
	curl -s -i "http://127.0.0.1:$port/debug/pprof/" | tr -d '\r' >"$T/no"
	grep -q '^HTTP/1.1 401' "$T/no"
	grep -q '^WWW-Authenticate: Bearer' "$T/no"
	curl -s -i "http://127.0.0.1:$port/debug/pprof/?token=wrong" | tr -d '\r' | grep -q '^HTTP/1.1 401'
	curl -s -i -H 'Authorization: Bearer s3cret' "http://127.0.0.1:$port/debug/pprof/" |
		tr -d '\r' | grep -q '^HTTP/1.1 200'
	go tool pprof -raw "http://127.0.0.1:$port/debug/pprof/profile?seconds=1&token=s3cret" >"$T/raw"
	grep -q '^PeriodType: cpu nanoseconds' "$T/raw"
	! grep -q s3cret "$T/collector.log" || fail "the token is in the log"
	collector_stop
}

@test "without --http-token a token is made: in SOCKET.http-token (0600, gone at exit), logged once in the URL; 401 without it; every way of sending it works" {
	umask 000
	collector_start --http 0 --log-level debug
	port=$(http_port "$T/collector.log")
	[[ -f $SOCK.http-token ]] || fail "no token file beside $SOCK: $(ls -la "$(dirname "$SOCK")")"
	[[ $(stat -c %a "$SOCK.http-token") == 600 ]] || fail "$(stat -c '%a %n' "$SOCK.http-token")"
	tok=$(cat "$SOCK.http-token")
	[[ $tok =~ ^[0-9a-f]{32}$ ]] || fail "token: '$tok'"
	[[ $(grep -c "$tok" "$T/collector.log") == 1 ]] || fail "token not logged once"
	grep -qF "open http://127.0.0.1:$port/debug/pprof/?token=$tok" "$T/collector.log"
	grep -qF "access token in $SOCK.http-token" "$T/collector.log"
	u=http://127.0.0.1:$port/debug/pprof
	# Without it, or wrong: nothing, not even a command line.
	for bad in "$u/" "$u/cmdline?pid=$$" "$u/?token=x$tok" "http://pyprof:x$tok@127.0.0.1:$port/debug/pprof/"; do
		curl -s -i "$bad" | tr -d '\r' >"$T/no"
		grep -q '^HTTP/1.1 401' "$T/no" || fail "$bad: $(head -1 "$T/no")"
	done
	grep -q '^WWW-Authenticate: Basic realm="pyprof"' "$T/no"
	# With it: ?token= (which sets the cookie a browser sends back), the
	# URL's user info, Bearer, the cookie.
	curl -s -i "$u/?token=$tok" | tr -d '\r' >"$T/q"
	grep -q '^HTTP/1.1 200' "$T/q"
	grep -q "^Set-Cookie: pyprof_token_$port=$tok; Path=/debug/pprof; HttpOnly; SameSite=Strict" "$T/q"
	grep -q "^Set-Cookie: pyprof_token_$port=$tok; Path=/flamegraph; HttpOnly; SameSite=Strict" "$T/q"
	# a cookie jar (as a browser's) sends it back to these pages only:
	# cookies ignore ports, and a Path=/ cookie went to every page of
	# every server on this host
	curl -s -o /dev/null -c "$T/jar" "$u/?token=$tok"
	curl -s -i -b "$T/jar" "$u/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	curl -s -i -b "$T/jar" "http://127.0.0.1:$port/flamegraph?seconds=x" | tr -d '\r' | grep -q '^HTTP/1.1 400'
	[[ $(awk -v t="$tok" '$7 == t {print $3}' "$T/jar" | sort | tr '\n' ' ') == "/debug/pprof /flamegraph " ]] ||
		{ cat "$T/jar"; fail "the cookie's paths"; }
	# the key percent-encoded is the same key to the server: never logged
	curl -s -i "$u/?%74oken=$tok" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	curl -s -i "http://anyone:$tok@127.0.0.1:$port/debug/pprof/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	curl -s -i -H "Authorization: Bearer $tok" "$u/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	curl -s -i -H "Cookie: x=1; pyprof_token_$port=$tok" "$u/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	curl -s -i -H "Cookie: pyprof_token_1=$tok" "$u/" | tr -d '\r' | grep -q '^HTTP/1.1 401'
	go tool pprof -raw "$u/profile?seconds=1&token=$tok" >"$T/raw1"
	grep -q '^PeriodType: cpu nanoseconds' "$T/raw1"
	go tool pprof -raw "http://pyprof:$tok@127.0.0.1:$port/debug/pprof/profile?seconds=1" >"$T/raw2"
	grep -q '^PeriodType: cpu nanoseconds' "$T/raw2"
	collector_stop
	[[ ! -e $SOCK.http-token ]] || fail "token file left at exit"
	[[ $(grep -c "$tok" "$T/collector.log") == 1 ]] || fail "token logged again (access log?)"
}

@test "--http-no-auth serves without a token and says so; it excludes --http-token and needs --http" {
	collector_start --http 0 --http-no-auth
	port=$(http_port "$T/collector.log")
	grep -q "http: --http-no-auth: anyone who can reach 127.0.0.1:$port can read every process's command line" "$T/collector.log"
	[[ ! -e $SOCK.http-token ]] || fail "a token file with --http-no-auth"
	curl -s -i "http://127.0.0.1:$port/debug/pprof/" | tr -d '\r' | grep -q '^HTTP/1.1 200'
	collector_stop
	run "$PP_COLLECTOR" --socket "$SOCK" --http 0 --http-no-auth --http-token x
	((status == 2)) && [[ $output == *"--http-no-auth and --http-token exclude each other"* ]] || fail "$status $output"
	run "$PP_COLLECTOR" --socket "$SOCK" --http-no-auth
	((status == 2)) && [[ $output == *"--http-no-auth goes with --http"* ]] || fail "$status $output"
}

@test "SIGTERM answers a waiting profile request 503 and the collector exits 0" {
	collector_start --http 127.0.0.1:0
	port=$(http_port "$T/collector.log")
	curl -s -i -u ":$(cat "$SOCK.http-token")" \
		"http://127.0.0.1:$port/debug/pprof/profile?seconds=30" >"$T/r" 3>&- &
	cpid=$!
	sleep 0.5
	t0=$(date +%s.%N)
	collector_stop
	wait "$cpid"
	t1=$(date +%s.%N)
	tr -d '\r' <"$T/r" >"$T/r2"
	cat "$T/r2"
	grep -q '^HTTP/1.1 503' "$T/r2"
	grep -q 'shutting down' "$T/r2"
	(($(echo "$t1 - $t0 < 2" | bc -l)))
}

@test "--http with a bad address is refused with exit status 1" {
	run "$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" --http 127.0.0.1:99999
	((status == 1))
	[[ $output == *"--http wants [ADDR:]PORT"* ]]
	run "$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" --http-token x
	((status == 2))
	[[ $output == *"--http-token goes with --http"* ]]
}

# Before, 256 connections that sent nothing held every slot for 60 s and
# every token holder got 503. Now a newcomer takes the place of the oldest
# connection that never carried the token and is between requests, and a
# new connection has 5 s to send its first byte. A token holder's
# keep-alive connection is never the one closed.
@test "300 idle connections do not lock out token holders: new requests get 200 at once, a keep-alive one keeps its connection" {
	ulimit -n 4096
	collector_start --http 0
	port=$(http_port "$T/collector.log")
	tok=$(cat "$SOCK.http-token")
	"$PP_HOST_PYTHON" - "$port" "$tok" <<'PY'
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
def get(s, path):
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return "closed"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(65536)
    return head.split(b" ")[1].decode()
keep = socket.create_connection(("127.0.0.1", port))
assert get(keep, "/debug/pprof/?token=" + tok) == "200"
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
time.sleep(0.2)
t0 = time.time()
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(5)
st = get(s, "/debug/pprof/?token=" + tok)
ms = (time.time() - t0) * 1000
print("   a new token holder: %s in %.0f ms" % (st, ms))
assert st == "200", st
keep.settimeout(5)
st = get(keep, "/debug/pprof/cmdline?token=" + tok)
print("   the keep-alive token holder: %s" % st)
assert st == "200", st
closed = 0
for c in idle[:60]:
    c.setblocking(False)
    try:
        closed += c.recv(1) == b""
    except BlockingIOError:
        pass
print("   of the 60 oldest idle connections, %d were closed" % closed)
assert closed >= 40, closed
PY
	collector_stop
}

@test "the index page's hint shows where the token goes without printing it" {
	curl -s "$BASE/debug/pprof/" >"$T/i.html"
	grep -q 'id="hint".*http://pyprof:TOKEN@HOST:PORT/debug/pprof/profile' "$T/i.html" ||
		fail "hint: $(grep -o '<p id="hint">.*' "$T/i.html")"
	grep -q 'http-token' "$T/i.html" || fail "the hint does not name the token's file"
	! grep -q "$TOKEN" "$T/i.html" || fail "the page prints the token"
}
