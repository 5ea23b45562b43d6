#!/usr/bin/env bats
# heap.bats - heap profiles (PYPROF_HEAP_RATE, pyprof record --heap).
#
# Profiles are read by the real `go tool pprof -raw` and checked by
# tests/lib/heap_check.py (see its header for each check):
#   1.x known amounts from known functions (tests/targets/heap_known.py) on
#       every interpreter: a 100 MiB bytearray allocated at its line and
#       freed, a million small objects kept (in use as the program measures
#       them with sys.getsizeof; tracemalloc agrees, checked on one
#       interpreter), 200,000 dropped (allocated, not
#       in use), and on Debian's python3 a 200 MiB numpy array, all within
#       10%; the program's output and status unchanged; no allocation
#       charged to a thread without Python (pyprof's own); the CPU profile
#       beside it has the program's functions. 2.7 has no allocator API:
#       only what malloc sees is checked there (docs/heap.md).
#   2.x a leak growing every 0.1 s (tests/targets/heap_leak.py) tops the
#       in-use profile at exit, and grows between two snapshots
#       (PYPROF_HEAP_SNAPSHOT_SECONDS), as pyprof diff and go tool pprof
#       -diff_base show; every interpreter, all at once (they sleep).
#   3.x everything recorded (rate 1), the collector's per-process files,
#       bad values, and the views on heap profiles.
#   4.x the heap at its peak (tests/targets/heap_peak.py: 150 and 50 MiB
#       held at once, dropped, then 100 MiB kept): peak_space per function
#       within 12% of the program's count at rate 64 KiB, the later
#       function absent from the peak and in use at the end, `pyprof
#       record`'s last line the peak and its time against the program's
#       clock (heap_check.py peak), go tool pprof -sample_index=peak_space;
#       3.8, 3.11, 3.14, 3.15 and Debian's python3. Windows: a collector's
#       --period windows each have their own peak. (3.9: two processes,
#       each with its own peak; record names the higher.)
# Sampling at 32 KiB keeps the sampling error of the small objects' 55 to
# 65 MB near 2% (about 1,900 samples), so 10% is four standard errors.

load ../lib/common

setup() {
	common_setup
	CHECK="$PP_HOST_PYTHON $PP_ROOT/tests/lib/heap_check.py"
	KNOWN=$PP_TARGETS/heap_known.py
	PEAK=$PP_TARGETS/heap_peak.py
	LEAK=$PP_TARGETS/heap_leak.py
}

teardown() {
	common_teardown
}

@test "1.1 known amounts from known functions within 10%, output unchanged, nothing of pyprof's counted, CPU profile beside (every interpreter)" {
	check() {
		local name=$1 exe=$2 extra=() truth=()
		if [[ $name == system ]]; then
			"$exe" -c 'import numpy' ||
				fail "Debian's python3-numpy is missing (make test-deps)"
			extra=(--numpy)
			# tracemalloc's second opinion (slow: on one interpreter)
			run_capture tm "$exe" "$KNOWN" --truth
			tail -1 "$T/tm.out" >"$T/truth.json"
			truth=(--truth "$T/truth.json")
		fi
		[[ $(python_major_minor "$exe") == 2.7 ]] && truth=(--python2)
		run_capture plain "$exe" "$KNOWN" "${extra[@]}"
		assert_eq 0 "$RC" "exit status without pyprof"
		run_capture rec "$PP_PYPROF" record --heap --heap-rate 32768 \
			-o "$T/k.pb.gz" -- "$exe" "$KNOWN" "${extra[@]}"
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status under pyprof record --heap"
		assert_same_file "$T/plain.out" "$T/rec.out" "the program's output"
		[[ -s $T/k.heap.pb.gz ]] || fail "no heap profile beside $T/k.pb.gz"
		$CHECK known "$T/k.heap.pb.gz" "$T/rec.out" "${truth[@]}" \
			--rate 32768 --big-line "$(marker_line "$KNOWN" big)"
		# heap and CPU together: the CPU profile is the usual one
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/pprof_raw.py" \
			summary "$T/k.pb.gz" >"$T/cpu.sum"
		grep -q '^type samples/count cpu/nanoseconds' "$T/cpu.sum" ||
			fail "the CPU profile is not a CPU profile"
		grep -qE '^line small_objects ' "$T/cpu.sum" ||
			fail "the CPU profile lacks small_objects"
	}
	for_each_python check
}

@test "2.1 a leak tops the in-use profile and grows between two snapshots (every interpreter, at once)" {
	local name exe kind pids=() names=() i
	while read -r name exe kind; do
		[[ $kind == missing ]] && fail "interpreter $name not found"
		PYPROF_HEAP_SNAPSHOT_SECONDS=1 "$PP_PYPROF" record --heap \
			-o "$T/leak-$name.pb.gz" -- "$exe" "$LEAK" 2.4 \
			>"$T/leak-$name.out" 2>"$T/leak-$name.err" </dev/null 3>&- &
		pids+=($!)
		names+=("$name")
	done < <(pyprof_pythons)
	((${#pids[@]})) || fail "no interpreter selected"
	local rcs=()
	for i in "${!pids[@]}"; do
		rcs[i]=0
		wait "${pids[$i]}" || rcs[i]=$?
	done
	check() {
		local name=$1 f1 f2
		cat "$T/leak-$name.err"
		assert_eq 0 "${rcs[$2]}" "$name: pyprof record's exit status"
		f1=$(echo "$T"/leak-"$name".*.heap.0001.pb.gz)
		f2=$(echo "$T"/leak-"$name".*.heap.0002.pb.gz)
		[[ -f $f1 && -f $f2 ]] || fail "$name: no snapshots 1 and 2: $(ls "$T")"
		$CHECK top "$T/leak-$name.heap.pb.gz" leak
		# 1 MiB every 0.1 s: about 10 MiB in the second between them
		$CHECK grows "$f1" "$f2" leak $((5 << 20))
		"$PP_PYPROF" diff "$f1" "$f2" | tee "$T/diff-$name"
		grep -E ' \+[0-9.]+ +leak ' "$T/diff-$name" ||
			fail "$name: pyprof diff does not show leak growing"
		go tool pprof -top -diff_base "$f1" "$f2" 2>/dev/null |
			grep -E '^ *[0-9.]+[kM]B .* leak$' ||
			fail "$name: go tool pprof -diff_base does not show leak"
	}
	local bad=()
	for i in "${!pids[@]}"; do
		echo "== ${names[$i]}"
		(check "${names[$i]}" "$i") || bad+=("${names[$i]}")
	done
	((${#bad[@]} == 0)) || fail "failed for: ${bad[*]}"
}

@test "3.1 rate 1 records every allocation; none of pyprof's own, with its threads busy" {
	local exe
	exe=$(pyprof_pythons | awk '$1 == "system" { print $2 }')
	[[ -n $exe ]] || fail "Debian's python3 is not in the list"
	# PYPROF_HZ=1000 and many code objects keep the agent naming and
	# sending (allocating) all along
	run_capture rec env PYPROF_HZ=1000 "$PP_PYPROF" record --heap \
		--heap-rate 1 -o "$T/all.pb.gz" -- "$exe" "$PP_TARGETS/stress_code.py" 0.5
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status"
	pprof_raw "$T/all.heap.pb.gz" >"$T/raw"
	grep -q '^Period: 1$' "$T/raw" || fail "period is not 1"
	if grep -q 'non-Python thread' "$T/raw"; then
		fail "allocations charged to a thread without Python"
	fi
	# everything the program allocated is there: thousands of stacks
	(($(grep -c 'pid:\[' "$T/raw") > 1000)) || fail "too few stacks"
}

@test "3.2 a collector writes each process's heap profile beside its CPU profile" {
	collector_start
	run_capture p env PYPROF_HEAP_RATE=64k profiled "$PP_HOST_PYTHON" "$KNOWN"
	assert_eq 0 "$RC" "exit status"
	f=$(wait_profile "$PID")
	f=${f%.heap.pb.gz}
	f=${f%.pb.gz}
	for ((i = 0; i < 100; i++)); do
		[[ -f $f.heap.pb.gz ]] && break
		sleep 0.05
	done
	[[ -f $f.pb.gz && -f $f.heap.pb.gz ]] || fail "not both of $f.{,heap.}pb.gz: $(ls "$OUT")"
	$CHECK values "$f.heap.pb.gz" big_buffer | tee "$T/v"
	read -r _ alloc _ inuse _ _ <"$T/v"
	((alloc > 90 << 20 && inuse == 0)) || fail "big_buffer: $alloc allocated, $inuse in use"
}

@test "3.3 a bad PYPROF_HEAP_RATE or PYPROF_HEAP_SNAPSHOT_SECONDS: one line naming it, the program runs" {
	local v
	for v in PYPROF_HEAP_RATE=12q PYPROF_HEAP_RATE=-1 PYPROF_HEAP_RATE=2G \
		PYPROF_HEAP_SNAPSHOT_SECONDS=x; do
		run_capture bad env "$v" LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" "$PP_HOST_PYTHON" -c 'print("ran")'
		assert_eq 0 "$RC" "exit status with $v"
		grep -qx ran "$T/bad.out" || fail "$v: the program did not run"
		assert_eq 1 "$(wc -l <"$T/bad.err")" "stderr lines with $v"
		grep -q "^pyprof.*${v%%=*}=" "$T/bad.err" ||
			fail "$v: the line does not name the variable: $(cat "$T/bad.err")"
	done
}

@test "3.4 the heap hooks leave non-Python programs alone" {
	printf 'b\na\nc\n' >"$T/in"
	run_capture s env LD_PRELOAD="$PP_LIB" PYPROF_HEAP_RATE=1 \
		PYPROF_SOCKET="$SOCK" sort "$T/in"
	assert_eq 0 "$RC" "sort's exit status"
	assert_eq "a b c" "$(tr '\n' ' ' <"$T/s.out" | sed 's/ $//')" "sort's output"
	[[ ! -s $T/s.err ]] || fail "sort printed: $(cat "$T/s.err")"
}

@test "3.5 pyprof top and flamegraph read heap profiles (in use by default, -sample_index like go tool pprof)" {
	run_capture rec "$PP_PYPROF" record --heap --heap-rate 65536 \
		-o "$T/k.pb.gz" -- "$PP_HOST_PYTHON" "$KNOWN"
	assert_eq 0 "$RC" "exit status"
	"$PP_PYPROF" top "$T/k.heap.pb.gz" | tee "$T/top"
	head -1 "$T/top" | grep -q '^Type: inuse_space (bytes)' ||
		fail "top does not show inuse_space by default"
	"$PP_PYPROF" top --sample_index=alloc_space "$T/k.heap.pb.gz" | tee "$T/top2"
	grep -qE 'big_buffer' "$T/top2" || fail "big_buffer missing from alloc_space"
	if grep -qE 'big_buffer' "$T/top"; then
		fail "big_buffer (freed) is in the in-use view"
	fi
	"$PP_PYPROF" flamegraph "$T/k.heap.pb.gz" -o "$T/k.svg"
	xmllint --noout "$T/k.svg"
	grep -q 'small_objects' "$T/k.svg" || fail "small_objects not in the flame graph"
}

@test "3.6 PYPROF_NATIVE=1: a numpy array's allocation shows numpy's C code under the Python line" {
	/usr/bin/python3 -c 'import numpy' ||
		fail "Debian's python3-numpy is missing (make test-deps)"
	run_capture rec env PYPROF_NATIVE=1 "$PP_PYPROF" record --heap \
		--heap-rate 65536 -o "$T/n.pb.gz" -- /usr/bin/python3 "$KNOWN" --numpy
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status"
	# the stack of the 200 MiB block: numpy's extension module's frames,
	# then ones and numpy_array, then the interpreter down to main
	go tool pprof -symbolize=none -sample_index=inuse_space -traces \
		"$T/n.heap.pb.gz" >"$T/traces"
	awk '/^-+\+/ { on = 0 } /^ +2[0-9][0-9](\.[0-9]+)?MB / { on = 1 } on' \
		"$T/traces" | sed 's/^ *2[0-9.]*MB */             /' | tee "$T/big"
	grep -q '_multiarray_umath' "$T/big" || fail "no numpy C frame in the 200 MiB stack"
	grep -qE '^ +numpy_array$' "$T/big" || fail "numpy_array not in it"
	grep -qE '^ +_start$|__libc_start_main' "$T/big" || fail "the stack does not reach the process entry"
	# numpy's frames are above (leafward of) the Python line
	awk '/_multiarray_umath/ { m = NR } /^ +numpy_array$/ { p = NR } END { exit !(m && p && m < p) }' "$T/big" ||
		fail "numpy's frames are not leafward of numpy_array"
}

@test "3.7 --period: every window's heap profile beside its CPU profile, in use growing from window to window" {
	collector_start --period 1
	run_capture p env PYPROF_HEAP_RATE=64k profiled "$PP_HOST_PYTHON" "$LEAK" 2.5
	assert_eq 0 "$RC" "exit status"
	wait_profile "$PID" >/dev/null
	collector_stop
	local heaps=() f
	for f in "$OUT"/*."$PID".*.heap.pb.gz; do
		[[ -f ${f%.heap.pb.gz}.pb.gz ]] || fail "no CPU profile beside $f"
		heaps+=("$f")
	done
	ls "$OUT"
	((${#heaps[@]} >= 2)) || fail "fewer than two windows with heap profiles"
	# names sort by time: the first window against the last
	$CHECK grows "${heaps[0]}" "${heaps[-1]}" leak $((5 << 20))
}

@test "3.8 a dormant process samples its heap when pyprof ctl asks, for the window asked" {
	collector_start
	PYPROF_START=off profiled "$PP_HOST_PYTHON" "$LEAK" 2.5 \
		>"$T/d.out" 2>"$T/d.err" </dev/null 3>&- &
	local pid=$!
	sleep 0.8
	PYPROF_SOCKET=$SOCK "$PP_PYPROF" ctl start --heap-rate 65536 \
		--seconds 1 --pid "$pid" | tee "$T/ctl.out"
	grep -q 'heap_rate=65536' "$T/ctl.out" || fail "the process did not take the heap rate"
	wait "$pid" || fail "the program exited with $?"
	local f
	f=$(wait_profile "$pid")
	f=${f%.heap.pb.gz}
	f=${f%.pb.gz}
	for ((i = 0; i < 100; i++)); do
		[[ -f $f.heap.pb.gz ]] && break
		sleep 0.05
	done
	$CHECK values "$f.heap.pb.gz" leak | tee "$T/v"
	read -r objs alloc _ inuse _ _ <"$T/v"
	# 1 MiB every 0.1 s, sampled for about a second of the 2.5: some,
	# not all 25 MiB; and what was sampled is still held at exit
	((alloc >= 3 << 20 && alloc <= 20 << 20)) ||
		fail "leak: $alloc bytes allocated in the window"
	assert_eq "$alloc" "$inuse" "leak: allocated and still in use"
}

@test "3.9 a forked child's heap is its own: what it holds at os._exit, under its pid" {
	cat >"$T/forky.py" <<'PY'
import os
def parent_keeps():
    return [bytearray(1 << 20) for _ in range(8)]
def child_keeps():
    return [bytearray(1 << 20) for _ in range(30)]
P = parent_keeps()
pid = os.fork()
if pid == 0:
    C = child_keeps()
    os._exit(0)
os.waitpid(pid, 0)
print(os.getpid())
PY
	# 64 KiB: a 1 MiB block is sampled with probability 1 - e^-16
	run_capture rec "$PP_PYPROF" record --heap --heap-rate 65536 \
		-o "$T/f.pb.gz" -- "$PP_HOST_PYTHON" "$T/forky.py"
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status"
	local parent
	parent=$(cat "$T/rec.out")
	go tool pprof -symbolize=none -sample_index=inuse_space -tagfocus "pid=$parent" \
		-top "$T/f.heap.pb.gz" >"$T/parent.top"
	go tool pprof -symbolize=none -sample_index=inuse_space -tagignore "pid=$parent" \
		-top "$T/f.heap.pb.gz" >"$T/child.top"
	cat "$T/parent.top" "$T/child.top"
	# cum (4th column) of the function, in MB
	cum() { awk -v f="$2" '$NF == f { sub(/MB$/, "", $4); print $4 }' "$1"; }
	[[ $(cum "$T/parent.top" parent_keeps) =~ ^(7\.[5-9]|8|8\.[0-4])[0-9]*$ ]] ||
		fail "the parent's 8 MiB are not under parent_keeps"
	grep -q 'child_keeps' "$T/parent.top" && fail "child_keeps in the parent's heap"
	[[ $(cum "$T/child.top" child_keeps) =~ ^(29|30|31)(\.[0-9]+)?$ ]] ||
		fail "the child's 30 MiB are not under child_keeps"
	grep -q 'parent_keeps' "$T/child.top" && fail "the parent's blocks in the child's heap"
	# each process's own peak; record's last line names the higher one's,
	# the child's (30 MiB against the parent's 8)
	go tool pprof -symbolize=none -sample_index=peak_space -tagignore "pid=$parent" \
		-top "$T/f.heap.pb.gz" >"$T/child.peak"
	[[ $(cum "$T/child.peak" child_keeps) =~ ^(29|30|31)(\.[0-9]+)?$ ]] ||
		fail "the child's peak lacks its 30 MiB under child_keeps"
	tail -1 "$T/rec.err" | grep -qE '^pyprof: heap peak: [0-9.]+MB in use by pid [0-9]+ \(the highest of 2 processes\), [0-9.]+ s after the start \(' ||
		fail "record's last line is not the peak of one of 2 processes"
	tail -1 "$T/rec.err" | grep -q "by pid $parent " &&
		fail "the parent's high named: the child's was higher"
	return 0
}

@test "3.10 pyprof-collector --http serves a live process's heap (in use now) and allocs, as go tool pprof reads them" {
	collector_start --http 127.0.0.1:0
	local port
	port=$(http_port "$T/collector.log")
	local tok
	tok=$(cat "$SOCK.http-token") # the access token the collector made
	PYPROF_HEAP_RATE=64k profiled "$PP_HOST_PYTHON" "$LEAK" 3 \
		>"$T/l.out" 2>"$T/l.err" </dev/null 3>&- &
	local pid=$!
	sleep 1.5
	go tool pprof -symbolize=none -top \
		"http://pyprof:$tok@127.0.0.1:$port/debug/pprof/heap?pid=$pid" >"$T/heap.top" 2>"$T/heap.err" ||
		{ cat "$T/heap.err"; fail "go tool pprof could not read /debug/pprof/heap"; }
	go tool pprof -symbolize=none -top "http://pyprof:$tok@127.0.0.1:$port/debug/pprof/allocs" \
		>"$T/allocs.top" 2>/dev/null || fail "go tool pprof could not read /debug/pprof/allocs"
	wait "$pid"
	cat "$T/heap.top" "$T/allocs.top"
	grep -q '^Type: inuse_space' "$T/heap.top" || fail "heap: not inuse_space first"
	grep -q '^Type: alloc_space' "$T/allocs.top" || fail "allocs: not alloc_space first"
	grep -qE ' leak$' "$T/heap.top" || fail "leak not in the live heap profile"
	grep -qE ' steady$' "$T/allocs.top" || fail "steady not in the allocs profile"
}

@test "3.11 pyprof record --heap names the heap profile it wrote, and only one this run wrote" {
	run_capture rec "$PP_PYPROF" record --heap --heap-rate 65536 \
		-o "$T/k.pb.gz" -- "$PP_HOST_PYTHON" "$KNOWN"
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status"
	[[ -s $T/k.heap.pb.gz ]] || fail "no heap profile written"
	grep -qx "pyprof: wrote $T/k.heap.pb.gz (heap profile)" "$T/rec.err" ||
		fail "record does not name the heap profile"
	# without --heap, the old file is not this run's
	run_capture rec2 "$PP_PYPROF" record -o "$T/k.pb.gz" -- "$PP_HOST_PYTHON" -c pass
	cat "$T/rec2.err"
	if grep -q 'heap' "$T/rec2.err"; then
		fail "a heap profile named that this run did not write"
	fi
}

@test "3.12 pyprof diff on two heap profiles shows the growth in bytes (as go tool pprof -diff_base), shares with --shares" {
	local mb
	for mb in 10 30; do
		run_capture rec "$PP_PYPROF" record --heap --heap-rate 65536 \
			-o "$T/h$mb.pb.gz" -- "$PP_HOST_PYTHON" -c "
import time
def grows():
    kept = []
    for _ in range($mb):
        kept.append(bytearray(1 << 20))
    return kept
kept = grows()
time.sleep(0.3)  # a process gone before the library saw Python start sends nothing
"
		assert_eq 0 "$RC" "exit status"
	done
	"$PP_PYPROF" diff -n 5 "$T/h10.heap.pb.gz" "$T/h30.heap.pb.gz" -o "$T/d.svg" | tee "$T/diff"
	head -1 "$T/diff" | grep -qE '^Type: inuse_space \(bytes\); .*, change \+[0-9.]+MB$' ||
		fail "the header does not give the change in bytes"
	# flat change (3rd column) of grows: about +20 MB (sampled)
	awk '$(NF-1) == "grows" { print $3 }' "$T/diff" | head -1 >"$T/grew"
	[[ $(cat "$T/grew") =~ ^\+(1[6-9]|2[0-4])(\.[0-9])?MB$ ]] ||
		fail "grows did not grow by about 20 MB: '$(cat "$T/grew")'"
	xmllint --noout "$T/d.svg"
	grep -q 'red: value grew' "$T/d.svg" || fail "the flame graph is not by value"
	"$PP_PYPROF" diff --shares "$T/h10.heap.pb.gz" "$T/h30.heap.pb.gz" | tee "$T/shares"
	grep -q 'by change of cumulative share (percentage points' "$T/shares" ||
		fail "--shares does not compare shares"
}

@test "3.13 a forked child that ends at once (os._exit right after an allocation) still sends its heap samples" {
	local i f child
	collector_start
	for i in 1 2 3; do
		PYPROF_HEAP_RATE=64k run_capture q$i profiled "$PP_HOST_PYTHON" -c '
import os, sys, time
def quick_keeps():
    return bytearray(8 << 20)
time.sleep(0.3)  # the parent has seen its interpreter up: the child follows
pid = os.fork()
if pid == 0:
    x = quick_keeps()
    os._exit(0)
print(pid)
sys.stdout.flush()
os.waitpid(pid, 0)'
		assert_eq 0 "$RC" "exit status"
		child=$(cat "$T/q$i.out")
		f=$(wait_profile "$child" 10) || fail "run $i: nothing from the child $child"
		f=${f%.pb.gz}
		f=${f%.heap}.heap.pb.gz
		for ((j = 0; j < 100; j++)); do
			[[ -f $f ]] && break
			sleep 0.05
		done
		[[ -f $f ]] || fail "run $i: no heap profile for the child $child: $(ls "$OUT")"
		go tool pprof -symbolize=none -sample_index=inuse_space -top "$f" 2>/dev/null |
			grep -q quick_keeps || fail "run $i: quick_keeps missing from $f"
	done
}

@test "4.1 the heap at its peak: peak_space per function within 12%, the later one absent, record's last line says it and when (3.8, 3.11, 3.14, 3.15, system)" {
	check() {
		local name=$1 exe=$2
		TZ=UTC run_capture rec "$PP_PYPROF" record --heap \
			--heap-rate 65536 -o "$T/p.pb.gz" -- "$exe" "$PEAK"
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status under pyprof record --heap"
		$CHECK peak "$T/p.heap.pb.gz" "$T/rec.out" "$T/rec.err"
		go tool pprof -symbolize=none -sample_index=peak_space -top \
			"$T/p.heap.pb.gz" >"$T/peak.top" 2>"$T/peak.err" ||
			{ cat "$T/peak.err"; fail "go tool pprof -sample_index=peak_space"; }
		grep -q '^Type: peak_space' "$T/peak.top" || fail "not peak_space"
		grep -qE ' hold$' "$T/peak.top" || fail "hold not in the peak"
		go tool pprof -symbolize=none -top "$T/p.heap.pb.gz" \
			>"$T/inuse.top" 2>/dev/null
		grep -q '^Type: inuse_space' "$T/inuse.top" ||
			fail "inuse_space is not the default any more"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.8 3.11 3.14 3.15 system) \
		for_each_python check
}

@test "4.2 --period: each window's heap profile has its own peak, what was in use at that window's high" {
	collector_start --period 1
	run_capture p env PYPROF_HEAP_RATE=64k profiled "$PP_HOST_PYTHON" \
		"$PEAK" --slow
	assert_eq 0 "$RC" "exit status"
	wait_profile "$PID" >/dev/null
	collector_stop
	local f v hp tp best=0 best_third=-1 n=0
	for f in "$OUT"/*."$PID".*.heap.pb.gz; do
		# alloc inuse peak, objects and bytes: the 6th is peak_space
		v=($($CHECK values "$f" hold)) && hp=${v[5]}
		v=($($CHECK values "$f" third)) && tp=${v[5]}
		echo "$f: hold peak $hp, third peak $tp"
		if ((hp > best)); then best=$hp best_third=$tp; fi
		n=$((n + 1))
	done
	((n >= 3)) || fail "fewer than three windows with heap profiles"
	# hold's 150 MiB were the high of their window, third (later) absent
	# from it; the last window started after hold's were dropped: its
	# peak is third's 100 MiB, with no hold in it
	((best > 120 << 20)) || fail "no window's peak has hold's 150 MiB ($best)"
	((best_third == 0)) || fail "third in the peak of hold's window ($best_third)"
	((hp == 0)) || fail "the last window's peak has hold ($hp)"
	((tp > 80 << 20)) || fail "the last window's peak lacks third ($tp)"
}
