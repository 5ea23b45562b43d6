#!/bin/bash
# tests/bench/http.sh - pyprof-collector --http under load.
#
# N_PROCS (default 8) busy Python processes (tests/targets/http_worker.py,
# 100 Hz each) stream into a collector serving --http. Then:
#  1. latency after the window: HTTP_ROUNDS (default 3) requests, one
#     after the other, for a 10-second profile of all of them. Per request:
#     the time from the window's end to the last byte received (curl's
#     time_total minus the 10 s), and the collector's own figure (its
#     debug log line "... N ms after its end": the profile built and
#     handed to the socket); median and worst. Goal: under 100 ms.
#  2. collector CPU: LOAD_SECONDS (default 10) with no HTTP client, then
#     as long with 4 clients each fetching /debug/pprof/profile?seconds=1
#     in a loop; the collector's CPU time (utime + stime of
#     /proc/PID/stat) in each, as a share of one core, side by side, and
#     how many profiles were served.
#  3. ingest with windows open: build/bench/ingest (8 clients,
#     INGEST_SAMPLES samples, default 4M, stamped now: --now) into the
#     same collector with no window open and with 4 open windows covering
#     every process, alternating, 3 rounds each; samples per collector
#     CPU second (medians) and their ratio.
#
#   tests/bench/http.sh              (from make bench, section 8)
#   N_PROCS=4 HTTP_ROUNDS=1 tests/bench/http.sh
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PYPROF_BUILD:-$top/build}
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
PY=${BENCH_PYTHON:-$(command -v python3)}
N_PROCS=${N_PROCS:-8}
HTTP_ROUNDS=${HTTP_ROUNDS:-3}
LOAD_SECONDS=${LOAD_SECONDS:-10}
T=$(mktemp -d /tmp/pyprof-bench-http.XXXXXX)
pids=()
cpid=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

"$BUILD/pyprof-collector" --socket "$T/c.sock" --output-dir "$T/out" \
	--http 0 -v >"$T/log" 2>&1 &
cpid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's|.*http: serving /debug/pprof/ on http://[^ ]*:\([0-9]*\)/.*|\1|p' "$T/log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat "$T/log"; echo "http.sh: collector did not start"; exit 1; }
base=http://pyprof:$(cat "$T/c.sock.http-token")@127.0.0.1:$port
secs=$((HTTP_ROUNDS * 12 + 2 * LOAD_SECONDS + 30))
for i in $(seq "$N_PROCS"); do
	LD_PRELOAD=$BUILD/libpyprof.so PYPROF_SOCKET=$T/c.sock \
		"$PY" "$top/tests/targets/http_worker.py" alpha "$secs" >/dev/null &
	pids+=($!)
done
for _ in $(seq 200); do
	n=$(curl -s "$base/debug/pprof/" | grep -c 'class="proc"' || true)
	[ "$n" -ge "$N_PROCS" ] && break
	sleep 0.05
done
echo "  $N_PROCS processes ($PY, 100 Hz) streaming; collector on $base"

# 1. latency
: >"$T/lat.client"
for r in $(seq "$HTTP_ROUNDS"); do
	t=$(curl -s -o "$T/p.pb.gz" -w '%{time_total}' "$base/debug/pprof/profile?seconds=10")
	echo "$t - 10" | bc -l | awk '{printf "%.1f\n", $1 * 1000}' >>"$T/lat.client"
	go tool pprof -raw "$T/p.pb.gz" >/dev/null 2>&1 ||
		{ echo "http.sh: round $r: not a profile"; exit 1; }
done
sed -n 's/.*window of 10 s .* \([0-9.]*\) ms after its end/\1/p' "$T/log" >"$T/lat.server"
samples=$(sed -n 's/.*window of 10 s .*: \([0-9]*\) processes, \([0-9]*\) samples.*/\1 processes, \2 samples/p' "$T/log" | tail -1)
printf '  10 s profile of %s: after the window ends, client got it in median %s ms (worst %s), collector built and sent it in median %s ms (worst %s); %d rounds\n' \
	"$samples" "$(median <"$T/lat.client")" "$(sort -g "$T/lat.client" | tail -1)" \
	"$(median <"$T/lat.server")" "$(sort -g "$T/lat.server" | tail -1)" "$HTTP_ROUNDS"

# 2. collector CPU, quiet then polled
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks "$cpid")
sleep "$LOAD_SECONDS"
c1=$(cpu_ticks "$cpid")
served0=$(grep -c 'window of 1 s' "$T/log" || true)
end=$(($(date +%s) + LOAD_SECONDS))
for k in 1 2 3 4; do
	(while [ "$(date +%s)" -lt "$end" ]; do
		curl -s -o /dev/null "$base/debug/pprof/profile?seconds=1"
	done) &
done
wait_clients() { for j in $(jobs -p); do case " ${pids[*]} $cpid " in *" $j "*) ;; *) wait "$j" ;; esac; done; }
c2=$(cpu_ticks "$cpid")
wait_clients
c3=$(cpu_ticks "$cpid")
el=$((LOAD_SECONDS + 1))
served=$(($(grep -c 'window of 1 s' "$T/log" || true) - served0))
printf '  collector CPU: %.2f%% of a core with no HTTP client, %.2f%% with 4 clients polling profile?seconds=1 (%d profiles served in ~%d s)\n' \
	"$(echo "($c1 - $c0) * 100 / $hz / $LOAD_SECONDS" | bc -l)" \
	"$(echo "($c3 - $c2) * 100 / $hz / $el" | bc -l)" "$served" "$el"

# 3. ingest with 4 windows open, side by side with none
INGEST_SAMPLES=${INGEST_SAMPLES:-4000000}
make -C "$top" --no-print-directory -s "$BUILD/bench/ingest" BUILD="$BUILD" >&2
: >"$T/ing.0"
: >"$T/ing.4"
for r in 1 2 3; do
	for w in 0 4; do
		cl=()
		for k in $(seq "$w"); do
			curl -s -o /dev/null "$base/debug/pprof/profile?seconds=600" &
			cl+=($!)
		done
		[ "$w" -gt 0 ] && sleep 0.3
		"$BUILD/bench/ingest" --socket "$T/c.sock" --collector-pid "$cpid" \
			--clients 8 --samples "$INGEST_SAMPLES" --now |
			sed -n 's/.*per_core=\([0-9.]*\) M.*/\1/p' >>"$T/ing.$w"
		for k in "${cl[@]}"; do kill "$k" 2>/dev/null || true; wait "$k" 2>/dev/null || true; done
	done
done
i0=$(median <"$T/ing.0") i4=$(median <"$T/ing.4")
printf '  ingest (8 clients, samples inside the windows): %.2f M samples per collector CPU second with no window open, %.2f M with 4 open: ratio %.3f\n' \
	"$i0" "$i4" "$(echo "$i4 / $i0" | bc -l)"
