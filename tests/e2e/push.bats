#!/usr/bin/env bats
# push.bats - pyprof-collector --pyroscope: windows pushed to Pyroscope's
# HTTP ingest API, outages, the spool, refusals and a slow server.
#
# No Pyroscope server can be installed here: the windows go to
# tests/lib/pyroscope_receiver.py, which implements POST /ingest
# as Pyroscope's server reads it (query, label set, status codes, body),
# records each request in $T/rec (NNNN.json, and NNNN.pb.gz when it was
# accepted) and answers 503, 401, 429 or slowly when $T/rec/mode says so.
# Bodies are read with the real `go tool pprof -raw`
# (tests/lib/pprof_raw.py). Windows are one second (--period 1); the
# clients are synthetic (tests/lib/wire_client.py: 100 samples a second,
# so each window's count is known and the total is exact), except the
# first test's, a real Python program on one interpreter.
#
# Rerun one test:  bats -f 'outage' tests/e2e/push.bats

load ../lib/common

WC="$PP_HOST_PYTHON $PP_ROOT/tests/lib/wire_client.py"
RAW="$PP_HOST_PYTHON $PP_ROOT/tests/lib/pprof_raw.py"
RECEIVER=$PP_ROOT/tests/lib/pyroscope_receiver.py

setup() {
	common_setup
	REC=$T/rec
	SPOOL=$T/spool
	mkdir -p "$REC"
	RPID=
	CPID=
}

teardown() {
	[[ -n $CPID ]] && kill -KILL "$CPID" 2>/dev/null || true
	[[ -n ${MOUNTED:-} ]] && { wait "$CPID" 2>/dev/null; umount "$MOUNTED"; } || true
	[[ -n $RPID ]] && kill -TERM "$RPID" 2>/dev/null || true
	if [[ -z ${BATS_TEST_COMPLETED:-} ]]; then
		echo "# collector log:" >&3
		sed 's/^/#   /' "$T/log" >&3 2>/dev/null || true
	fi
	common_teardown
}

# receiver_start [ARGS]: the receiver on 127.0.0.1, its URL in $URL.
receiver_start() {
	local i
	"$PP_HOST_PYTHON" "$RECEIVER" --dir "$REC" --port-file "$T/port" "$@" \
		2>>"$T/receiver.log" 3>&- &
	RPID=$!
	for ((i = 0; i < 200; i++)); do
		[[ -s $T/port ]] && break
		sleep 0.05
	done
	[[ -s $T/port ]] || fail "the receiver did not start"
	URL=http://127.0.0.1:$(cat "$T/port")
}

# pc_start [ARGS]: a collector pushing to $URL every second with its
# spool in $SPOOL, run in $T (so that a default ./profiles would show).
pc_start() {
	local i
	(cd "$T" && exec "$PP_COLLECTOR" --socket "$SOCK" --pyroscope "$URL" \
		--spool-dir "$SPOOL" --period 1 "$@" 2>>"$T/log" 3>&-) &
	CPID=$!
	for ((i = 0; i < 200; i++)); do
		[[ -S $SOCK ]] && return 0
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/log" >&2
	fail "the collector did not start"
}

pc_stop() {
	CRC=0
	kill -TERM "$CPID"
	wait "$CPID" || CRC=$?
	CPID=
}

# A client streaming 100 samples a second for $2 seconds as pid $1.
client() {
	$WC good --socket "$SOCK" --pid "$1" --samples $(($2 * 100)) \
		--batch 10 --pause-ms 100 --comm "${3:-worker}" \
		--prefix "${3:-worker}" "${@:4}" >"$T/client.$1" 3>&-
}

# Waits until $1 (a shell test) holds, for at most $2 seconds.
wait_for() {
	local i
	for ((i = 0; i < ${2:-20} * 20; i++)); do
		eval "$1" && return 0
		sleep 0.05
	done
	fail "timed out waiting for: $1"
}

# plant_window SEQ QUERY [BODY [DEST [URL]]]: a window file put in the
# spool by hand, as someone with a hand in the directory would: version 1
# (no URL line) unless URL is given.
plant_window() {
	local dir=$SPOOL/${4:-pyroscope} f
	mkdir -p -m 0700 "$dir"
	f=$dir/$1.push
	if [[ -n ${5:-} ]]; then
		printf 'pyprof-push 2\n%s\n%s\n%s\n%s' "${4:-pyroscope}" "$5" "$2" "${3:-x}" >"$f"
	else
		printf 'pyprof-push 1\n%s\n%s\n%s' "${4:-pyroscope}" "$2" "${3:-x}" >"$f"
	fi
	chmod 0600 "$f"
}

n_requests() { find "$REC" -name '*.json' | wc -l; }
n_accepted() { find "$REC" -name '*.pb.gz' | wc -l; }
n_spooled() { find "$SPOOL" -name '*.push' 2>/dev/null | wc -l; }

# A field of every accepted request, in arrival order: facts FIELD.
facts() {
	"$PP_HOST_PYTHON" - "$REC" "$1" <<'EOF'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    rec = json.load(open(path))
    if rec["status"] != 200:
        continue
    v = rec
    for part in sys.argv[2].split("."):
        v = v[part]
    print(v if not isinstance(v, list) else " ".join(v))
EOF
}

# The sum of the samples (first value) of every accepted body.
total_samples() {
	local f sum=0 n
	for f in "$REC"/*.pb.gz; do
		[[ -e $f ]] || continue
		n=$($RAW summary "$f" | sed -n 's/^total //p')
		sum=$((sum + n))
	done
	echo "$sum"
}

# Whether a list of numbers (one a line) increases strictly.
increasing() {
	awk 'NR > 1 && $1 <= prev { bad = 1 } { prev = $1 } END { exit bad }'
}

@test "windows of a real Python program arrive with the service, series labels, from/until and its functions" {
	local py pid comm f
	py=$(pyprof_pythons | head -1 | cut -d' ' -f2)
	receiver_start
	pc_start --push-label env=test
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$SOCK "$py" \
		"$PP_TARGETS/http_worker.py" alpha 3 >"$T/worker.out" 3>&- &
	pid=$!
	wait_for '[[ -s $T/worker.out ]]'
	comm=$(tr -c 'A-Za-z0-9_.\n/-' _ </proc/$pid/comm)
	wait "$pid"
	wait_for '(($(n_accepted) >= 3))'
	pc_stop
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	# No files without --output-dir (not even a default ./profiles).
	[[ -z $(ls -A "$OUT") && ! -e $T/profiles/spool ]] ||
		fail "files written without --output-dir: $(ls -A "$OUT")"
	facts series.service_name | sort -u >"$T/services"
	assert_eq "$comm" "$(cat "$T/services")" "service_name"
	facts series.__name__ | sort -u >"$T/names"
	assert_eq process_cpu "$(cat "$T/names")" "profile type"
	assert_eq test "$(facts series.env | sort -u)" "env label"
	assert_eq "$(hostname)" "$(facts series.host | sort -u)" "host label"
	assert_eq pyprof "$(facts series.pyroscope_spy | sort -u)" "spyName"
	assert_eq pprof "$(facts query.format | sort -u)" "format"
	assert_eq 100 "$(facts sampleRate | sort -u)" "sampleRate"
	# Windows follow each other, each at most a period long.
	facts from | increasing || fail "from does not increase: $(facts from)"
	paste <(facts from) <(facts until) |
		awk '$2 <= $1 || $2 - $1 > 2 { exit 1 }' ||
		fail "from/until: $(paste <(facts from) <(facts until))"
	: >"$T/all"
	for f in "$REC"/*.pb.gz; do
		$RAW summary "$f" >>"$T/all"
	done
	grep -q "^type samples/count cpu/nanoseconds$" "$T/all"
	grep -q "^stack .*;alpha_work;burn " "$T/all" ||
		fail "no alpha_work: $(grep ^stack "$T/all")"
	grep -q "^label pid=$pid " "$T/all" || fail "no pid=$pid label"
	# The program itself is unchanged.
	grep -q '^ready' "$T/worker.out"
	! grep -q 'send the same series' "$T/log"
}

@test "a 5-second outage (503), then recovery: every window arrives once, in order, with one log line for each end" {
	receiver_start
	pc_start
	client 7001 8 &
	local cl=$!
	wait_for '(($(n_accepted) >= 1))'
	echo 503 >"$REC/mode"
	sleep 5
	echo ok >"$REC/mode"
	wait "$cl"
	wait_for '(($(n_spooled) == 0))' 30
	pc_stop
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	assert_eq 800 "$(total_samples)" "samples received in all"
	facts from | increasing || fail "windows out of order or twice: $(facts from)"
	assert_eq 1 "$(grep -c 'push: cannot send to' "$T/log")" "outage start lines"
	assert_eq 1 "$(grep -c 'takes windows again after' "$T/log")" "outage end lines"
	grep 'takes windows again' "$T/log" | grep -qE '[1-9][0-9]* windows? \([0-9]+ bytes\) were spooled, all sent'
	# Back-off: a handful of tries in 5 s, not one per window or more.
	local n503
	n503=$(grep -l '"status": 503' "$REC"/*.json | wc -l)
	((n503 >= 1 && n503 <= 6)) || fail "$n503 requests answered 503"
}

@test "429 is retried like an outage: nothing is lost" {
	receiver_start
	pc_start
	echo 429 >"$REC/mode"
	client 7002 3 &
	local cl=$!
	sleep 2
	echo ok >"$REC/mode"
	wait "$cl"
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 3))' 30
	pc_stop
	assert_eq 300 "$(total_samples)" "samples received"
	grep -q 'push: cannot send to .*HTTP 429: too many requests' "$T/log"
}

@test "the collector killed during an outage sends the spool when it starts again" {
	local before
	receiver_start
	echo 503 >"$REC/mode"
	pc_start
	client 7003 3
	wait_for '(($(n_spooled) >= 2))'
	[[ $(stat -c %a "$SPOOL/pyroscope") == 700 ]] ||
		fail "spool mode $(stat -c %a "$SPOOL/pyroscope")"
	for f in "$SPOOL"/pyroscope/*.push; do
		[[ $(stat -c %a "$f") == 600 ]] || fail "$f mode $(stat -c %a "$f")"
	done
	kill -KILL "$CPID"
	wait "$CPID" || true
	CPID=
	before=$(n_spooled)
	assert_eq 0 "$(n_accepted)" "accepted during the outage"
	echo ok >"$REC/mode"
	pc_start
	wait_for '(($(n_spooled) == 0))' 30
	pc_stop
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	assert_eq "$before" "$(n_accepted)" "spooled windows received"
	grep -q "push: $before windows\? ([0-9]* bytes) spooled by an earlier run: sent first" "$T/log"
	facts from | increasing || fail "out of order: $(facts from)"
	for f in "$REC"/*.pb.gz; do
		$RAW summary "$f" | grep -q '^flat worker_leaf_a ' || fail "$f"
	done
}

@test "a full spool drops its oldest windows first and says how many" {
	receiver_start
	echo 503 >"$REC/mode"
	# About two windows' worth (a window here is some 700 bytes).
	pc_start --spool-max 1600
	client 7004 6
	wait_for 'grep -q "the spool is full" "$T/log"'
	sleep 1.5
	local kept dropped
	kept=$(find "$SPOOL" -name '*.push' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	((kept <= 1600)) || fail "the spool holds $kept bytes"
	echo ok >"$REC/mode"
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 1))' 30
	pc_stop
	dropped=$(sed -n 's/.* \([0-9]*\) dropped (spool full).*/\1/p' "$T/log" | tail -1)
	((dropped >= 2)) || fail "dropped: '$dropped'"
	grep -q 'takes windows again .*older dropped (spool full)' "$T/log"
	# The newest were kept: the last window the client filled arrived.
	local sent=$(($(total_samples)))
	((sent > 0 && sent < 600)) || fail "$sent samples arrived"
	facts from | increasing
}

@test "401: one clear log line, each window tried once, nothing spooled" {
	receiver_start
	echo 401 >"$REC/mode"
	pc_start
	client 7005 5
	sleep 1.5
	pc_stop
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	assert_eq 1 "$(grep -c 'refused a window (HTTP 401: invalid credentials)' "$T/log")" "lines about the 401"
	local n
	n=$(n_requests)
	((n >= 4 && n <= 8)) || fail "$n requests for about 6 windows"
	assert_eq 0 "$(n_spooled)" "spooled windows"
	grep -q "push: 0 windows sent, $n refused" "$T/log"
}

@test "a slow server (10 s per request) does not hold up the loop: files, HTTP and clients go on" {
	receiver_start
	echo slow >"$REC/mode"
	pc_start --output-dir "$OUT" --http 0 --http-no-auth
	local port
	wait_for 'grep -q "serving /debug/pprof/" "$T/log"'
	port=$(sed -n 's|.*serving /debug/pprof/ on http://[^ ]*:\([0-9]*\)/.*|\1|p' "$T/log" | head -1)
	client 7006 4 worker
	assert_eq "sent 400 samples" "$(cat "$T/client.7006")" "the client's own output"
	# Its last window's file is written when it disconnects, while the
	# push thread still waits on its first request.
	wait_for 'compgen -G "$OUT/worker.7006.*.pb.gz" >/dev/null' 5
	local files
	files=$(find "$OUT" -name 'worker.7006.*.pb.gz' | wc -l)
	((files >= 4)) || fail "$files window files"
	curl -sf --max-time 3 "http://127.0.0.1:$port/debug/pprof/" >/dev/null ||
		fail "HTTP did not answer within 3 s"
	(($(n_requests) <= 1)) || fail "the server answered already?"
	pc_stop
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	# What could not be sent within the exit grace is spooled.
	(($(n_spooled) >= 2)) || fail "$(n_spooled) windows spooled at exit"
	grep -q "left in $SPOOL/pyroscope for the next run" "$T/log"
}

@test "CPU, wall and heap windows go as their own profile types; --merge names the shared service" {
	receiver_start
	pc_start
	client 7007 2 cpuapp &
	local c1=$!
	client 7008 2 wallapp --wall &
	local c2=$!
	client 7009 2 heapapp --label k=v --heap-labels
	wait "$c1" "$c2"
	wait_for '(($(n_accepted) >= 5))'
	sleep 1.5
	pc_stop
	facts series.service_name >"$T/svc"
	facts series.__name__ >"$T/names"
	paste -d' ' "$T/svc" "$T/names" | sort -u >"$T/pairs"
	grep -qx "cpuapp process_cpu" "$T/pairs" || fail "$(cat "$T/pairs")"
	grep -qx "wallapp wall" "$T/pairs" || fail "$(cat "$T/pairs")"
	grep -qx "heapapp memory" "$T/pairs" || fail "$(cat "$T/pairs")"
	facts sample_types | sort -u | grep -qx \
		"alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes peak_objects/count peak_space/bytes"
	# --merge: one window for both processes, named after their name.
	rm -f "$REC"/*
	pc_start --merge --service-name shop/api
	client 7010 2 same &
	c1=$!
	client 7011 2 same
	wait "$c1"
	sleep 1.5
	pc_stop
	assert_eq shop/api "$(facts series.service_name | sort -u)" "merged service"
	for f in "$REC"/*.pb.gz; do
		$RAW summary "$f" >>"$T/merged"
	done
	grep -q '^label pid=7010 ' "$T/merged"
	grep -q '^label pid=7011 ' "$T/merged"
}

@test "PYPROF_WAITS: block and mutex windows go to Pyroscope as the Go SDK names them and to OTLP, with the waiter's and the holder's labels" {
	local ORX=$T/orx opid
	mkdir -p "$ORX"
	receiver_start
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" serve "$ORX" \
		2>>"$T/otlp.log" 3>&- &
	opid=$!
	wait_for '[[ -s $ORX/port ]]'
	check() {
		local exe=$2 f kind pyro otlp
		rm -f "$REC"/* "$ORX"/req-*
		pc_start --otlp "http://127.0.0.1:$(cat "$ORX/port")"
		run_capture w env PYTHONPATH="$PP_ROOT/preload/module" \
			PYPROF_WAITS=1 LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			"$exe" "$PP_TARGETS/waits_locks.py" 1.0 labels
		assert_eq 0 "$RC" "exit status of waits_locks.py"
		sleep 1.2 # the last window's end
		pc_stop
		[[ $CRC == 0 ]] || fail "collector exit $CRC"
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/waits_check.py" pushed \
			"$T/w.out" "$REC" >"$T/pyro.sum" || { cat "$T/pyro.sum"; return 1; }
		cat "$T/pyro.sum"
		# The same windows as OTLP: each Profile marked block or mutex,
		# the same totals, the waiter's and the holder's functions and
		# labels in them.
		: >"$T/otlp.sum"
		for f in "$ORX"/req-*.pb; do
			"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" summary "$f" >"$f.sum" ||
				fail "$f breaks profiles.proto's rules"
			kind=$(awk '$1 == "profattr" && $2 == "delay/nanoseconds" { sub(/.*=/, "", $3); print $3 }' "$f.sum")
			[[ -n $kind ]] || continue
			awk -v k="$kind" '$1 == "profile" { print k, $2, $4 }' "$f.sum" >>"$T/otlp.sum"
			grep -q "^attr delay thread.name=" "$f.sum" || fail "no thread.name in $f"
			sed "s/^/$kind /" "$f.sum" >>"$T/otlp.all"
		done
		for kind in block mutex; do
			pyro=$(awk -v k=$kind '$1 == k && NF == 3 { print $2, $3 }' "$T/pyro.sum")
			otlp=$(awk -v k=$kind '$1 == k && $2 == "contentions/count" { c += $3 } $1 == k && $2 == "delay/nanoseconds" { d += $3 } END { printf "%d %.0f\n", c, d }' "$T/otlp.sum")
			assert_eq "$pyro" "$otlp" "$kind contentions and delay, Pyroscope against OTLP"
		done
		grep -q "^block stack delay .*;wait_a;run " "$T/otlp.all"
		grep -q "^block attr delay role=wait_a " "$T/otlp.all"
		grep -q "^mutex stack delay .*;hold_long;run " "$T/otlp.all"
		grep -q "^mutex attr delay role=hold_long " "$T/otlp.all"
		rm -f "$T/otlp.all"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 3.11 3.14) for_each_python check
	kill "$opid"
}

@test "processes of one service go to Pyroscope as one window per period, labelled by pid (Pyroscope keeps one profile per series and time); OTLP and files stay per process" {
	local ORX=$T/orx f
	mkdir -p "$ORX"
	receiver_start
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" serve "$ORX" \
		2>>"$T/otlp.log" 3>&- &
	local opid=$!
	wait_for '[[ -s $ORX/port ]]'
	pc_start --otlp "http://127.0.0.1:$(cat "$ORX/port")" --output-dir "$OUT"
	client 7018 3 twin &
	local c1=$!
	client 7019 3 twin
	wait "$c1"
	client 7020 1 other
	sleep 1.5
	pc_stop
	kill "$opid" 2>/dev/null || true
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	! grep -q 'send the same series' "$T/log"
	assert_eq 700 "$(total_samples)" "samples received at Pyroscope"
	# One request per series and window: no (service, from) twice.
	paste -d' ' <(facts series.service_name) <(facts from) | sort | uniq -d >"$T/dups"
	[[ ! -s $T/dups ]] || fail "a series sent twice for one window: $(cat "$T/dups")"
	: >"$T/twin"
	for f in $(grep -l '"service_name": "twin"' "$REC"/*.json); do
		$RAW summary "${f%.json}.pb.gz" >>"$T/twin"
	done
	grep -q '^label pid=7018 ' "$T/twin" || fail "no pid=7018 in twin's windows"
	grep -q '^label pid=7019 ' "$T/twin" || fail "no pid=7019 in twin's windows"
	! grep -q '^label pid=7020 ' "$T/twin" || fail "pid 7020 (other) in twin's windows"
	grep -q '"service_name": "other"' "$REC"/*.json || fail "no window of other"
	# Files stay per process, and OTLP gets a request per process window.
	ls "$OUT" | grep -q '^twin\.7018\.' || fail "no file of 7018: $(ls "$OUT")"
	ls "$OUT" | grep -q '^twin\.7019\.' || fail "no file of 7019: $(ls "$OUT")"
	for f in "$ORX"/req-*.pb; do
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" summary "$f" ||
			fail "$f breaks profiles.proto's rules"
	done >"$T/otlp.txt"
	grep -qx 'resource process.pid=7018' "$T/otlp.txt" || fail "no OTLP resource of 7018"
	grep -qx 'resource process.pid=7019' "$T/otlp.txt" || fail "no OTLP resource of 7019"
}

@test "basic authentication, a bearer token and X-Scope-OrgID reach the server; the password stays off the command line" {
	receiver_start --require-tenant
	echo "tok-123" >"$T/token"
	chmod 0600 "$T/token" # as ssh wants its keys: others may not read it
	PYPROF_PUSH_PASSWORD=s3cret pc_start --push-basic-auth alice \
		--push-header 'X-Scope-OrgID: tenant1'
	! grep -q s3cret /proc/$CPID/cmdline
	client 7012 1
	wait_for '(($(n_accepted) >= 1))'
	pc_stop
	assert_eq "Basic $(printf alice:s3cret | base64)" \
		"$(facts headers.Authorization | sort -u)" "Authorization"
	assert_eq tenant1 "$(facts headers.X-Scope-OrgID | sort -u)" "tenant"
	rm -f "$REC"/*
	pc_start --push-bearer-token-file "$T/token" --push-header 'X-Scope-OrgID: t2'
	client 7013 1
	wait_for '(($(n_accepted) >= 1))'
	pc_stop
	assert_eq "Bearer tok-123" "$(facts headers.Authorization | sort -u)" "Authorization"
	# Without the tenant header the server refuses: said once.
	rm -f "$REC"/*
	pc_start
	client 7014 2
	sleep 1.5
	pc_stop
	assert_eq 1 "$(grep -c 'refused a window (HTTP 401: no org id)' "$T/log")" "refusals logged"
}

@test "HTTPS: a server whose certificate is signed by --push-ca-file gets the windows; without it, the certificate is refused and nothing is sent" {
	command -v openssl >/dev/null || fail "openssl is missing (make test-deps)"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$T/key.pem" \
		-out "$T/cert.pem" 2>"$T/openssl.log" || fail "openssl: $(cat "$T/openssl.log")"
	cat "$T/cert.pem" "$T/key.pem" >"$T/server.pem"
	receiver_start --tls-cert "$T/server.pem"
	URL=https://127.0.0.1:$(cat "$T/port")
	# Not trusted by the system: refused, kept in the spool.
	pc_start
	client 7015 2
	wait_for '(($(n_spooled) >= 1))'
	pc_stop
	assert_eq 0 "$(n_accepted)" "windows accepted without the CA"
	grep -qi 'certificate' "$T/log" || fail "no line says the certificate was refused"
	# Trusted through --push-ca-file: the spool and the new windows arrive.
	pc_start --push-ca-file "$T/cert.pem"
	client 7016 2
	wait_for '(($(n_accepted) >= 2))'
	wait_for '(($(n_spooled) == 0))'
	pc_stop
	(($(total_samples) > 0)) || fail "the windows pushed over HTTPS hold no samples"
}

@test "without --spool-dir the spool is private: beside the profiles, or in the user's state directory" {
	receiver_start
	(cd "$T" && XDG_STATE_HOME=$T/state exec "$PP_COLLECTOR" --socket "$SOCK" \
		--pyroscope "$URL" --period 1 2>>"$T/log" 3>&-) &
	CPID=$!
	wait_for '[[ -S $SOCK ]]'
	pc_stop
	grep -q "spool $T/state/pyprof/spool/pyroscope " "$T/log"
	[[ $(stat -c %a "$T/state/pyprof/spool") == 700 ]]
	(cd "$T" && exec "$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" \
		--pyroscope "$URL" --period 1 2>>"$T/log" 3>&-) &
	CPID=$!
	wait_for '[[ -S $SOCK ]]'
	# A second collector on the same spool is refused.
	run "$PP_COLLECTOR" --socket "$T/other.sock" --pyroscope "$URL" \
		--spool-dir "$OUT/spool"
	((status == 1)) || fail "second collector: status $status"
	[[ $output == *"is used by another collector"* ]] || fail "$output"
	pc_stop
	grep -q "spool $OUT/spool/pyroscope " "$T/log"
}

@test "--otlp: the same windows as OTLP profiles, a 503 retried after its Retry-After, next to --pyroscope" {
	local ORX=$T/orx total
	mkdir -p "$ORX"
	receiver_start
	"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" serve "$ORX" \
		--fail 503 --retry-after 2 2>>"$T/otlp.log" 3>&- &
	local opid=$!
	wait_for '[[ -s $ORX/port ]]'
	pc_start --otlp "http://127.0.0.1:$(cat "$ORX/port")" --push-label env=test
	client 7015 3 otlpapp
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 3))' 30
	wait_for '(($(ls "$ORX"/req-*.pb 2>/dev/null | wc -l) >= 3))' 30
	pc_stop
	kill "$opid"
	[[ $CRC == 0 ]] || fail "collector exit $CRC"
	assert_eq 300 "$(total_samples)" "samples at Pyroscope"
	total=0
	for f in "$ORX"/req-*.pb; do
		"$PP_HOST_PYTHON" "$PP_ROOT/tests/lib/otlp_pb.py" summary "$f" >"$f.sum" ||
			fail "$f breaks profiles.proto's rules"
		grep -qx "resource service.name=otlpapp" "$f.sum"
		grep -qx "resource process.pid=7015" "$f.sum"
		grep -qx "resource host.name=$(hostname)" "$f.sum"
		grep -qx "resource env=test" "$f.sum"
		total=$((total + $(awk '$1 == "profile" && $2 == "samples/count" { print $4 }' "$f.sum")))
	done
	assert_eq 300 "$total" "samples in the OTLP profiles"
	assert_eq "503" "$(awk 'NR == 1 { print $2 }' "$ORX/log")" "first OTLP answer"
	assert_eq 1 "$(grep -c "cannot send to http://127.0.0.1:$(cat "$ORX/port")" "$T/log")" "OTLP outage lines"
	grep -q "the first after 2 s as the server asks" "$T/log"
	grep -q "takes windows again" "$T/log"
}

@test "bad push options give one line naming the option and what it accepts" {
	local args msg
	while IFS='|' read -r args msg; do
		# shellcheck disable=SC2086
		run env -u PYPROF_PUSH_PASSWORD "$PP_COLLECTOR" --socket "$SOCK" $args
		((status == 2)) || fail "$args: status $status: $output"
		[[ $(echo "$output" | wc -l) == 1 ]] || fail "$args: $output"
		[[ $output == *"$msg"* ]] || fail "$args: '$output' lacks '$msg'"
	done <<'EOF'
--pyroscope ftp://host|--pyroscope wants http://HOST[:PORT][/PATH]
--pyroscope http://host/?x=1|--pyroscope wants
--pyroscope http://h --push-label novalue|--push-label wants KEY=VALUE
--pyroscope http://h --push-label a-b=c|--push-label wants KEY=VALUE
--pyroscope http://h --push-label k=a,b|--push-label wants KEY=VALUE
--pyroscope http://h --push-label k=1 --push-label k=2|--push-label k is given twice
--pyroscope http://h --service-name a:b|--service-name wants 1 to 255 characters
--pyroscope http://h --push-header NoColon|--push-header wants 'Name: value'
--pyroscope http://h --push-header Content-Type:x|--push-header Content-Type is set by the collector
--pyroscope http://h --spool-max 0|--spool-max wants a size
--pyroscope http://h --spool-max 12X|--spool-max wants a size
--pyroscope http://h --push-basic-auth u|--push-basic-auth needs the password in $PYPROF_PUSH_PASSWORD
--pyroscope http://h --push-password-file /x|--push-password-file goes with --push-basic-auth
--otlp localhost:4318|--otlp wants http://HOST[:PORT][/PATH]
--service-name svc|--service-name goes with --pyroscope or --otlp
--spool-dir /tmp/x|--spool-dir goes with --pyroscope or --otlp
EOF
}

# ---- a spool someone else had a hand in, hostile answers (issue 28) ----------

@test "the spool directory is checked: another user's, one others may write, a link: refused with one line, nothing sent" {
	local how rc
	receiver_start
	for how in theirs open link; do
		rm -rf "$SPOOL" "$T/elsewhere"
		case $how in
		theirs) plant_window 0000000000000001 /ingest?name=x; chown -R 65534:65534 "$SPOOL/pyroscope" ;;
		open) plant_window 0000000000000001 /ingest?name=x; chmod 0777 "$SPOOL/pyroscope" ;;
		link) mkdir -p "$SPOOL" "$T/elsewhere"; ln -s "$T/elsewhere" "$SPOOL/pyroscope" ;;
		esac
		rc=0
		timeout 10 "$PP_COLLECTOR" --socket "$SOCK" --pyroscope "$URL" --spool-dir "$SPOOL" \
			--period 1 >"$T/$how.log" 2>&1 </dev/null 3>&- || rc=$?
		assert_eq 1 "$rc" "$how: exit status ($(cat "$T/$how.log"))"
		assert_eq 1 "$(wc -l <"$T/$how.log")" "$how: lines: $(cat "$T/$how.log")"
		grep -q "refusing spool directory $SPOOL/pyroscope: .*; remove it, or give --spool-dir a directory of your own" "$T/$how.log" ||
			fail "$how: $(cat "$T/$how.log")"
	done
	grep -q "owned by uid 65534" "$T/theirs.log"
	grep -q "writable by others (mode 0777)" "$T/open.log"
	grep -q "it is a symbolic link" "$T/link.log"
	[[ -z $(ls -A "$T/elsewhere") ]] || fail "written through the link: $(ls -A "$T/elsewhere")"
	assert_eq 0 "$(n_requests)" "requests sent"
}

@test "a spooled window goes only to its own destination: another request path or URL is set aside, never sent" {
	rm -rf "$SPOOL"
	plant_window 0000000000000001 '/api/admin/tenants/delete?all=true'
	plant_window 0000000000000002 '/ingest?name=other&from=1&until=2&format=pprof' x pyroscope http://127.0.0.1:9
	receiver_start
	PYPROF_PUSH_PASSWORD=s3cret pc_start --push-basic-auth alice
	client 7030 2
	wait_for '(($(n_accepted) >= 2))'
	pc_stop
	find "$REC" -name '*.json' -exec grep -h '"path"' {} + | sort -u >"$T/paths"
	assert_eq '"path": "/ingest",' "$(sed 's/^ *//' "$T/paths")" "paths requested"
	grep -q "0000000000000001.push is not a window this collector can send (its request path is not /ingest?...): set aside" "$T/log" ||
		fail "$(grep push: "$T/log")"
	grep -q "0000000000000002.push is not a window this collector can send (spooled for http://127.0.0.1:9, not $URL): set aside" "$T/log" ||
		fail "$(grep push: "$T/log")"
	[[ -f $SPOOL/pyroscope/0000000000000001.push.rejected ]]
	grep -q "2 set aside" "$T/log"
}

@test "a FIFO swapped in for a spooled window is set aside at once: the others are sent, SIGTERM ends the collector" {
	local oldest
	receiver_start
	echo 503 >"$REC/mode"
	pc_start
	client 7031 2
	wait_for '(($(n_spooled) >= 2))'
	oldest=$(ls "$SPOOL/pyroscope" | grep '\.push$' | sort | head -1)
	rm "$SPOOL/pyroscope/$oldest"
	mkfifo -m 0600 "$SPOOL/pyroscope/$oldest"
	echo ok >"$REC/mode"
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 1))' 15
	timeout 10 kill -TERM "$CPID"
	local i
	for ((i = 0; i < 100; i++)); do kill -0 "$CPID" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$CPID" 2>/dev/null || fail "the collector did not end on SIGTERM"
	CPID=
	grep -q "$oldest is not a window this collector can send (not a regular file): set aside" "$T/log"
}

@test "a spool file numbered ffffffffffffffff is set aside: numbering does not wrap, pushing goes on, the thread does not spin" {
	plant_window ffffffffffffffff '/ingest?name=a&from=1&until=2&format=pprof'
	receiver_start
	# An outage, so that the windows numbered after it are spooled too.
	echo 503 >"$REC/mode"
	pc_start
	client 7032 2
	wait_for '(($(n_spooled) >= 1))'
	echo ok >"$REC/mode"
	wait_for '(($(n_accepted) >= 2 && $(n_spooled) == 0))' 15
	# Idle now: the push thread waits, it does not spin.
	local t0 t1
	t0=$(awk '{ print $14 + $15 }' /proc/$CPID/stat)
	sleep 1
	t1=$(awk '{ print $14 + $15 }' /proc/$CPID/stat)
	(((t1 - t0) < 30)) || fail "the collector used $((t1 - t0)) ticks in an idle second"
	pc_stop
	grep -q "ffffffffffffffff.push is not a window .*(its sequence number is past the largest one used): set aside" "$T/log"
	grep -q "1 set aside (cannot be sent)" "$T/log" || fail "$(grep 'push: .* sent' "$T/log")"
	assert_eq 200 "$(total_samples)" "samples received"
}

@test "a spool file numbered 4000000000000000 (the last number kept) leaves later windows sendable: the spool is numbered again from 1" {
	plant_window 4000000000000000 '/ingest?name=a&from=1&until=2&format=pprof'
	receiver_start
	echo 503 >"$REC/mode"
	pc_start
	client 7037 2
	wait_for '(($(n_spooled) >= 1))'
	# every window the outage spooled has a small number
	if ls "$SPOOL/pyroscope" | grep '\.push$' | grep -qv '^0000000000000'; then
		ls "$SPOOL/pyroscope"
		fail "a window numbered near the end"
	fi
	echo ok >"$REC/mode"
	wait_for '(($(n_accepted) >= 2 && $(n_spooled) == 0))' 15
	pc_stop
	grep -q "numbering its 1 windows again from 1" "$T/log" || fail "$(grep 'push:' "$T/log")"
	assert_eq 200 "$(total_samples)" "samples received"
}

@test "a spooled window with a CR in its path is set aside and counted, not retried forever ahead of the others" {
	plant_window 0000000000000001 $'/ingest?name=a\r&from=1&until=2&format=pprof'
	receiver_start
	pc_start
	client 7036 2
	wait_for '(($(n_accepted) >= 2))' 10
	pc_stop
	grep -q "0000000000000001.push is not a window .*(a malformed destination, URL or request path): set aside" "$T/log"
	grep -q "1 set aside (cannot be sent)" "$T/log" || fail "$(grep 'push: .* sent' "$T/log")"
	assert_eq 200 "$(total_samples)" "samples received"
}

@test "a sparse 300 MiB spool file is not read: --spool-max bounds what is read at start" {
	plant_window 0000000000000001 '/ingest?name=a&from=1&until=2&format=pprof'
	truncate -s 300M "$SPOOL/pyroscope/0000000000000001.push"
	receiver_start
	pc_start --spool-max 1M
	sleep 1.5
	local hwm
	hwm=$(awk '/^VmHWM/ { print $2 }' /proc/$CPID/status)
	((hwm < 65536)) || fail "the collector took $hwm kB"
	pc_stop
	grep -q "0000000000000001.push is not a window .*(bigger than --spool-max)" "$T/log"
}

@test "a full disk under the spool: windows it cannot take are held in memory and sent, and the counts say so" {
	command -v mount >/dev/null || skip "no mount"
	mkdir -p "$SPOOL"
	mount -t tmpfs -o size=12k,mode=0700 tmpfs "$SPOOL" || skip "cannot mount a tmpfs"
	MOUNTED=$SPOOL
	receiver_start
	echo 503 >"$REC/mode"
	pc_start
	client 7033 5
	wait_for 'grep -q "cannot spool a window" "$T/log"'
	echo ok >"$REC/mode"
	wait_for 'grep -q "takes windows again" "$T/log"' 30
	sleep 0.5
	pc_stop
	assert_eq 500 "$(total_samples)" "samples received"
	grep -q 'takes windows again .* were spooled, all sent ([1-9][0-9]* held in memory: the spool could not be written)' "$T/log" ||
		fail "$(grep 'push:' "$T/log")"
	grep -q 'windows sent, 0 refused, 0 dropped (spool full), 0 lost' "$T/log" ||
		fail "$(grep 'windows sent' "$T/log")"
	facts from | increasing || fail "out of order or twice: $(facts from)"
}

@test "a 3xx answer keeps the window (a redirect is not followed): sent once the server is fixed" {
	receiver_start
	echo 301 >"$REC/mode"
	pc_start
	client 7034 2
	wait_for '(($(n_spooled) >= 1))'
	grep -q 'HTTP 301, a redirect to http://127.0.0.1:9/ingest?.*: redirects are not followed; give the final URL' "$T/log" ||
		fail "$(grep push: "$T/log")"
	echo ok >"$REC/mode"
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 2))' 15
	pc_stop
	! grep -q 'refused a window' "$T/log" || fail "$(grep refused "$T/log")"
	assert_eq 200 "$(total_samples)" "samples received"
}

@test "a negative Retry-After at the start of an outage is ignored" {
	receiver_start
	echo "503 -1" >"$REC/mode"
	pc_start
	client 7035 1
	wait_for 'grep -q "push: cannot send to" "$T/log"'
	! grep -q "as the server asks" "$T/log" || fail "$(grep 'cannot send' "$T/log")"
	echo ok >"$REC/mode"
	wait_for '(($(n_spooled) == 0 && $(n_accepted) >= 1))' 10
	pc_stop
}

@test "a window OTLP cannot take is said to be ours, not the server's refusal" {
	plant_window 0000000000000001 '/v1development/profiles?s=x&p=1' 'not a profile' otlp
	receiver_start
	pc_start --otlp http://127.0.0.1:9
	wait_for 'grep -q "cannot be sent" "$T/log"' 10
	pc_stop
	grep -q "push: a window for http://127.0.0.1:9 cannot be sent (.*): it was not sent, and is not tried again" "$T/log" ||
		fail "$(grep push: "$T/log")"
	! grep -q 'refused a window' "$T/log" || fail "$(grep refused "$T/log")"
}

@test "push password and token files are checked as ssh checks its keys: mode, owner, link, FIFO" {
	local how rc opt
	receiver_start
	for how in open theirs link fifo; do
		rm -f "$T/secret"
		case $how in
		open) echo pw >"$T/secret"; chmod 0666 "$T/secret" ;;
		theirs) echo pw >"$T/secret"; chmod 0600 "$T/secret"; chown 65534 "$T/secret" ;;
		link) ln -s /etc/shadow "$T/secret" ;;
		fifo) mkfifo -m 0600 "$T/secret" ;;
		esac
		for opt in "--push-basic-auth u --push-password-file" --push-bearer-token-file; do
			rc=0
			# shellcheck disable=SC2086
			timeout 10 "$PP_COLLECTOR" --socket "$SOCK" --pyroscope "$URL" --spool-dir "$SPOOL" \
				$opt "$T/secret" >"$T/$how.log" 2>&1 </dev/null 3>&- || rc=$?
			assert_eq 1 "$rc" "$how $opt: exit status ($(cat "$T/$how.log"))"
			grep -q "refusing --push-[a-z-]*-file $T/secret: .*; make it a regular file of yours" "$T/$how.log" ||
				fail "$how $opt: $(cat "$T/$how.log")"
		done
	done
	grep -q "readable by others (mode 0666)\|writable by others (mode 0666)" "$T/open.log"
	grep -q "owned by uid 65534" "$T/theirs.log"
	grep -q "it is a symbolic link" "$T/link.log"
	grep -q "not a regular file" "$T/fifo.log"
	# The CAs HTTPS trusts: nobody else may add one.
	echo cert >"$T/ca.pem"
	chmod 0666 "$T/ca.pem"
	run "$PP_COLLECTOR" --socket "$SOCK" --pyroscope "$URL" --push-ca-file "$T/ca.pem"
	((status == 2)) || fail "--push-ca-file 0666: status $status: $output"
	[[ $output == *"refusing --push-ca-file $T/ca.pem: writable by others (mode 0666)"* ]] || fail "$output"
}
