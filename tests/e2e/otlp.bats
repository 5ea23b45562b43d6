#!/usr/bin/env bats
# otlp.bats - OpenTelemetry profiles (OTLP, opentelemetry-proto's profiles
# v1development vendored under proto/opentelemetry): what `pyprof convert
# --format otlp` writes and `pyprof-collector --otlp URL` sends, read by an
# independent reader, Google's protobuf for Python with classes that
# protoc generates from the vendored .proto files at test time
# (tests/lib/otlp_pb.py), next to the real `go tool pprof` reading the pprof
# profile it was made from.
#
# Programs: tests/targets/otlp_work.py (otlp_alpha and otlp_beta, a thread
# named otlp-worker, trace and span ids set with pyprof.labels, zlib for
# native frames), profiled with `pyprof record`. No OpenTelemetry
# collector can be installed here: the receiver is tests/lib/otlp_pb.py's
# OTLP/HTTP server, written to the published specification; test 9 has
# the real collector push every --period window of a real program to it
# (push.bats covers outages, retries and the spool).
#
# Rerun one test:  bats -f 'frame types' tests/e2e/otlp.bats

load ../lib/common

OTLP="$PP_HOST_PYTHON $PP_ROOT/tests/lib/otlp_pb.py"
WORK=$PP_TARGETS/otlp_work.py

setup() {
	common_setup
	RECEIVER_PID=
}

teardown() {
	if [[ -n $RECEIVER_PID ]]; then
		kill "$RECEIVER_PID" 2>/dev/null || true
		wait "$RECEIVER_PID" 2>/dev/null || true
	fi
	common_teardown
}

# pprof_totals FILE: "TYPE/UNIT TOTAL" per sample type, summed from what
# go tool pprof -raw prints (the "Samples:" header names the types, the
# default one marked [dflt]; each sample line starts with one value per
# type). Sums are doubles, exact below 2^53.
pprof_totals() {
	pprof_raw "$1" | awk '
		/^Samples:/ {
			getline; gsub(/\[dflt\]/, ""); n = split($0, types, " ")
			on = 1; next
		}
		/^Locations/ { on = 0 }
		on && /^ *[0-9-]+( +[0-9-]+)*: / {
			sub(/:.*/, ""); for (i = 1; i <= n; i++) sum[i] += $i
		}
		END { for (i = 1; i <= n; i++) printf "%s %.0f\n", types[i], sum[i] }'
}

# otlp_totals SUMMARY: "TYPE/UNIT TOTAL" per profile, in pprof's type
# order is not kept (the default type comes first): sorted.
otlp_totals() {
	awk '$1 == "profile" { print $2, $4 }' "$1" | sort
}

# record_convert NAME [RECORD OPTIONS]: profiles otlp_work.py with the
# first selected interpreter into $T/NAME.pb.gz, converts it to
# $T/NAME.otlp and summarizes that into $T/NAME.sum.
record_convert() {
	local name=$1 exe
	shift
	exe=$(pyprof_pythons | awk '$3 != "missing" { print $2; exit }')
	"$PP_PYPROF" record -o "$T/$name.pb.gz" "$@" -- "$exe" "$WORK" 1.5 \
		>"$T/$name.rec.out" 2>"$T/$name.rec.err" ||
		fail "pyprof record: $(cat "$T/$name.rec.err")"
	"$PP_PYPROF" convert "$T/$name.pb.gz" --format otlp \
		--service-name shop -o "$T/$name.otlp" ||
		fail "pyprof convert --format otlp failed"
	$OTLP summary "$T/$name.otlp" >"$T/$name.sum" ||
		fail "the OTLP request breaks profiles.proto's rules"
}

@test "1 convert --format otlp: one profile per sample type, totals equal go tool pprof's" {
	record_convert cpu
	pprof_totals "$T/cpu.pb.gz" | sort >"$T/want"
	otlp_totals "$T/cpu.sum" >"$T/got"
	cat "$T/want"
	[[ $(wc -l <"$T/want") -eq 2 ]] || fail "pprof types: $(cat "$T/want")"
	assert_same_file "$T/want" "$T/got" "totals per sample type"
	grep -q '^profile cpu/nanoseconds ' "$T/cpu.sum" &&
		head -1 <(grep '^profile' "$T/cpu.sum") | grep -q cpu/nanoseconds ||
		fail "cpu (pprof's default type) is not the first profile"
	grep -qx 'period cpu/nanoseconds 10000000' "$T/cpu.sum" ||
		fail "period: $(grep '^period' "$T/cpu.sum")"
	grep -qx 'resource service.name=shop' "$T/cpu.sum" || fail "service.name"
	grep -qE '^scope pyprof [0-9]' "$T/cpu.sum" || fail "scope"
}

@test "1b wall mode: samples and wall time, totals equal go tool pprof's, wall first" {
	record_convert wall --mode wall
	pprof_totals "$T/wall.pb.gz" | sort >"$T/want"
	otlp_totals "$T/wall.sum" >"$T/got"
	cat "$T/want"
	grep -q '^wall/nanoseconds ' "$T/want" || fail "not a wall profile"
	assert_same_file "$T/want" "$T/got" "totals per sample type"
	[[ $(grep -m1 '^profile' "$T/wall.sum" | cut -d' ' -f2) == wall/nanoseconds ]] ||
		fail "first profile: $(grep -m1 '^profile' "$T/wall.sum")"
	grep -qE '^attr wall cpu_state=' "$T/wall.sum" || fail "no cpu_state attribute"
}

@test "2 the program's functions are cpython frames, its stacks intact" {
	record_convert cpu
	grep -qx 'frame otlp_alpha cpython' "$T/cpu.sum" || fail "otlp_alpha"
	grep -qx 'frame otlp_beta cpython' "$T/cpu.sum" || fail "otlp_beta"
	grep -qE '^stack cpu .*main;otlp_alpha;burn [0-9]+$' "$T/cpu.sum" ||
		fail "main > otlp_alpha > burn missing: $(grep '^stack cpu' "$T/cpu.sum")"
	# Thread.run on 3.x, run on 2.7 (no qualified names)
	grep -qE '^stack cpu .*run;otlp_beta;burn [0-9]+$' "$T/cpu.sum" ||
		fail "the thread's otlp_beta > burn missing"
	! grep -E '^frame \[' "$T/cpu.sum" | grep -qv ' -$' ||
		fail "a pseudo-frame has a frame type"
}

@test "3 with --native, C frames are native frames under the Python ones" {
	record_convert nat --native
	grep -qx 'frame otlp_alpha cpython' "$T/nat.sum" || fail "otlp_alpha"
	grep -E '^frame ' "$T/nat.sum" | grep -q ' native$' ||
		fail "no native frame: $(grep '^frame' "$T/nat.sum" | head)"
	# zlib.compress's C code (libz's deflate...) below burn, typed native
	grep -E '^frame [^ ]*deflate[^ ]* ' "$T/nat.sum" | grep -qv ' native$' &&
		fail "a deflate frame that is not native"
	grep -qE '^frame [^ ]*deflate[^ ]* native$' "$T/nat.sum" ||
		fail "no native deflate frame"
	pprof_totals "$T/nat.pb.gz" | sort >"$T/want"
	otlp_totals "$T/nat.sum" >"$T/got"
	assert_same_file "$T/want" "$T/got" "totals per sample type"
}

@test "4 labels become attributes, trace_id and span_id a link" {
	record_convert cpu
	local beta all
	grep -E '^attr cpu ' "$T/cpu.sum"
	beta=$(awk '$1 == "attr" && $2 == "cpu" && $3 == "endpoint=/checkout" { print $4 }' "$T/cpu.sum")
	[[ -n $beta ]] || fail "no endpoint attribute"
	grep -qx "link cpu 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 $beta" "$T/cpu.sum" ||
		fail "the link does not carry the labelled samples' $beta ns"
	grep -qx "attr cpu thread.name=otlp-worker $beta" "$T/cpu.sum" ||
		fail "thread.name=otlp-worker is not the labelled part"
	all=$(awk '$1 == "profile" && $2 == "cpu/nanoseconds" { print $4 }' "$T/cpu.sum")
	grep -qE "^attr cpu process.pid=[0-9]+ $all\$" "$T/cpu.sum" ||
		fail "process.pid not on every sample"
	grep -qE '^attr cpu (trace_id|span_id|pid|thread_name)=' "$T/cpu.sum" &&
		fail "pprof label keys left as attributes"
	true
}

@test "5 a heap profile: six profiles, inuse_space first, totals equal go tool pprof's" {
	record_convert cpu --heap
	"$PP_PYPROF" convert "$T/cpu.heap.pb.gz" --format otlp -o "$T/heap.otlp" ||
		fail "convert heap"
	$OTLP summary "$T/heap.otlp" >"$T/heap.sum" || fail "rules broken"
	pprof_totals "$T/cpu.heap.pb.gz" | sort >"$T/want"
	otlp_totals "$T/heap.sum" >"$T/got"
	cat "$T/want"
	[[ $(wc -l <"$T/want") -eq 6 ]] || fail "heap types: $(cat "$T/want")"
	assert_same_file "$T/want" "$T/got" "heap totals per sample type"
	[[ $(grep -m1 '^profile' "$T/heap.sum" | cut -d' ' -f2) == inuse_space/bytes ]] ||
		fail "first profile: $(grep -m1 '^profile' "$T/heap.sum")"
	grep -qx 'resource service.name=unknown_service' "$T/heap.sum" ||
		fail "default service.name"
}

@test "6 convert --format otlp refuses what is not a profile, with one line" {
	printf 'not a profile at all' >"$T/junk"
	run "$PP_PYPROF" convert "$T/junk" --format otlp -o "$T/out.otlp"
	assert_eq 1 "$status" "exit status"
	[[ ${#lines[@]} -eq 1 && ${lines[0]} == *"$T/junk: not a pprof profile"* ]] ||
		fail "message: $output"
	[[ ! -e $T/out.otlp ]] || fail "an output file was written"
	run "$PP_PYPROF" convert "$T/junk" --format otlp --tag a=b
	assert_eq 2 "$status" "--tag with otlp"
	[[ $output == *"--format otlp takes every sample"* ]] || fail "$output"
	run "$PP_PYPROF" convert "$T/junk" --format svg --service-name x
	assert_eq 2 "$status" "--service-name without otlp"
}

# receiver_start [ARGS]: tests/lib/otlp_pb.py serve $T/rx ARGS; sets PORT.
receiver_start() {
	local i
	mkdir -p "$T/rx"
	$OTLP serve "$T/rx" "$@" 2>"$T/rx.err" &
	RECEIVER_PID=$!
	for ((i = 0; i < 200; i++)); do
		[[ -s $T/rx/port ]] && break
		sleep 0.05
	done
	PORT=$(cat "$T/rx/port") || fail "receiver: $(cat "$T/rx.err")"
}

@test "7 the receiver answers as OTLP/HTTP says: 200 with a response, 400, 404, 415, gzip" {
	record_convert cpu
	receiver_start
	local url=http://127.0.0.1:$PORT/v1development/profiles code
	code=$(curl -s -o "$T/resp" -w '%{http_code} %{content_type}' \
		-H 'Content-Type: application/x-protobuf' \
		--data-binary @"$T/cpu.otlp" "$url")
	assert_eq "200 application/x-protobuf" "$code" "plain POST"
	gzip -c "$T/cpu.otlp" >"$T/cpu.otlp.gz"
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Encoding: gzip' \
		-H 'Content-Type: application/x-protobuf' \
		--data-binary @"$T/cpu.otlp.gz" "$url")
	assert_eq 200 "$code" "gzip POST"
	cmp -s "$T/rx/req-0001.pb" "$T/rx/req-0002.pb" || fail "gzip body differs"
	$OTLP summary "$T/rx/req-0002.pb" >/dev/null || fail "received request"
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary @"$T/cpu.otlp" "$url")
	assert_eq 415 "$code" "JSON (not supported by this receiver)"
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
		--data-binary 'garbage!' "$url")
	assert_eq 400 "$code" "garbage"
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
		--data-binary @"$T/cpu.otlp" "http://127.0.0.1:$PORT/v1/profiles")
	assert_eq 404 "$code" "another path"
}

@test "8 the receiver's throttling: 503 then 429 with Retry-After and a Status, then 200" {
	record_convert cpu
	receiver_start --fail 503,429 --retry-after 2
	local url=http://127.0.0.1:$PORT/v1development/profiles i code
	for i in 1 2 3; do
		curl -s -D "$T/h$i" -o "$T/b$i" -H 'Content-Type: application/x-protobuf' \
			--data-binary @"$T/cpu.otlp" "$url" >/dev/null
	done
	head -1 "$T/h1" | grep -q ' 503 ' || fail "first: $(head -1 "$T/h1")"
	head -1 "$T/h2" | grep -q ' 429 ' || fail "second: $(head -1 "$T/h2")"
	head -1 "$T/h3" | grep -q ' 200 ' || fail "third: $(head -1 "$T/h3")"
	grep -qi '^Retry-After: 2' "$T/h1" && grep -qi '^Retry-After: 2' "$T/h2" ||
		fail "no Retry-After"
	# google.rpc.Status: field 2 (message), length-delimited
	[[ $(head -c1 "$T/b1" | od -An -tx1 | tr -d ' ') == 12 ]] &&
		grep -q 'scripted failure' "$T/b1" || fail "503 body is not a Status"
	[[ ! -e $T/rx/req-0001.pb && -e $T/rx/req-0003.pb ]] ||
		fail "refused requests were kept or the accepted one was not"
	awk '{ print $2 }' "$T/rx/log" | tr '\n' ' ' | grep -qx '503 429 200 ' ||
		fail "log: $(cat "$T/rx/log")"
}

@test "9 pyprof-collector --otlp --period 1: every window of a real program arrives once and decodes, with go tool pprof's totals" {
	local exe want_n got_n f
	exe=$(pyprof_pythons | awk '$3 != "missing" { print $2; exit }')
	receiver_start
	collector_start --period 1 --otlp "http://127.0.0.1:$PORT" \
		--service-name shop --push-label env=test
	PYTHONPATH=$PP_ROOT/preload/module run_capture w profiled "$exe" "$WORK" 3
	assert_eq 0 "$RC" "the program's exit status: $(cat "$T/w.err")"
	local pid=$PID
	collector_stop || fail "collector exit status"
	# the files the collector wrote: one per window
	want_n=$(ls "$OUT"/*."$pid".*.pb.gz | wc -l)
	got_n=$(ls "$T"/rx/req-*.pb 2>/dev/null | wc -l)
	((want_n >= 3)) || fail "only $want_n windows written"
	assert_eq "$want_n" "$got_n" "OTLP requests received, one per window"
	for f in "$OUT"/*."$pid".*.pb.gz; do pprof_totals "$f"; done |
		awk '{ s[$1] += $2 } END { for (t in s) printf "%s %.0f\n", t, s[t] }' |
		sort >"$T/want"
	for f in "$T"/rx/req-*.pb; do
		$OTLP summary "$f" >"$f.sum" || fail "$f breaks profiles.proto's rules"
		grep -qx 'resource service.name=shop' "$f.sum" || fail "$f: service"
		grep -qx "resource process.pid=$pid" "$f.sum" || fail "$f: pid"
		grep -qx 'resource env=test' "$f.sum" || fail "$f: env"
		otlp_totals "$f.sum"
	done | awk '{ s[$1] += $2 } END { for (t in s) printf "%s %.0f\n", t, s[t] }' |
		sort >"$T/got"
	cat "$T/want"
	assert_same_file "$T/want" "$T/got" "totals over all windows"
	cat "$T"/rx/req-*.pb.sum | grep -qx 'frame otlp_alpha cpython' ||
		fail "otlp_alpha in no window"
	cat "$T"/rx/req-*.pb.sum | grep -qx 'frame otlp_beta cpython' ||
		fail "otlp_beta in no window"
	[[ -z $(cat "$T"/rx/req-*.pb.sum | grep '^time ' | sort | uniq -d) ]] ||
		fail "a window arrived twice (same start time)"
	awk '$2 != 200' "$T/rx/log" | grep -q . && fail "not all 200: $(cat "$T/rx/log")"
	true
}
