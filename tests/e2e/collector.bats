#!/usr/bin/env bats
# collector.bats - pyprof-collector end to end, with synthetic clients.
#
# The clients are tests/lib/wire_client.py, which speaks the wire
# protocol from its own Python encoder (not our C codec); malformed streams
# are the fixtures in tests/data/wire/ (see its README). Profiles are read
# with the real `go tool pprof -raw` through tests/lib/pprof_raw.py.
#
# Rerun one test:  bats -f 'refused' tests/e2e/collector.bats
# Other build:     PYPROF_BUILD=build-asan bats tests/e2e/collector.bats
# Under valgrind:  COLLECTOR_WRAP="valgrind -q --leak-check=full
#                  --errors-for-leak-kinds=definite --error-exitcode=99"
#                  bats tests/e2e/collector.bats   (every test checks the
#                  collector's exit status, so an error fails the test)

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${PYPROF_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
COLLECTOR=$BUILD/pyprof-collector
PYPROF=$BUILD/pyprof
WC="python3 $ROOT/tests/lib/wire_client.py"
RAW="python3 $ROOT/tests/lib/pprof_raw.py"
DATA=$ROOT/tests/data/wire

setup() {
	[[ -x $COLLECTOR ]] || fail "$COLLECTOR not built"
	# Short: a socket path must fit in 108 bytes.
	T=$(mktemp -d /tmp/ppc.XXXXXX)
	SOCK=$T/run/c.sock
	OUT=$T/out
	CPID=
}

teardown() {
	if [[ -n $CPID ]] && kill -0 "$CPID" 2>/dev/null; then
		kill -KILL "$CPID" 2>/dev/null || true
	fi
	if mountpoint -q "$T/full" 2>/dev/null; then
		umount "$T/full" || true
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

# Starts the collector on $SOCK in $T with the given options and waits for
# its ready byte (this also exercises --ready-fd).
collector_start() {
	local byte=""
	mkfifo "$T/ready"
	(cd "$T" && exec ${COLLECTOR_WRAP:-} "$COLLECTOR" --socket "$SOCK" \
		"$@" --ready-fd 3 3>"$T/ready" 2>>"$T/log") &
	CPID=$!
	read -r -t 20 -n 1 byte <"$T/ready" || true
	rm -f "$T/ready"
	[[ $byte == 1 ]] || fail "collector not ready: $(cat "$T/log")"
}

# SIGTERM, then wait; sets CRC to the collector's exit status.
collector_stop() {
	CRC=0
	kill -TERM "$CPID"
	wait "$CPID" || CRC=$?
	CPID=
}

# Waits until the log has more than $2 lines matching fixed string $1.
wait_log() {
	local pattern=$1 min=${2:-0} i
	for ((i = 0; i < 200; i++)); do
		(($(grep -cF -- "$pattern" "$T/log" || true) > min)) && return 0
		sleep 0.05
	done
	fail "no log line with '$pattern' (after $min)"
}

wait_file() {
	local i
	for ((i = 0; i < 200; i++)); do
		compgen -G "$1" >/dev/null && return 0
		sleep 0.05
	done
	fail "no file matches $1"
}

# The line "KEY N" of a profile's summary must read exactly "KEY N".
assert_fact() {
	local file=$1 fact=$2
	grep -qxF -- "$fact" "$file" ||
		fail "expected '$fact' in $file:$(printf '\n'; cat "$file")"
}

@test "the socket is mode 0600 in a new 0700 directory, and readiness is signalled" {
	collector_start --output-dir "$OUT"
	[[ -S $SOCK ]] || fail "no socket at $SOCK"
	[[ $(stat -c %a "$SOCK") == 600 ]] || fail "socket mode $(stat -c %a "$SOCK")"
	[[ $(stat -c %a "$T/run") == 700 ]] || fail "dir mode $(stat -c %a "$T/run")"
	grep -qF "listening on $SOCK" "$T/log"
	collector_stop
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	[[ ! -e $SOCK ]] || fail "socket file left behind"
}

@test "a good client's profile parses with go tool pprof with its functions and exact sample count" {
	collector_start --output-dir "$OUT"
	$WC good --socket "$SOCK" --pid 5001 --samples 1234 --prefix goodclient \
		--comm goodclient --flags
	wait_file "$OUT/goodclient.5001.*.pb.gz"
	f=$(echo "$OUT"/goodclient.5001.*.pb.gz)
	$RAW summary "$f" >"$T/sum"
	assert_fact "$T/sum" "type samples/count cpu/nanoseconds"
	assert_fact "$T/sum" "total 1234"
	assert_fact "$T/sum" "value 12340000000"
	assert_fact "$T/sum" "stack goodclient_main;goodclient_work;goodclient_leaf_a 412"
	assert_fact "$T/sum" "stack goodclient_main;goodclient_work;goodclient_leaf_b 411"
	assert_fact "$T/sum" "stack goodclient_main;goodclient_idle 411"
	assert_fact "$T/sum" "line goodclient_leaf_a goodclient.py:32"
	assert_fact "$T/sum" "label pid=5001 1234"
	assert_fact "$T/sum" "label thread_id=5002 617"
	assert_fact "$T/sum" "label thread_name=worker-1 617"
	assert_fact "$T/sum" "label gil=held 617"
	assert_fact "$T/sum" "comment pid 5001 command: python3 goodclient.py"
	go tool pprof -sample_index=samples -top "$f" >"$T/top"
	grep -q "1234 total" "$T/top" || fail "$(cat "$T/top")"
	grep -q "goodclient_leaf_a" "$T/top"
	grep -qE "wrote $OUT/goodclient\.5001\.[0-9]{8}T[0-9]{6}Z\.pb\.gz: 1234 samples, 0 lost" "$T/log"
	grep -qF "pid 5001 connected: /usr/bin/python3 (goodclient), Python 3.11.7, cpu mode at 100 Hz" "$T/log"
	grep -qF "pid 5001 disconnected (clean): 1234 samples, 0 lost" "$T/log"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "every malformed stream is logged and closed while a good client streams on" {
	collector_start --output-dir "$OUT"
	# The good client sends half its samples, waits for $T/go, sends
	# the rest: the bad clients all come while it is mid-stream.
	$WC good --socket "$SOCK" --pid 5101 --samples 3000 --batch 20 \
		--wait-file "$T/go" --prefix goodclient >"$T/good.out" &
	gpid=$!
	n=0
	while IFS=$'\t' read -r name how expect; do
		flags=()
		[[ $how == eof ]] && flags=(--eof)
		before=$(grep -cF -- "$expect" "$T/log" || true)
		out=$($WC send --socket "$SOCK" "${flags[@]}" --timeout 5 \
			"$DATA/$name.bin")
		[[ $out == closed-by-collector ]] || fail "$name: $out"
		wait_log "$expect" "$before"
		# The line names the client's pid.
		grep -F -- "$expect" "$T/log" | tail -1 | grep -qE "pid [0-9]+" ||
			fail "$name: no pid in the log line"
		kill -0 "$CPID" || fail "collector died after $name"
		n=$((n + 1))
	done <"$DATA/expect.tsv"
	((n >= 25)) || fail "only $n fixtures"
	kill -0 "$gpid" || fail "the good client finished before the bad ones"
	grep -qF "pid 5101 connected" "$T/log"
	! grep -qF "pid 5101 disconnected" "$T/log" || fail "good client gone"
	touch "$T/go"
	wait "$gpid"
	wait_file "$OUT/goodclient.5101.*.pb.gz"
	$RAW summary "$OUT"/goodclient.5101.*.pb.gz >"$T/sum"
	assert_fact "$T/sum" "total 3000"
	assert_fact "$T/sum" "flat goodclient_leaf_a 1000"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "profiles are written atomically: complete gzip files and no temporary files left" {
	collector_start --output-dir "$OUT"
	pids=()
	for pid in 5201 5202 5203; do
		$WC good --socket "$SOCK" --pid $pid --samples 50 --comm atom &
		pids+=($!)
	done
	wait "${pids[@]}"
	wait_file "$OUT/atom.5203.*.pb.gz"
	wait_file "$OUT/atom.5201.*.pb.gz"
	wait_file "$OUT/atom.5202.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]]
	for f in "$OUT"/*; do
		[[ $f == *.pb.gz ]] || fail "unexpected file $f"
		gzip -t "$f"
	done
	[[ $(ls -A "$OUT" | wc -l) == 3 ]] || fail "$(ls -A "$OUT")"
}

@test "two processes with the same pid and start second get distinct files" {
	collector_start --output-dir "$OUT"
	$WC good --socket "$SOCK" --pid 5301 --start-ns 1700000000100000000 \
		--samples 100 --comm twin
	$WC good --socket "$SOCK" --pid 5301 --start-ns 1700000000900000000 \
		--samples 200 --comm twin
	wait_log "wrote" 1
	collector_stop
	[[ $CRC == 0 ]]
	files=("$OUT"/twin.5301.*.pb.gz)
	[[ ${#files[@]} == 2 ]] || fail "files: ${files[*]}"
	[[ ${files[0]} != "${files[1]}" ]]
	ls "$OUT" | grep -qE '^twin\.5301\.[0-9]{8}T[0-9]{6}Z\.1\.pb\.gz$' ||
		fail "no .1 suffix: $(ls "$OUT")"
	totals=$(for f in "${files[@]}"; do $RAW summary "$f" | grep '^total '; done | sort)
	[[ $totals == $'total 100\ntotal 200' ]] || fail "totals: $totals"
}

@test "--exit-grace: on SIGTERM a client that ends within the grace is read whole, not running; one that stays is; a second SIGTERM stops at once" {
	collector_start --output "$T/merged.pb.gz" --summary "$T/summary.txt" \
		--exit-grace 20000 --log-level debug
	# A: half of its samples, then it waits for $T/go; the rest and BYE
	$WC good --socket "$SOCK" --pid 5451 --samples 400 --batch 20 \
		--wait-file "$T/go" >"$T/a.out" &
	apid=$!
	wait_log "client pid"
	kill -TERM "$CPID"
	wait_log "waiting up to 20000 ms for 1 connected clients to end"
	touch "$T/go"
	wait "$apid"
	wait "$CPID" || fail "exit status $?"
	CPID=
	# it stopped when A ended, not at the end of the grace
	! grep -qF -- "--exit-grace over" "$T/log" || fail "$(cat "$T/log")"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=400 lost=0" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	$RAW summary "$T/merged.pb.gz" >"$T/sum"
	assert_fact "$T/sum" "label pid=5451 400"

	# B stays: counted as running when the grace is over
	rm -f "$T/log" "$T/summary.txt"
	collector_start --output "$T/merged.pb.gz" --summary "$T/summary.txt" \
		--exit-grace 300 --log-level debug
	$WC good --socket "$SOCK" --pid 5452 --samples 100 --no-bye \
		--keep-open 30 >"$T/b.out" &
	bpid=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "sent 100 samples" "$T/b.out" && break
		sleep 0.05
	done
	collector_stop
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	wait "$bpid"
	grep -qF -- "--exit-grace over: 1 clients still connected" "$T/log" ||
		fail "$(cat "$T/log")"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=100 lost=0 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"

	# a second SIGTERM ends a long grace at once
	rm -f "$T/log" "$T/summary.txt"
	collector_start --output "$T/merged.pb.gz" --summary "$T/summary.txt" \
		--exit-grace 600000 --log-level debug
	$WC good --socket "$SOCK" --pid 5453 --samples 100 --no-bye \
		--keep-open 30 >"$T/c.out" &
	cpid=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "sent 100 samples" "$T/c.out" && break
		sleep 0.05
	done
	kill -TERM "$CPID"
	wait_log "waiting up to 600000 ms"
	kill -TERM "$CPID"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$CPID" 2>/dev/null || fail "still waiting after a second SIGTERM"
	wait "$CPID" || fail "exit status $?"
	CPID=
	wait "$cpid"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=100 lost=0 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
}

@test "SIGTERM reads what connected clients sent and writes --output and --summary" {
	collector_start --output "$T/merged.pb.gz" --summary "$T/summary.txt"
	# Client A stays connected (no BYE) until the collector closes it.
	$WC good --socket "$SOCK" --pid 5401 --samples 300 --no-bye \
		--keep-open 20 --lost 1:5 >"$T/a.out" &
	apid=$!
	$WC good --socket "$SOCK" --pid 5402 --samples 200 --lost 3:2
	for ((i = 0; i < 100; i++)); do
		grep -q "sent 300 samples" "$T/a.out" && break
		sleep 0.05
	done
	collector_stop
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	wait "$apid"
	grep -qx "closed-by-collector" "$T/a.out" || fail "$(cat "$T/a.out")"
	# A was still connected: the summary counts it as running
	[[ $(cat "$T/summary.txt") == "processes=2 samples=500 lost=7 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	$RAW summary "$T/merged.pb.gz" >"$T/sum"
	assert_fact "$T/sum" "total 507"
	assert_fact "$T/sum" "label pid=5401 305"
	assert_fact "$T/sum" "label pid=5402 202"
	assert_fact "$T/sum" "flat [lost: ring full] 5"
	assert_fact "$T/sum" "flat [lost: buffer full] 2"
	grep -qF "SIGTERM received" "$T/log"
	grep -qE "wrote $T/merged.pb.gz: 500 samples, 7 lost, from 2 processes" "$T/log"
	# --output alone writes no per-process files.
	[[ ! -e $T/profiles ]] || fail "per-process profiles written"
	[[ -z $(ls -A "$T" | grep -vE '^(run|log|a\.out|sum|merged\.pb\.gz|summary\.txt)$') ]] ||
		fail "stray files: $(ls -A "$T")"
}

@test "without --output-dir or --output, profiles go to ./profiles" {
	collector_start
	$WC good --socket "$SOCK" --pid 5501 --samples 10 --comm dflt
	wait_file "$T/profiles/dflt.5501.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "a reconnecting process continues its profile" {
	collector_start --output "$T/merged.pb.gz" --summary "$T/summary.txt"
	$WC good --socket "$SOCK" --pid 5601 --start-ns 1700000000000000001 \
		--samples 100 --no-bye
	$WC good --socket "$SOCK" --pid 5601 --start-ns 1700000000000000001 \
		--samples 50 --conn-seq 1
	wait_log "reconnected: continuing its profile"
	collector_stop
	[[ $CRC == 0 ]]
	[[ $(cat "$T/summary.txt") == "processes=1 samples=150 lost=0" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	$RAW summary "$T/merged.pb.gz" >"$T/sum"
	assert_fact "$T/sum" "total 150"
}

@test "a second collector on the same socket is refused and the first keeps it" {
	collector_start --output-dir "$OUT"
	run "$COLLECTOR" --socket "$SOCK" --output-dir "$T/out2"
	[[ $status == 1 ]] || fail "status $status: $output"
	[[ $output == *"a collector is already listening on $SOCK"* ]] || fail "$output"
	[[ -S $SOCK ]] || fail "the second collector removed the socket"
	$WC good --socket "$SOCK" --pid 5701 --samples 10 --comm first
	wait_file "$OUT/first.5701.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "a second collector probing the socket is not an error in the first one's log" {
	collector_start --output-dir "$OUT"
	local i
	for i in 1 2 3; do
		run "$COLLECTOR" --socket "$SOCK" --output-dir "$T/out2"
		[[ $status == 1 ]] || fail "status $status: $output"
	done
	$WC good --socket "$SOCK" --pid 5702 --samples 10 --comm first
	wait_file "$OUT/first.5702.*.pb.gz"
	collector_stop
	if grep -iE 'HELLO|probe|error|warn' "$T/log"; then
		fail "the probes were logged"
	fi
}

@test "a stale socket file from a dead collector is replaced" {
	mkdir -m 700 "$T/run"
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$SOCK"
	[[ -S $SOCK ]]
	collector_start --output-dir "$OUT"
	$WC good --socket "$SOCK" --pid 5801 --samples 10 --comm stale
	wait_file "$OUT/stale.5801.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "a client of another uid is refused by its credentials" {
	[[ $(id -u) == 0 ]] || skip "needs root to run a client as nobody"
	collector_start --output-dir "$OUT"
	# Open the way on purpose, so only SO_PEERCRED stands in between.
	chmod 0711 "$T" "$T/run"
	chmod 0666 "$SOCK"
	# /usr/bin/python3: a pyenv shim under /root is not readable by nobody;
	# nor may the checkout be (a clone under /root), so run a copy.
	cp "$ROOT/tests/lib/wire_client.py" "$T/wire_client.py"
	chmod 0644 "$T/wire_client.py"
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 \
		"$T/wire_client.py" good --socket "$SOCK" \
		--pid 5901 --samples 10 --comm other || true
	wait_log "uid 65534 is not ours (0)"
	grep -qE "refused client pid [0-9]+: uid 65534" "$T/log"
	collector_stop
	[[ $CRC == 0 ]]
	[[ -z $(ls -A "$OUT") ]] || fail "profile written: $(ls "$OUT")"
}

@test "the achieved sampling rate is logged and kept in a comment" {
	collector_start --output-dir "$OUT"
	$WC good --socket "$SOCK" --pid 6001 --samples 10 --hz 100 \
		--achieved-hz 25 --comm rate
	wait_file "$OUT/rate.6001.*.pb.gz"
	grep -qF "pid 6001: sampling rate asked 100 Hz, achieved 25 Hz" "$T/log"
	$RAW summary "$OUT"/rate.6001.*.pb.gz >"$T/sum"
	assert_fact "$T/sum" "comment pid 6001: sampling rate asked 100 Hz, achieved 25 Hz"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "a wall-mode process gets wall/nanoseconds and cpu_state labels" {
	collector_start --output-dir "$OUT"
	$WC good --socket "$SOCK" --pid 6101 --samples 30 --wall --comm wall
	wait_file "$OUT/wall.6101.*.pb.gz"
	$RAW summary "$OUT"/wall.6101.*.pb.gz >"$T/sum"
	assert_fact "$T/sum" "type samples/count wall/nanoseconds"
	assert_fact "$T/sum" "label cpu_state=on 30"
	collector_stop
	[[ $CRC == 0 ]]
}

@test "usage errors exit with status 2 and --help with 0" {
	run "$COLLECTOR" --bogus
	[[ $status == 2 && $output == *"unknown option"* ]] || fail "$status $output"
	run "$COLLECTOR" --log-level loud
	[[ $status == 2 && $output == *"--log-level"* ]] || fail "$status $output"
	run "$COLLECTOR" --ready-fd 97
	[[ $status == 2 && $output == *"not an open file descriptor"* ]] || fail "$status $output"
	run "$COLLECTOR" --ready-fd x
	[[ $status == 2 ]] || fail "$status $output"
	run "$COLLECTOR" stray
	[[ $status == 2 ]] || fail "$status $output"
	run "$COLLECTOR" --socket
	[[ $status == 2 && $output == *"needs a value"* ]] || fail "$status $output"
	run "$COLLECTOR" --help
	[[ $status == 0 && $output == *"./profiles"* ]] || fail "$status $output"
}

@test "a socket path that cannot be bound exits with status 1" {
	run "$COLLECTOR" --socket "$T/$(printf 'x%.0s' {1..120})/c.sock"
	[[ $status == 1 && $output == *"too long"* ]] || fail "$status $output"
	touch "$T/file"
	run "$COLLECTOR" --socket "$T/file"
	[[ $status == 1 && $output == *"not a socket"* ]] || fail "$status $output"
}

@test "an --output in a missing directory fails at start with status 1" {
	run "$COLLECTOR" --socket "$SOCK" --output "$T/nodir/x.pb.gz"
	[[ $status == 1 && $output == *"cannot write $T/nodir/x.pb.gz"* ]] ||
		fail "$status $output"
	[[ ! -e $SOCK ]] || fail "socket left behind"
}

@test "profiles, --output and --summary are 0600 in a new 0700 --output-dir, whatever the umask" {
	umask 000
	collector_start --output-dir "$OUT/sub" --output "$T/merged.pb.gz" \
		--summary "$T/summary.txt" --per-thread
	$WC good --socket "$SOCK" --pid 5801 --samples 20 --comm private
	wait_file "$OUT/sub/private.5801.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	[[ $(stat -c %a "$OUT") == 700 && $(stat -c %a "$OUT/sub") == 700 ]] ||
		fail "directories: $(stat -c '%a %n' "$OUT" "$OUT/sub")"
	local f n=0
	for f in "$OUT"/sub/* "$T/merged.pb.gz" "$T/summary.txt"; do
		[[ $(stat -c %a "$f") == 600 ]] || fail "$(stat -c '%a %n' "$f")"
		n=$((n + 1))
	done
	((n >= 4)) || fail "only $n files: $(ls -l "$OUT/sub")"
}

@test "--output-group GROUP: files 0640 and new directories 0750 of that group; a bad group is a usage error" {
	umask 077
	collector_start --output-dir "$OUT" --summary "$T/summary.txt" --output-group daemon
	$WC good --socket "$SOCK" --pid 5802 --samples 20 --comm shared
	wait_file "$OUT/shared.5802.*.pb.gz"
	collector_stop
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	[[ $(stat -c '%a %G' "$OUT") == "750 daemon" ]] || fail "$(stat -c '%a %G %n' "$OUT")"
	for f in "$OUT"/shared.5802.*.pb.gz "$T/summary.txt"; do
		[[ $(stat -c '%a %G' "$f") == "640 daemon" ]] || fail "$(stat -c '%a %G %n' "$f")"
	done
	run "$COLLECTOR" --socket "$SOCK" --output-group no-such-group-x
	[[ $status == 2 && $output == *"--output-group wants a group name or a gid, not 'no-such-group-x'"* ]] ||
		fail "$status $output"
}

# full_disk: a small tmpfs at $T/full with $T/full/out in it, then filled
# up, so that no profile fits until $T/full/filler is removed.
full_disk() {
	mkdir -p "$T/full"
	mount -t tmpfs -o size=512k pyprof-test "$T/full" || fail "cannot mount a tmpfs (root needed)"
	mkdir "$T/full/out"
	dd if=/dev/zero of="$T/full/filler" bs=4k 2>/dev/null || true
	! echo x 2>/dev/null >"$T/full/probe" || fail "the tmpfs is not full"
}

# file_totals: the sum of the samples in the profiles in $T/full/out, and
# the [lost: not written] samples in them, as "TOTAL NOT_WRITTEN".
file_totals() {
	local f total=0 nw=0 n
	for f in "$T"/full/out/*.pb.gz; do
		[[ -f $f ]] || continue
		$RAW summary "$f" >"$T/s"
		n=$(sed -n 's/^total //p' "$T/s")
		total=$((total + ${n:-0}))
		n=$(sed -n 's/^flat \[lost: not written\] //p' "$T/s")
		nw=$((nw + ${n:-0}))
	done
	echo "$total $nw"
}

@test "disk full: a window that cannot be written is held and written when there is room again" {
	full_disk
	collector_start --output-dir "$T/full/out" --period 1 --summary "$T/summary.txt"
	$WC good --socket "$SOCK" --pid 5901 --comm held --samples 200 --batch 100 \
		--wait-file "$T/go" --no-bye --keep-open 30 >"$T/c.out" &
	cl=$!
	wait_log "No space left on device"
	rm "$T/full/filler" # room again
	wait_file "$T/full/out/held.5901.*.pb.gz"
	grep -qF "pid 5901: cannot write $T/full/out/held.5901." "$T/log"
	grep -qF "holding it in memory (1 profile" "$T/log"
	grep -qF "held in memory until there was room" "$T/log"
	touch "$T/go"
	wait_log "wrote $T/full/out/held.5901." 1 # the second window
	collector_stop
	wait "$cl" || true
	[[ $CRC == 0 ]] || fail "exit status $CRC"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=200 lost=0 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	[[ $(file_totals) == "200 0" ]] || fail "on disk (total, not written): $(file_totals); $(ls -l "$T/full/out")"
}

@test "disk full: what is finally dropped is counted: log, --summary, and [lost: not written] in the next profile" {
	full_disk
	# --hold-max 0: nothing is held, a window that cannot be written is
	# dropped at once.
	collector_start --output-dir "$T/full/out" --period 1 --hold-max 0 --summary "$T/summary.txt"
	$WC good --socket "$SOCK" --pid 5902 --comm dropped --samples 200 --batch 100 \
		--wait-file "$T/go" --no-bye --keep-open 30 >"$T/c.out" &
	cl=$!
	wait_log "was never written"
	grep -qE "pid 5902: its profile $T/full/out/dropped\.5902\.[0-9T]+Z\.pb\.gz was never written \(No space left on device; [0-9]+ bytes is more than --hold-max allows holding\): 100 samples counted as lost" "$T/log" ||
		fail "$(grep 'never written' "$T/log")"
	rm "$T/full/filler"
	touch "$T/go"
	wait_file "$T/full/out/dropped.5902.*.pb.gz"
	collector_stop
	wait "$cl" || true
	[[ $CRC == 1 ]] || fail "exit status $CRC: a profile was not written"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=200 lost=100 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	# Every sample is on disk or counted as not written: 100 real ones
	# and the 100 of the lost window, on its pseudo-frame.
	[[ $(file_totals) == "200 100" ]] || fail "on disk (total, not written): $(file_totals)"
}

@test "disk full at exit: the profiles still held are given up, counted as lost in --summary and the log, exit status 1" {
	full_disk
	collector_start --output-dir "$T/full/out" --period 1 --summary "$T/summary.txt"
	$WC good --socket "$SOCK" --pid 5903 --comm atexit --samples 100 --no-bye --keep-open 30 >"$T/c.out" &
	cl=$!
	wait_log "No space left on device"
	collector_stop
	wait "$cl" || true
	[[ $CRC == 1 ]] || fail "exit status $CRC"
	[[ $(cat "$T/summary.txt") == "processes=1 samples=100 lost=100 running=1" ]] ||
		fail "summary: $(cat "$T/summary.txt")"
	grep -qE "pid 5903: its profile .* was never written \(still no room at exit\): 100 samples counted as lost" "$T/log" ||
		fail "$(grep 'never written' "$T/log")"
}

# ---- label sets (wire.h's "Labels") ----------------------------------
# Every client sends 300 samples, the even-numbered 150 under its set;
# alpha (pid 6001) endpoint=/api/users, beta (pid 6002) endpoint=/api/items
# and user=bob.

# The two clients; alpha also sends a labelled and an unlabelled
# allocation (--heap-labels).
clients() {
	$WC good --socket "$SOCK" --pid 6001 --samples 300 --prefix alpha \
		--comm alpha --label endpoint=/api/users --heap-labels >/dev/null
	$WC good --socket "$SOCK" --pid 6002 --samples 300 --prefix beta \
		--comm beta --label endpoint=/api/items --label user=bob >/dev/null
}

refute_fact() {
	! grep -qF -- "$2" "$1" || fail "unexpected '$2' in $1:$(printf '\n'; cat "$1")"
}

@test "per-process profiles carry each process's labels on its labelled samples only" {
	collector_start --output-dir "$OUT"
	clients
	collector_stop
	[[ $CRC == 0 ]] || fail "collector exit status $CRC"
	a=$(echo "$OUT"/alpha.6001.*Z.pb.gz)
	b=$(echo "$OUT"/beta.6002.*Z.pb.gz)
	$RAW summary "$a" >"$T/a"
	$RAW summary "$b" >"$T/b"
	assert_fact "$T/a" "label endpoint=/api/users 150"
	# the labelled samples are the even ones: all on thread ref 1
	assert_fact "$T/a" "label thread_name=MainThread 150"
	refute_fact "$T/a" "endpoint=/api/items"
	assert_fact "$T/b" "label endpoint=/api/items 150"
	assert_fact "$T/b" "label user=bob 150"
	refute_fact "$T/b" "endpoint=/api/users"
	go tool pprof -symbolize=none -sample_index=samples \
		-tagfocus=endpoint=/api/users -top "$a" >"$T/top" 2>&1
	grep -q "accounting for 150, 50.00% of 300 total" "$T/top" ||
		fail "$(cat "$T/top")"
	"$PYPROF" top --tag endpoint=/api/users "$a" >"$T/ptop"
	grep -q "in 150 samples" "$T/ptop" || fail "$(cat "$T/ptop")"
	"$PYPROF" top --tag endpoint=/api/users "$b" >"$T/pnone" 2>&1 || true
	! grep -q "beta_" "$T/pnone" || fail "$(cat "$T/pnone")"
}

@test "a merged profile keeps both processes' labels apart, and -tagfocus and --tag pick one process's samples" {
	collector_start --output-dir "$OUT" --merge
	clients
	collector_stop
	[[ $CRC == 0 ]] || fail "collector exit status $CRC"
	m=$(echo "$OUT"/merged.*Z.pb.gz)
	$RAW summary "$m" >"$T/m"
	assert_fact "$T/m" "total 600"
	assert_fact "$T/m" "label endpoint=/api/users 150"
	assert_fact "$T/m" "label endpoint=/api/items 150"
	assert_fact "$T/m" "label user=bob 150"
	go tool pprof -symbolize=none -tagfocus=endpoint=/api/users -traces \
		"$m" >"$T/traces" 2>&1
	grep -q "pid:  6001" "$T/traces" || fail "$(cat "$T/traces")"
	! grep -q "pid:  6002" "$T/traces" || fail "beta's samples kept by -tagfocus"
	! grep -q "beta_" "$T/traces" || fail "beta's stacks kept by -tagfocus"
	"$PYPROF" top --tag endpoint=/api/items "$m" >"$T/ptop"
	grep -q "in 150 samples" "$T/ptop" || fail "$(cat "$T/ptop")"
	grep -q "beta_idle" "$T/ptop" && ! grep -q "alpha_" "$T/ptop" ||
		fail "$(cat "$T/ptop")"
}

@test "a labelled allocation is a heap sample of its own with the set's labels" {
	collector_start --output-dir "$OUT"
	clients
	collector_stop
	[[ $CRC == 0 ]] || fail "collector exit status $CRC"
	h=$(echo "$OUT"/alpha.6001.*.heap.pb.gz)
	go tool pprof -symbolize=none -raw "$h" >"$T/raw" 2>&1
	# the 1000000-byte allocation (rate 1: one object) is labelled, the
	# 4096-byte one is not
	# (alloc and inuse, objects and bytes; then the peak's)
	grep -A1 -E "^ +1 +1000000 +1 +1000000( +[0-9]+){2}:" "$T/raw" |
		grep -q "endpoint:\[/api/users\]" || fail "$(cat "$T/raw")"
	grep -A1 -E "^ +1 +4096 +1 +4096( +[0-9]+){2}:" "$T/raw" | tail -1 |
		grep -vq "endpoint" || fail "$(cat "$T/raw")"
	go tool pprof -symbolize=none -sample_index=inuse_space \
		-tagfocus=endpoint=/api/users -top "$h" >"$T/top" 2>&1
	grep -q "alpha_leaf_a" "$T/top" && ! grep -q "alpha_leaf_b" "$T/top" ||
		fail "$(cat "$T/top")"
}
