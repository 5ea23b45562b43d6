#!/bin/bash
# tests/bench/push.sh - pyprof-collector --pyroscope: the collector's CPU
# per pushed window.
#
# PUSH_PROCS (default 64) synthetic processes (tests/lib/
# wire_client.py: 10 samples every 100 ms, about 100 Hz, for PUSH_SECONDS,
# default 21) stream into a collector cutting 10-second windows
# (--period 10), in two configurations run one after the other:
#   files  --output-dir on a tmpfs (each window written as a file)
#   push   --pyroscope to tests/lib/pyroscope_receiver.py on
#          127.0.0.1, no files (the windows only queued, sent by the push
#          thread, and spooled if need be)
# Per configuration: the windows (files written, requests accepted), the
# collector's CPU over the run (utime + stime of /proc/PID/stat, every
# thread included: the push thread and libcurl too), and CPU per window.
# The receiver's own CPU is not counted. The clients' pacing makes the run
# last PUSH_SECONDS whatever the machine; the figures are one run each.
#
#   tests/bench/push.sh                 (from make bench, section 13)
#   PUSH_PROCS=8 PUSH_SECONDS=11 tests/bench/push.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PYPROF_BUILD:-$top/build}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
N=${PUSH_PROCS:-64}
SECS=${PUSH_SECONDS:-21}
HOSTPY=/usr/bin/python3
[[ -x $HOSTPY ]] || HOSTPY=python3
WC=$top/tests/lib/wire_client.py
TCK=$(getconf CLK_TCK)

make -C "$top" --no-print-directory -s "$BUILD/pyprof-collector" BUILD="$BUILD" >&2
tmp=$(mktemp -d /tmp/ppbench-push.XXXXXX)
if [[ -d /dev/shm && -w /dev/shm ]]; then
	out=$(mktemp -d /dev/shm/ppbench-push.XXXXXX)
else
	out=$tmp/out
fi
rpid= cpid=
cleanup() {
	[[ -n $cpid ]] && kill -KILL "$cpid" 2>/dev/null
	[[ -n $rpid ]] && kill "$rpid" 2>/dev/null
	rm -rf "$tmp" "$out"
}
trap cleanup EXIT

mkdir -p "$tmp/rec"
"$HOSTPY" "$top/tests/lib/pyroscope_receiver.py" --dir "$tmp/rec" \
	--port-file "$tmp/port" &
rpid=$!
for _ in $(seq 100); do [[ -s $tmp/port ]] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$tmp/port")

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run NAME COLLECTOR-OPTIONS...: prints "NAME windows cpu_s cpu_ms_per_window"
run() {
	local name=$1 sock=$tmp/$1.sock i pids=() t0 t1 windows
	shift
	"$BUILD/pyprof-collector" --socket "$sock" --period 10 "$@" \
		2>"$tmp/$name.log" &
	cpid=$!
	for _ in $(seq 200); do [[ -S $sock ]] && break; sleep 0.05; done
	t0=$(cpu_ticks "$cpid")
	for ((i = 0; i < N; i++)); do
		"$HOSTPY" "$WC" good --socket "$sock" --pid $((200000 + i)) \
			--samples $((SECS * 100)) --batch 10 --pause-ms 100 \
			--comm "bench$i" --prefix bench >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
	sleep 1
	t1=$(cpu_ticks "$cpid")
	kill -TERM "$cpid"
	wait "$cpid" || true
	cpid=
	case $name in
	files) windows=$(find "$out" -name 'bench*.pb.gz' | wc -l) ;;
	push) windows=$(find "$tmp/rec" -name '*.pb.gz' | wc -l) ;;
	esac
	awk -v n="$name" -v w="$windows" -v t=$((t1 - t0)) -v hz="$TCK" 'BEGIN {
		printf "  %-6s %4d windows, collector CPU %.2f s, %.2f ms per window\n",
			n, w, t / hz, w ? 1000 * t / hz / w : 0 }'
}

echo "  $N processes at about 100 Hz for $SECS s, --period 10"
run files --output-dir "$out"
run push --pyroscope "$url" --spool-dir "$tmp/spool"
grep -h 'push: .* sent' "$tmp/push.log" | sed 's/^/  /'
