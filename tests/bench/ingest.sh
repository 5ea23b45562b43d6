#!/bin/bash
# tests/bench/ingest.sh - collector ingest rate on this machine.
#
# Starts build/pyprof-collector on a temporary socket, runs
# build/bench/ingest (tests/bench/ingest.c) with 1, 8 and 64 clients, and
# prints one line per run: samples per second end to end, and the
# collector's CPU seconds with samples per collector CPU second (the
# collector is single-threaded, so that is the one-core figure; goal over
# 1M). The collector writes each client's profile when it disconnects, so
# the time includes building and writing those profiles too. Then one
# client's heap-heavy stream (ingest --heap): heap records per second.
#
# Then memory for days: a fresh collector takes CHURN short-lived
# processes (default 10000; build/bench/ingest --churn, each with symbols
# of its own) beside one that stays connected, and its resident memory
# must come back to what it was after the first 500 (the run fails if
# not). Their profiles go to a tmpfs (/dev/shm) when there is one: the
# collector fsyncs every file, and a disk would measure the disk.
#
#   tests/bench/ingest.sh [SAMPLES]      (default 20000000 per run)
#   CLIENTS="1 8" CHURN=2000 tests/bench/ingest.sh
#
# Builds what it needs with make. Exits non-zero if a run failed.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PYPROF_BUILD:-$top/build}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
SAMPLES=${1:-20000000}
CLIENTS=${CLIENTS:-1 8 64}
CHURN=${CHURN:-10000}

make -C "$top" --no-print-directory -s "$BUILD/pyprof-collector" \
	"$BUILD/bench/ingest" BUILD="$BUILD" >&2

tmp=$(mktemp -d /tmp/ppbench.XXXXXX)
if [[ -d /dev/shm && -w /dev/shm ]]; then
	churn_out=$(mktemp -d /dev/shm/ppbench.XXXXXX)
else
	churn_out=$tmp/churn-out
fi
cpid=
cleanup() {
	[[ -n $cpid ]] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
	rm -rf "$tmp" "$churn_out"
}
trap cleanup EXIT

mkfifo "$tmp/ready"
"$BUILD/pyprof-collector" --socket "$tmp/s/c.sock" --output-dir "$tmp/out" \
	--summary "$tmp/summary" --log-level warn --ready-fd 3 \
	3>"$tmp/ready" 2>"$tmp/log" &
cpid=$!
read -r -t 10 -n 1 byte <"$tmp/ready" || { cat "$tmp/log" >&2; exit 1; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $(uname -r)"
rc=0
expect=0
for n in $CLIENTS; do
	"$BUILD/bench/ingest" --socket "$tmp/s/c.sock" --collector-pid "$cpid" \
		--clients "$n" --samples "$SAMPLES" || rc=1
	expect=$((expect + SAMPLES / n * n))
done
# A heap-heavy stream (HEAP records, no samples: the count above holds):
# a heap that halves and climbs past its last high every 200,000 records,
# so the in-use peak's copies are in it (docs/heap.md).
"$BUILD/bench/ingest" --socket "$tmp/s/c.sock" --collector-pid "$cpid" \
	--heap --samples "$SAMPLES" || rc=1
rss=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$cpid/status")
echo "collector peak RSS: $rss"
kill -TERM "$cpid"
wait "$cpid" || rc=1
cpid=
# The collector must have counted every sample sent.
got=$(sed -n 's/.*samples=\([0-9]*\).*/\1/p' "$tmp/summary")
if [[ $got == "$expect" ]]; then
	echo "collector counted $got samples: all of them"
else
	echo "collector counted $got samples, expected $expect" >&2
	rc=1
fi
if [[ -s $tmp/log ]]; then
	echo "collector warnings:" >&2
	cat "$tmp/log" >&2
fi

if ((CHURN > 0)); then
	"$BUILD/pyprof-collector" --socket "$tmp/s2/c.sock" \
		--output-dir "$churn_out" --log-level warn --ready-fd 3 \
		3>"$tmp/ready" 2>"$tmp/log2" &
	cpid=$!
	read -r -t 10 -n 1 byte <"$tmp/ready" || { cat "$tmp/log2" >&2; exit 1; }
	"$BUILD/bench/ingest" --socket "$tmp/s2/c.sock" --collector-pid "$cpid" \
		--churn "$CHURN" || rc=1
	kill -TERM "$cpid"
	wait "$cpid" || rc=1
	cpid=
	if [[ -s $tmp/log2 ]]; then
		echo "collector warnings:" >&2
		cat "$tmp/log2" >&2
	fi
fi
exit $rc
