#!/usr/bin/env bash
# tests/bench/attach.sh - `make bench` section 14: what `pyprof attach`
# takes and what the target pays.
#
# For ROUNDS rounds: tests/bench/attach_rate.py runs 16 s on a 3.14+
# interpreter; at 3 s `pyprof attach --duration 4` (the first: the
# library injected), at 10 s again (the second: the library dormant in
# it, reused). Reported, as medians over the rounds:
#   - latency: from the command's start to sampling on in the target
#     (ctl start's since_mono_ns, the target's CLOCK_MONOTONIC), first
#     and second attach;
#   - the whole command's wall time minus the window (injection,
#     connection, stop, flush, writing the profile);
#   - the target's speed (loop iterations per second of its own CPU)
#     inside the window against outside it (slices 0.3 s clear of the
#     edges), a ratio: what sampling and the library cost it.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROUNDS=${ROUNDS:-3}
B=build
PYX=${BENCH_ATTACH_PYTHON:-$(bash tests/lib/pythons.sh 2>/dev/null |
	awk '$1 ~ /^3\.1[4-9]/ {print $2; exit}')}
if [[ -z $PYX ]]; then
	echo "  no Python 3.14+ found (BENCH_ATTACH_PYTHON): skipped"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mono() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }

for r in $(seq "$ROUNDS"); do
	"$PYX" tests/bench/attach_rate.py 16 "$T/slices.$r" >"$T/out" &
	pid=$!
	until grep -q ready "$T/out" 2>/dev/null; do sleep 0.05; done
	for n in 1 2; do
		sleep $((n == 1 ? 3 : 2))
		m0=$(mono)
		w0=$(date +%s.%N)
		$B/pyprof attach "$pid" --duration 4 -v -o "$T/p.pb.gz" \
			2>"$T/att.$r.$n" || echo "  attach failed: $(tail -1 "$T/att.$r.$n")"
		w1=$(date +%s.%N)
		s=$(sed -nE 's/.*ctl start: 0 .*since_mono_ns=([0-9]+).*/\1/p' "$T/att.$r.$n")
		e=$(sed -nE 's/.*ctl stop: 0 .*since_mono_ns=([0-9]+).*/\1/p' "$T/att.$r.$n")
		echo "$s $m0" | awk '{printf "%.4f\n", $1 / 1e9 - $2}' >>"$T/lat.$n"
		echo "$w0 $w1" | awk '{printf "%.4f\n", $2 - $1 - 4}' >>"$T/over.$n"
		echo "$s $e" >>"$T/win.$r"
	done
	wait "$pid"
	python3 - "$T/slices.$r" "$T/win.$r" >>"$T/ratio" <<'PY'
import json, sys
slices = json.load(open(sys.argv[1]))
wins = [tuple(int(x) / 1e9 for x in l.split()) for l in open(sys.argv[2])]
def inside(t):
    return any(s + 0.3 < t < e - 0.3 for s, e in wins)
def near(t):
    return any(s - 0.5 < t < e + 0.5 for s, e in wins)
med = lambda v: sorted(v)[len(v) // 2]
a = [x for t, x in slices if inside(t)]
b = [x for t, x in slices if not near(t)]
print("%.4f" % (med(a) / med(b)))
PY
done
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo "  $PYX, $ROUNDS rounds, pyprof attach --duration 4 (100 Hz, CPU timers):"
printf '    sampling on, from the command start: first attach %.3f s, second %.3f s\n' \
	"$(median <"$T/lat.1")" "$(median <"$T/lat.2")"
printf '    the command beyond its 4 s window: first %.3f s, second %.3f s\n' \
	"$(median <"$T/over.1")" "$(median <"$T/over.2")"
printf '    the target'"'"'s speed per CPU second inside the windows / outside: %.4f\n' \
	"$(median <"$T/ratio")"
