#!/usr/bin/env bats
# labels_wire.bats - label sets from code (wire.h's "Labels") end to end: a
# synthetic client (tests/e2e/helpers/wire_client.py, its own encoder)
# sends LABELS frames and samples naming them to a real collector, and the
# profiles are read back with the real go tool pprof (-raw through
# helpers/pprof_raw.py, -tagfocus, -traces) and with pyprof top --tag.
#
# Every client sends 300 samples, the even-numbered 150 under its set;
# alpha (pid 6001) endpoint=/api/users, beta (pid 6002) endpoint=/api/items.
#
# Rerun one test:  bats -f merged tests/e2e/labels_wire.bats

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${PYPROF_BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
COLLECTOR=$BUILD/pyprof-collector
PYPROF=$BUILD/pyprof
WC="python3 $ROOT/tests/e2e/helpers/wire_client.py"
RAW="python3 $ROOT/tests/e2e/helpers/pprof_raw.py"

setup() {
	[[ -x $COLLECTOR ]] || fail "$COLLECTOR not built"
	T=$(mktemp -d /tmp/ppl.XXXXXX)
	SOCK=$T/run/c.sock
	OUT=$T/out
	CPID=
}

teardown() {
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

collector_start() {
	local byte=""
	mkfifo "$T/ready"
	(cd "$T" && exec "$COLLECTOR" --socket "$SOCK" "$@" --ready-fd 3 \
		3>"$T/ready" 2>>"$T/log") &
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
	[[ $CRC == 0 ]] || fail "collector exit status $CRC"
}

# The two clients; alpha also sends a labelled and an unlabelled
# allocation (--heap-labels).
clients() {
	$WC good --socket "$SOCK" --pid 6001 --samples 300 --prefix alpha \
		--comm alpha --label endpoint=/api/users --heap-labels >/dev/null
	$WC good --socket "$SOCK" --pid 6002 --samples 300 --prefix beta \
		--comm beta --label endpoint=/api/items --label user=bob >/dev/null
}

assert_fact() {
	grep -qxF -- "$2" "$1" || fail "expected '$2' in $1:$(printf '\n'; cat "$1")"
}

refute_fact() {
	! grep -qF -- "$2" "$1" || fail "unexpected '$2' in $1:$(printf '\n'; cat "$1")"
}

@test "per-process profiles carry each process's labels on its labelled samples only" {
	collector_start --output-dir "$OUT"
	clients
	collector_stop
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
	h=$(echo "$OUT"/alpha.6001.*.heap.pb.gz)
	go tool pprof -symbolize=none -raw "$h" >"$T/raw" 2>&1
	# the 1000000-byte allocation (rate 1: one object) is labelled, the
	# 4096-byte one is not
	grep -A1 -E "^ +1 +1000000 +1 +1000000:" "$T/raw" |
		grep -q "endpoint:\[/api/users\]" || fail "$(cat "$T/raw")"
	grep -A1 -E "^ +1 +4096 +1 +4096:" "$T/raw" | tail -1 |
		grep -vq "endpoint" || fail "$(cat "$T/raw")"
	go tool pprof -symbolize=none -sample_index=inuse_space \
		-tagfocus=endpoint=/api/users -top "$h" >"$T/top" 2>&1
	grep -q "alpha_leaf_a" "$T/top" && ! grep -q "alpha_leaf_b" "$T/top" ||
		fail "$(cat "$T/top")"
}
