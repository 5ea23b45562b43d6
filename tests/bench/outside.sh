#!/usr/bin/env bash
# tests/bench/outside.sh - `make bench` section 18: what `pyprof record
# --pid` (reading the process from outside) costs the target and itself.
#
# For ROUNDS rounds, at 100 Hz and at 1 kHz: tests/bench/attach_rate.py
# (a CPU-bound loop measuring its own speed per 0.25 s slice) runs 12 s;
# at 3 s `pyprof record --pid --duration 5` reads it. Reported, as
# medians over the rounds: the target's speed per CPU second inside the
# window against outside it (slices 0.3 s clear of the edges; the
# reader takes no CPU of the target's, so this is what sharing caches
# and memory bandwidth costs it), its wall-clock speed likewise (on a
# machine with fewer free CPUs than threads the reader takes CPU time
# the target would have had), and the reader's own CPU (its one line's
# "pyprof used S s of CPU") as a share of one CPU over the window.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROUNDS=${ROUNDS:-3}
B=build
PYX=${BENCH_OUTSIDE_PYTHON:-$(command -v python3)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mono() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

for r in $(seq "$ROUNDS"); do
	for hz in 100 1000; do
		"$PYX" tests/bench/attach_rate.py 12 "$T/slices" >"$T/out" &
		pid=$!
		until grep -q ready "$T/out" 2>/dev/null; do sleep 0.05; done
		sleep 3
		m0=$(mono)
		$B/pyprof record --pid "$pid" --duration 5 --hz "$hz" \
			-o "$T/p.pb.gz" 2>"$T/rec" ||
			echo "  record --pid failed: $(tail -1 "$T/rec")"
		wait "$pid"
		sed -nE 's/.*pyprof used ([0-9.]+) s of CPU.*/\1/p' "$T/rec" |
			awk '{printf "%.4f\n", $1 / 5}' >>"$T/cpu.$hz"
		python3 - "$T/slices" "$m0" >>"$T/ratio.$hz" <<'PY'
import json, sys
slices = json.load(open(sys.argv[1]))
s = float(sys.argv[2]); e = s + 5
med = lambda v: sorted(v)[len(v) // 2]
a = [x for t, x in slices if s + 0.3 < t < e - 0.3]
b = [x for t, x in slices if not (s - 0.5 < t < e + 0.5)]
print("%.4f" % (med(a) / med(b)))
PY
	done
done
echo "  $PYX, $ROUNDS rounds, pyprof record --pid --duration 5 (cpu mode):"
for hz in 100 1000; do
	printf '    %4d Hz: the target'"'"'s speed per CPU second inside / outside %.4f; the reader %.2f%% of a CPU\n' \
		"$hz" "$(median <"$T/ratio.$hz")" \
		"$(echo "$(median <"$T/cpu.$hz") * 100" | bc -l)"
done

# Side by side with the same profile taken in-process: outside_shares.py
# (three functions, 5:3:2 of its CPU by construction) runs under `pyprof
# record --hz N` (the library in it) and is read from outside by `pyprof
# record --pid --hz N` over the same run. Reported, as medians over the
# rounds: each profile's largest error against the program's own shares
# (points), the largest difference between the two profiles (points), and
# the CPU each profiler took (the library's threads' in the target, from
# its profile's comments; the reader's, from its one line) per second of
# the run.
for r in $(seq "$ROUNDS"); do
	for hz in 100 1000; do
		rm -f "$T/go"
		$B/pyprof record --hz "$hz" -o "$T/in.pb.gz" -- "$PYX" \
			tests/targets/outside_shares.py 4 "$T/go" >"$T/sh.out" \
			2>"$T/sh.err" &
		rpid=$!
		until grep -q ready "$T/sh.out" 2>/dev/null; do sleep 0.05; done
		tpid=$(pgrep -n -P "$rpid" -f outside_shares.py)
		$B/pyprof record --pid "$tpid" --hz "$hz" -o "$T/out.pb.gz" \
			2>"$T/rec2" &
		opid=$!
		sleep 0.3
		m0=$(mono)
		touch "$T/go"
		wait "$rpid"
		wait "$opid"
		m1=$(mono)
		tail -1 "$T/sh.out" >"$T/truth.json"
		python3 - "$T/truth.json" "$T/in.pb.gz" "$T/out.pb.gz" \
			"$(sed -nE 's/.*pyprof used ([0-9.]+) s of CPU.*/\1/p' "$T/rec2")" \
			"$m0" "$m1" >>"$T/side.$hz" <<'PY'
import json, subprocess, sys
truth = json.load(open(sys.argv[1]))["shares"]
def shares(prof):
    out = subprocess.run(["python3", "tests/lib/pprof_shares.py", "funcs",
                          prof], capture_output=True, text=True).stdout
    v = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 4 and f[3] in truth:
            v[f[3]] = v.get(f[3], 0) + float(f[2])
    tot = sum(v.values()) or 1
    return {k: 100 * x / tot for k, x in v.items()}
a, b = shares(sys.argv[2]), shares(sys.argv[3])
err = lambda s: max(abs(s.get(k, 0) - 100 * truth[k]) for k in truth)
diff = max(abs(a.get(k, 0) - b.get(k, 0)) for k in truth)
secs = float(sys.argv[6]) - float(sys.argv[5])
reader = float(sys.argv[4] or 0) / secs
print("%.2f %.2f %.2f %.4f" % (err(a), err(b), diff, reader))
PY
	done
done
echo "  the same run profiled in-process (pyprof record) and from outside (record --pid), outside_shares.py 5:3:2:"
for hz in 100 1000; do
	col() { awk -v c="$1" '{print $c}' "$T/side.$hz" | median; }
	printf '    %4d Hz: largest error in-process %.2f points, outside %.2f; the two apart %.2f points; the reader %.2f%% of a CPU\n' \
		"$hz" "$(col 1)" "$(col 2)" "$(col 3)" "$(echo "$(col 4) * 100" | bc -l)"
done
