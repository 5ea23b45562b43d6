#!/usr/bin/env bats
# limits.bats - what hostile or broken clients can cost pyprof-collector:
# descriptors and connections, end to end with a real collector under a
# low descriptor limit (ulimit -n), so that exhaustion takes tens of
# connections instead of tens of thousands.
#
# The clients are tests/lib/wire_client.py (an independent encoder
# of wire.h) and plain Python sockets that never say a word.
#
# Rerun one test:  bats -f 'silent' tests/e2e/limits.bats

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${PYPROF_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
COLLECTOR=$BUILD/pyprof-collector
WC="python3 $ROOT/tests/lib/wire_client.py"
RAW="python3 $ROOT/tests/lib/pprof_raw.py"

setup() {
	[[ -x $COLLECTOR ]] || fail "$COLLECTOR not built"
	T=$(mktemp -d /tmp/ppl.XXXXXX)
	SOCK=$T/run/c.sock
	OUT=$T/out
	CPID=
	HPID=
}

teardown() {
	[[ -z $HPID ]] || kill "$HPID" 2>/dev/null || true
	if [[ -n $CPID ]] && kill -0 "$CPID" 2>/dev/null; then
		kill -KILL "$CPID" 2>/dev/null || true
	fi
	if [[ -n ${BATS_TEST_COMPLETED:-} ]]; then
		rm -rf "$T"
	else
		echo "# collector log ($T/log):" >&3
		sed 's/^/#   /' "$T/log" >&3 2>/dev/null || true
	fi
}

fail() {
	echo "$*" >&2
	return 1
}

# Starts the collector with at most $1 descriptors (soft and hard: it
# cannot raise them) and the other options; waits until it listens.
collector_start_nofile() {
	local nofile=$1 byte=""
	shift
	mkfifo "$T/ready"
	(cd "$T" && ulimit -n "$nofile" && exec "$COLLECTOR" --socket "$SOCK" \
		"$@" --ready-fd 3 3>"$T/ready" 2>>"$T/log") &
	CPID=$!
	read -r -t 20 -n 1 byte <"$T/ready" || true
	rm -f "$T/ready"
	[[ $byte == 1 ]] || fail "collector not ready: $(cat "$T/log")"
}

collector_stop() {
	CRC=0
	kill -TERM "$CPID"
	wait "$CPID" || CRC=$?
	CPID=
}

# Opens $1 connections to the socket that never send anything, and holds
# them until killed; writes "held" to $T/held once all are connected.
hold_silent() {
	python3 - "$SOCK" "$1" "$T/held" <<'PY' &
import socket, sys, time
path, n, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)          # queued in the backlog if not accepted yet
    held.append(s)
open(flag, "w").write("held\n")
time.sleep(60)
PY
	HPID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		[[ -s $T/held ]] && return 0
		sleep 0.05
	done
	fail "the silent clients could not connect"
}

wait_file() {
	local i
	for ((i = 0; i < 100; i++)); do
		compgen -G "$1" >/dev/null && return 0
		sleep 0.05
	done
	fail "no file matches $1"
}

@test "silent clients holding every descriptor do not keep a real client out" {
	# 64 descriptors: 100 silent connections would take them all.
	collector_start_nofile 64 --output-dir "$OUT"
	hold_silent 100
	$WC good --socket "$SOCK" --pid 6001 --samples 500 --prefix real \
		--comm real
	# Served within 5 s, well before any time-out could free a slot.
	wait_file "$OUT/real.6001.*.pb.gz"
	$RAW summary "$OUT"/real.6001.*.pb.gz >"$T/sum"
	grep -qxF "total 500" "$T/sum" || fail "$(cat "$T/sum")"
	grep -qF "the most served at once" "$T/log" ||
		fail "the cap was not logged"
	kill "$HPID"
	HPID=
	collector_stop
	[[ $CRC == 0 ]]
}

@test "--max-clients caps connections and is checked" {
	run "$COLLECTOR" --max-clients 0
	[[ $status == 2 ]] || fail "status $status: $output"
	[[ $output == *"--max-clients wants a number from 1 to"* ]] || fail "$output"
	collector_start_nofile 1024 --output-dir "$OUT" --max-clients 5
	hold_silent 5
	$WC good --socket "$SOCK" --pid 6002 --samples 300 --prefix capped \
		--comm capped
	wait_file "$OUT/capped.6002.*.pb.gz"
	grep -qE "^.*5 clients connected, the most served at once: closing the one that waited longest without a HELLO" "$T/log" ||
		fail "no eviction logged"
	kill "$HPID"
	HPID=
	collector_stop
	[[ $CRC == 0 ]]
}
