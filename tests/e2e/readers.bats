#!/usr/bin/env bats
# readers.bats - a shared collector with --readers-group: being profiled
# and reading every profile are two permissions. A member's profiles and
# command lines are readable by that member, the readers' group and the
# collector's user, and by no other member; the live views of every
# process (the HTTP token and Unix socket) by the readers' group alone,
# and with --http-members each member sees its own processes live on a
# socket of their own, where the kernel names the caller (issue 43.9).
#
# The machine-wide collector as the package runs it, played with
# throwaway accounts made here and removed in teardown: a service user
# (the package's pyprof) that runs the collector, two members A and B
# whose programs it serves (--allow-user), and a reader C in the readers'
# group. Everything they run is copied into a 0755 directory of its own,
# so the clone's permissions (0700 or not) do not matter. Root only.

load ../lib/common

setup() {
	common_setup
	[[ $(id -u) == 0 ]] || skip "needs root to make throwaway users"
	command -v setpriv >/dev/null || skip "no setpriv"
	command -v useradd >/dev/null || skip "no useradd"
	[[ -x /usr/bin/python3 ]] || skip "no /usr/bin/python3"
	[[ -f $PP_LIB && -x $PP_COLLECTOR ]] || fail "not built"
	local sfx
	sfx=$(printf '%04x%02x' $RANDOM $((RANDOM % 256)))
	SVC=ppr-svc-$sfx
	UA=ppr-a-$sfx
	UB=ppr-b-$sfx
	UC=ppr-c-$sfx
	GR=ppr-read-$sfx
	MADE_USERS=()
	MADE_GROUP=
	groupadd "$GR" && MADE_GROUP=$GR
	for u in "$SVC" "$UA" "$UB" "$UC"; do
		useradd --no-create-home --shell /usr/sbin/nologin "$u"
		MADE_USERS+=("$u")
	done
	# the collector's user gives files to the readers' group: a member
	usermod -a -G "$GR" "$SVC"
	usermod -a -G "$GR" "$UC"
	D=$(mktemp -d /tmp/pyprof-readers.XXXXXX)
	chmod 0755 "$D"
	cp "$PP_COLLECTOR" "$PP_LIB" "$PP_PYPROF" "$D/"
	cat >"$D/member.py" <<'PY'
# runs until the file named by its first argument exists, burning CPU
import os, sys, time
def member_spin():
    while not os.path.exists(sys.argv[1]):
        t = time.time()
        while time.time() - t < 0.02:
            pass
member_spin()
PY
	chmod 0755 "$D"/pyprof-collector "$D"/pyprof
	chmod 0644 "$D"/libpyprof.so "$D"/member.py
	# as the package's: a state directory anyone may pass through, a
	# runtime directory for the socket, both the service user's
	install -d -o "$SVC" -g "$SVC" -m 0751 "$D/state"
	install -d -o "$SVC" -g "$SVC" -m 0711 "$D/run"
	ROUT=$D/state/profiles
	RSOCK=$D/run/c.sock
	COLL=
	PIDS=()
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	if [[ -n ${COLL:-} ]]; then
		kill -KILL "$COLL" 2>/dev/null || true
		wait "$COLL" 2>/dev/null || true
	fi
	rm -rf "${D:-/nonexistent}"
	for p in "${MADE_USERS[@]}"; do
		userdel "$p" >/dev/null 2>&1 || true
	done
	[[ -z ${MADE_GROUP:-} ]] || groupdel "$MADE_GROUP" >/dev/null 2>&1 || true
	common_teardown
}

# as USER CMD...: CMD as USER with USER's groups, from /.
as() {
	local u=$1
	shift
	(cd / && exec setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- "$@")
}

# shared_start [ARGS]: the collector, as the service user, serving A and
# B, with ARGS.
shared_start() {
	(cd / && exec setpriv --reuid="$SVC" --regid="$(id -g "$SVC")" --init-groups -- \
		"$D/pyprof-collector" --socket "$RSOCK" --output-dir "$ROUT" \
		--allow-user "$UA" --allow-user "$UB" "$@") \
		>"$T/collector.log" 2>&1 3>&- </dev/null &
	COLL=$!
	for ((i = 0; i < 200; i++)); do
		[[ -S $RSOCK ]] && return 0
		kill -0 "$COLL" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/collector.log"
	fail "the collector did not start"
}

shared_stop() {
	kill -TERM "$COLL"
	wait "$COLL" || fail "the collector exited non-zero: $(cat "$T/collector.log")"
	COLL=
}

# member USER SECRET: USER's program, its command line holding SECRET,
# profiled by the shared collector until $D/stop exists; its pid in
# $T/USER.pid once it is connected.
member() {
	(cd / && exec setpriv --reuid="$1" --regid="$(id -g "$1")" --init-groups -- \
		env LD_PRELOAD="$D/libpyprof.so" PYPROF_SOCKET="$RSOCK" \
		PYPROF_COLLECTOR_USER="$SVC" /usr/bin/python3 "$D/member.py" "$D/stop" "$2") \
		>"$T/$1.out" 2>&1 3>&- </dev/null &
	PIDS+=($!)
	echo $! >"$T/$1.pid"
	wait_for_line "$T/collector.log" "pid $! connected" 15 ||
		fail "$1's program did not connect: $(cat "$T/$1.out")"
}

# profile_of USER: USER's program's profile (found as root).
profile_of() {
	local pid i f
	pid=$(cat "$T/$1.pid")
	for ((i = 0; i < 200; i++)); do
		f=$(ls "$ROUT"/uid-"$(id -u "$1")"/python3."$pid".*.pb.gz 2>/dev/null | head -1)
		[[ -n $f ]] && {
			echo "$f"
			return 0
		}
		sleep 0.05
	done
	ls -laR "$ROUT" >&2
	fail "no profile of $1's pid $pid"
}

# secrets_seen USER: the secrets (secret-of-*) USER finds in every file
# under the output directory that USER may read, one a line, sorted.
# USER is told every directory's name (a member may not list the output
# directory, only pass through it to its own).
secrets_seen() {
	as "$1" /bin/sh -c 'find "$@" -type f -readable 2>/dev/null |
		while read -r f; do gzip -dc "$f" 2>/dev/null || cat "$f"; done |
		grep -ao "secret-of-[a-z]*" | sort -u' sh "$ROUT" "$ROUT"/*/
}

@test "a member reads its own profile and command line, not another member's; the readers' group reads all" {
	shared_start --readers-group "$GR" --http "unix:$D/run/http.sock"
	member "$UA" secret-of-alice
	member "$UB" secret-of-bob

	# the live views: the readers' group's alone
	local tok
	as "$UA" cat "$RSOCK.http-token" >/dev/null 2>&1 && fail "member A reads the HTTP token"
	as "$UA" curl -s --max-time 5 --unix-socket "$D/run/http.sock" http://localhost/debug/pprof/ \
		>/dev/null 2>&1 && fail "member A connects to the HTTP socket"
	tok=$(as "$UC" cat "$RSOCK.http-token") || fail "the reader cannot read the HTTP token"
	as "$UC" curl -sf --max-time 10 --unix-socket "$D/run/http.sock" \
		"http://pyprof:$tok@localhost/debug/pprof/" >"$T/index.html" ||
		fail "the reader cannot read the index page"
	grep -q secret-of-alice "$T/index.html" || fail "the reader's index page lacks A's command line"
	grep -q secret-of-bob "$T/index.html" || fail "the reader's index page lacks B's command line"

	touch "$D/stop"
	wait "${PIDS[@]}"
	local fa fb
	fa=$(profile_of "$UA")
	fb=$(profile_of "$UB")
	shared_stop
	echo "   A's: $fa"
	echo "   B's: $fb"
	ls -la "$ROUT" "$(dirname "$fa")" "$(dirname "$fb")"

	# each member: its own command line, and nothing of the other's
	as "$UA" gzip -dc "$fa" | grep -aq secret-of-alice || fail "A cannot read its own profile's command line"
	as "$UB" gzip -dc "$fb" | grep -aq secret-of-bob || fail "B cannot read its own profile's command line"
	as "$UA" cat "$fb" >/dev/null 2>&1 && fail "A reads B's profile"
	as "$UB" cat "$fa" >/dev/null 2>&1 && fail "B reads A's profile"
	as "$UA" ls "$(dirname "$fb")" >/dev/null 2>&1 && fail "A lists B's directory"
	as "$UA" ls "$ROUT" >/dev/null 2>&1 && fail "A lists the output directory"
	assert_eq "secret-of-alice" "$(secrets_seen "$UA")" "the secrets A can read"
	assert_eq "secret-of-bob" "$(secrets_seen "$UB")" "the secrets B can read"

	# the reader: everything; a user in neither: nothing
	assert_eq "secret-of-alice secret-of-bob" "$(secrets_seen "$UC" | paste -sd' ')" "the secrets the reader can read"
	as "$UC" ls "$ROUT" >/dev/null || fail "the reader cannot list the output directory"
	assert_eq "" "$(secrets_seen nobody)" "the secrets nobody can read"
}

# members_get USER PATH: curl as USER on the members' socket; the body on
# stdout, the status in $T/status.
members_get() {
	as "$1" curl -s --max-time 20 -o - -w '%{stderr}%{http_code}' \
		--unix-socket "$D/run/members.sock" "http://localhost$2" 2>"$T/status"
}

@test "--http-members: a member sees its own process live, not another member's; the reader sees both on --http" {
	shared_start --readers-group "$GR" --http "unix:$D/run/http.sock" \
		--http-members "$D/run/members.sock"
	member "$UA" secret-of-alice
	member "$UB" secret-of-bob
	local pa pb tok
	pa=$(cat "$T/$UA.pid")
	pb=$(cat "$T/$UB.pid")
	assert_eq "unix:$D/run/members.sock" "$(as "$UA" cat "$RSOCK.http-members")" "SOCKET.http-members as A reads it"
	assert_eq "srw-rw-rw-" "$(stat -c %A "$D/run/members.sock")" "the members' socket's mode"

	# A's index: A's process and command line, nothing of B's
	members_get "$UA" /debug/pprof/ >"$T/a-index.html"
	assert_eq 200 "$(cat "$T/status")" "A's index page"
	grep -q "data-pid=\"$pa\"" "$T/a-index.html" || fail "A's index lacks A's pid $pa: $(cat "$T/a-index.html")"
	grep -q secret-of-alice "$T/a-index.html" || fail "A's index lacks A's command line"
	grep -q "data-pid=\"$pb\"" "$T/a-index.html" && fail "A's index lists B's pid $pb"
	grep -q secret-of-bob "$T/a-index.html" && fail "A's index shows B's command line"

	# B's process by its pid: as absent as a pid not connected
	members_get "$UA" "/debug/pprof/cmdline?pid=$pb" >"$T/out"
	assert_eq 404 "$(cat "$T/status")" "A asking for B's command line"
	grep -q secret-of-bob "$T/out" && fail "A got B's command line"
	members_get "$UA" "/debug/pprof/profile?seconds=1&pid=$pb" >"$T/out"
	assert_eq 404 "$(cat "$T/status")" "A asking for B's profile: $(cat "$T/out")"
	members_get "$UA" "/debug/pprof/top?seconds=1&pid=$pb" >"$T/out"
	assert_eq 404 "$(cat "$T/status")" "A asking for B's top table"
	members_get "$UA" "/debug/pprof/cmdline" >"$T/out"
	assert_eq 404 "$(cat "$T/status")" "A asking for the collector's own command line"

	# A's own: its command line, and a window of its processes alone
	members_get "$UA" "/debug/pprof/cmdline?pid=$pa" >"$T/out"
	assert_eq 200 "$(cat "$T/status")" "A asking for its own command line"
	grep -aq secret-of-alice "$T/out" || fail "A's command line: $(cat "$T/out")"
	members_get "$UA" "/debug/pprof/profile?seconds=2" >"$T/a.pb.gz"
	assert_eq 200 "$(cat "$T/status")" "A's profile of its processes"
	gzip -dc "$T/a.pb.gz" | grep -aq secret-of-alice || fail "A's window lacks A's process"
	gzip -dc "$T/a.pb.gz" | grep -aq secret-of-bob && fail "A's window holds B's process"
	"$PP_PYPROF" top "$T/a.pb.gz" | grep -q member_spin || fail "A's window: $("$PP_PYPROF" top "$T/a.pb.gz")"
	members_get "$UA" "/debug/pprof/top?seconds=1" >"$T/a-top.html"
	assert_eq 200 "$(cat "$T/status")" "A's top page"
	grep -q "<h1>Your processes (uid $(id -u "$UA")), 1 s of CPU time</h1>" "$T/a-top.html" ||
		fail "A's top page's title: $(head -5 "$T/a-top.html")"
	grep -q member_spin "$T/a-top.html" || fail "A's top page: $(cat "$T/a-top.html")"

	# one member holds at most 8 connections: the others' stay theirs
	as "$UA" /usr/bin/python3 -c '
import socket, sys
held = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
print(s.recv(4096).decode().splitlines()[0])' "$D/run/members.sock" >"$T/ninth" 2>&1
	assert_eq "HTTP/1.1 503 Service Unavailable" "$(cat "$T/ninth")" "A's ninth connection"
	members_get "$UB" /debug/pprof/ >/dev/null
	assert_eq 200 "$(cat "$T/status")" "B's index page"

	# a user the collector does not serve: refused
	members_get nobody /debug/pprof/ >"$T/out"
	assert_eq 403 "$(cat "$T/status")" "nobody on the members' socket"
	grep -q "is not served by this collector" "$T/out" || fail "nobody was told: $(cat "$T/out")"

	# the reader, on --http with the token: both
	tok=$(as "$UC" cat "$RSOCK.http-token") || fail "the reader cannot read the HTTP token"
	as "$UC" curl -sf --max-time 10 --unix-socket "$D/run/http.sock" \
		"http://pyprof:$tok@localhost/debug/pprof/" >"$T/index.html" ||
		fail "the reader cannot read the index page"
	grep -q "data-pid=\"$pa\"" "$T/index.html" || fail "the reader's index lacks A's pid"
	grep -q "data-pid=\"$pb\"" "$T/index.html" || fail "the reader's index lacks B's pid"
	touch "$D/stop"
	wait "${PIDS[@]}"
	shared_stop
	[[ -e $RSOCK.http-members || -e $D/run/members.sock ]] && fail "left behind: $(ls -la "$D/run")"
	return 0
}

@test "--http-members: a member's pyprof top --collector and pyprof dump show its own process" {
	shared_start --readers-group "$GR" --http "unix:$D/run/http.sock" \
		--http-members "$D/run/members.sock"
	member "$UA" secret-of-alice
	local pa
	pa=$(cat "$T/$UA.pid")
	as "$UA" env PYPROF_COLLECTOR_USER="$SVC" "$D/pyprof" top --collector "$RSOCK" --duration 2 \
		>"$T/top.out" 2>&1 || fail "A's top --collector: $(cat "$T/top.out")"
	grep -q member_spin "$T/top.out" || fail "A's top table: $(cat "$T/top.out")"
	as "$UA" env PYPROF_COLLECTOR_USER="$SVC" "$D/pyprof" dump "$pa" >"$T/dump.out" 2>&1 ||
		fail "A's dump: $(cat "$T/dump.out")"
	grep -q member_spin "$T/dump.out" || fail "A's dump: $(cat "$T/dump.out")"
	touch "$D/stop"
	wait "${PIDS[@]}"
	shared_stop
}

@test "without --http-members a member is told why it has no live view, not that the collector serves no HTTP" {
	shared_start --readers-group "$GR" --http "unix:$D/run/http.sock"
	member "$UA" secret-of-alice
	run as "$UA" env PYPROF_COLLECTOR_USER="$SVC" "$D/pyprof" top --collector "$RSOCK" --duration 1
	assert_eq 1 "$status" "exit status: $output"
	assert_eq 1 "${#lines[@]}" "lines: $output"
	[[ $output != *"serves no HTTP"* ]] || fail "the wrong diagnosis: $output"
	[[ $output == *"keeps its live views of every process for its readers' group, $GR: you may not read $RSOCK.http-addr. Ask to be added to $GR, or for the collector to serve each user its own processes (pyprof-collector --http-members PATH)"* ]] ||
		fail "$output"
	run as "$UA" env PYPROF_COLLECTOR_USER="$SVC" "$D/pyprof" dump "$(cat "$T/$UA.pid")"
	((status != 0)) || fail "dump succeeded: $output"
	[[ $output != *"serves no HTTP"* ]] || fail "the wrong diagnosis: $output"
	[[ $output == *"reports to the collector on $RSOCK, which keeps its live views of every process for its readers' group, $GR"* ]] ||
		fail "$output"
	touch "$D/stop"
	wait "${PIDS[@]}"
	shared_stop
}

@test "--merge with --readers-group: the merged profile, every member's command line, is the readers' alone" {
	shared_start --readers-group "$GR" --merge
	member "$UA" secret-of-alice
	member "$UB" secret-of-bob
	touch "$D/stop"
	wait "${PIDS[@]}"
	shared_stop
	local m
	m=$(ls "$ROUT"/merged.*.pb.gz) || fail "no merged profile: $(ls -la "$ROUT")"
	as "$UA" cat "$m" >/dev/null 2>&1 && fail "A reads the merged profile"
	as "$UC" gzip -dc "$m" | grep -aq secret-of-bob || fail "the reader cannot read the merged profile"
	assert_eq "" "$(secrets_seen "$UA")" "the secrets A can read"
}

@test "--readers-group: one line for a bad group, for --output-group beside it, for an output directory that is not the collector's" {
	run "$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" --readers-group no-such-group-here
	assert_eq 2 "$status" "exit status"
	assert_eq 1 "${#lines[@]}" "lines: $output"
	[[ $output == *"--readers-group wants a group name or a gid, not 'no-such-group-here'"* ]] || fail "$output"
	run "$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" --output-group "$GR" --readers-group "$GR"
	assert_eq 2 "$status" "exit status"
	assert_eq 1 "${#lines[@]}" "lines: $output"
	[[ $output == *"--readers-group and --output-group both say who reads every profile: give one"* ]] || fail "$output"
	# the output directory is root's, the collector the service user's
	install -d -o root -g root -m 0777 "$D/state/theirs"
	run setpriv --reuid="$SVC" --regid="$(id -g "$SVC")" --init-groups -- \
		"$D/pyprof-collector" --socket "$RSOCK" --output-dir "$D/state/theirs" --readers-group "$GR"
	assert_eq 1 "$(grep -c . <<<"$output")" "lines: $output"
	[[ $output == *"--readers-group: cannot make the output directory $D/state/theirs 0751 of the readers' group: Operation not permitted"* ]] ||
		fail "$output"
	((status != 0)) || fail "the collector started"
}
