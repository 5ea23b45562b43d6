#!/usr/bin/env bats
# hostile.bats - the fourth attack round (issue 39): what `pyprof attach`,
# `dump` and `top --pid`, run as root on another user's process, may run
# and read. Nothing the target or another user chose runs with the
# caller's rights: not the target's program (its user may have made it),
# not a module from the current directory.
#
# The other user is played with setpriv as nobody (65534), as in
# trust.bats; what it runs is copied where it can read it.

load ../lib/common

setup() {
	common_setup
	[[ $(id -u) == 0 ]] || skip "needs root to act as another user"
	command -v setpriv >/dev/null || skip "no setpriv"
	D=$(mktemp -d /tmp/pyprof-hostile.XXXXXX)
	chmod 0755 "$D"
	# the stranger's own directory: it writes there, and so may anyone
	# it lets (the application's tree, a scratch directory)
	mkdir "$D/own"
	chown 65534:65534 "$D/own"
	chmod 0777 "$D/own"
	KIDS=()
}

teardown() {
	local k
	for k in "${KIDS[@]}"; do
		kill -9 "$k" 2>/dev/null || true
	done
	rm -rf "${D:-/nonexistent}"
	common_teardown
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# stranger NAME CMD...: CMD as nobody in the background, its output in
# $T/NAME.out; TPID its pid (exec'd: the process itself); waits for ready.
stranger() {
	local name=$1
	shift
	(cd "$D/own" && exec setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$@") >"$T/$name.out" 2>"$T/$name.err" \
		</dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/$name.out" '^ready$' 20
}

# refused_line CMD...: exit status 1 and one line on stderr; the line in
# $T/ref.err.
refused_line() {
	local rc=0
	timeout 60 "$@" >"$T/ref.out" 2>"$T/ref.err" </dev/null || rc=$?
	cat "$T/ref.err"
	[[ $rc == 1 ]] || fail "exit status $rc, not 1: $*"
	[[ $(wc -l <"$T/ref.err") == 1 ]] || fail "not one line: $*"
}

@test "39.1 dump, attach and top --pid as root never run the target's own program (a python3.14 of its user's making)" {
	mkdir "$D/own/bin"
	cc -DRAN_LOG="\"$D/own/ran.log\"" -o "$D/own/bin/python3.14" \
		"$PP_TARGETS/made_python.c"
	chown -R 65534:65534 "$D/own/bin"
	stranger made "$D/own/bin/python3.14" --target 60
	[[ $(readlink "/proc/$TPID/exe") == "$D/own/bin/python3.14" ]]
	refused_line "$PP_PYPROF" dump "$TPID"
	grep -qE "process $TPID( \([^)]*\))? is not a Python process" "$T/ref.err"
	refused_line "$PP_PYPROF" dump "$TPID" --native
	refused_line "$PP_PYPROF" attach "$TPID" --duration 1
	grep -qE "process $TPID( \([^)]*\))? is not a Python process" "$T/ref.err"
	refused_line "$PP_PYPROF" top --pid "$TPID" --duration 1
	if [[ -e $D/own/ran.log ]]; then
		cat "$D/own/ran.log"
		fail "pyprof ran the target's program"
	fi
}

# trap_modules DIR: a sysconfig.py and a _remote_debugging.py in DIR
# (what the commands' interpreter used to import first from the current
# directory) that write down who imported them.
trap_modules() {
	local dir=$1 m
	for m in sysconfig _remote_debugging; do
		cat >"$dir/$m.py" <<PY
import os
with open("$D/own/imported.log", "a") as f:
    f.write("$m imported by uid %d\n" % os.geteuid())
raise ImportError("planted")
PY
	done
	chmod 0666 "$dir"/*.py
}

cwd_modules() {
	local name=$1 exe=$2 trusted
	trap_modules "$D/own"
	# the target: root's own program this time, started from elsewhere
	(cd / && exec "$exe" "$PP_TARGETS/attach_blocked.py" sleep 30) \
		>"$T/$name.out" 2>"$T/$name.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/$name.out" '^ready$' 20
	# root runs the commands from the stranger's directory; the
	# interpreter's own directory on PATH is one root owns
	trusted=$(dirname "$(readlink -f "$exe")")
	(cd "$D/own" && PATH=$trusted:/usr/bin:/bin timeout 60 \
		"$PP_PYPROF" dump "$TPID") >"$T/$name.dump" 2>"$T/$name.dump.err" ||
		{ cat "$T/$name.dump.err"; fail "dump failed"; }
	grep -q "^Thread $TPID \"MainThread\"$" "$T/$name.dump" ||
		{ cat "$T/$name.dump"; fail "no main thread in the dump"; }
	(cd "$D/own" && TMPDIR=$D timeout 60 "$PP_PYPROF" attach "$TPID" \
		--duration 1 -o "$T/$name.pb.gz") 2>"$T/$name.att.err" ||
		{ cat "$T/$name.att.err"; fail "attach failed"; }
	if [[ -e $D/own/imported.log ]]; then
		cat "$D/own/imported.log"
		fail "a module from the current directory was imported"
	fi
	kill "$TPID"
}

@test "39.2 dump and attach as root from a directory another user writes import nothing from it" {
	PYPROF_TEST_PYTHONS="$(pythons_of 3.14 3.15)" for_each_python cwd_modules
}

# A python3.14 of the stranger's that is a real interpreter: root's dump
# finds none it trusts (not on PATH, the target's own is the stranger's)
# and says so in one line, without running it.
# dump reads the target from outside (runs nothing of anyone's) on every
# version; dump --native still runs CPython's own remote unwinder, so it
# refuses an interpreter the target's user could have changed.
@test "39.1 dump as root reads a real interpreter another user owns from outside; dump --native refuses it in one line; neither runs it" {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.1[45]/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.14+ interpreter"
	mkdir "$D/own/bin"
	cp "$exe" "$D/own/bin/python3.14"
	chown -R 65534:65534 "$D/own/bin"
	trap_modules "$D/own"
	# the program from where nobody may read it, wherever the tree was
	# cloned (a clone in root's 0700 directory is out of its reach)
	mkdir -p "$D/prog"
	cp "$PP_TARGETS/attach_blocked.py" "$D/prog/attach_blocked.py"
	chmod 0755 "$D/prog"
	chmod 0644 "$D/prog/attach_blocked.py"
	PYTHONHOME=$(dirname "$(dirname "$(readlink -f "$exe")")") \
		stranger real "$D/own/bin/python3.14" \
		"$D/prog/attach_blocked.py" sleep 30
	(cd "$D/own" && PATH=/usr/bin:/bin timeout 60 "$PP_PYPROF" dump "$TPID") \
		>"$T/dump.out" 2>"$T/dump.err" </dev/null ||
		fail "dump failed: $(cat "$T/dump.err")"
	grep -q "nap" "$T/dump.out" || fail "no nap in the stack: $(cat "$T/dump.out")"
	(cd "$D/own" && PATH=/usr/bin:/bin refused_line "$PP_PYPROF" dump "$TPID" --native)
	grep -q "pyprof does not run the target's own" "$T/ref.err"
	[[ ! -e $D/own/imported.log ]] || fail "ran: $(cat "$D/own/imported.log")"
}

@test "39.3 dump of a process whose PYPROF_SOCKET names another user's collector sends it nothing: one line" {
	local port
	cp "$PP_LIB" "$D/libpyprof.so"
	chmod 0644 "$D/libpyprof.so"
	# the stranger's "collector": an HTTP listener that writes down what
	# it hears, its address beside the socket its program names
	cat >"$D/listen.py" <<'PY'
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
print("port %d" % s.getsockname()[1])
print("ready", flush=True)
while True:
    c, _ = s.accept()
    data = c.recv(65536)
    with open(sys.argv[1], "ab") as f:
        f.write(data)
    c.sendall(b"HTTP/1.0 404 Not Found\r\n\r\n\x1b]0;owned\x07\x1b[2J")
    c.close()
PY
	stranger listener /usr/bin/python3 "$D/listen.py" "$D/own/heard"
	port=$(sed -n 's/^port //p' "$T/listener.out")
	as_nobody sh -c "echo 127.0.0.1:$port >'$D/own/c.sock.http-addr'"
	stranger prog env LD_PRELOAD="$D/libpyprof.so" \
		PYPROF_SOCKET="$D/own/c.sock" PYPROF_START=off \
		/usr/bin/python3 -c 'import time; print("ready", flush=True); time.sleep(60)'
	PYPROF_HTTP_TOKEN=operators-secret refused_line "$PP_PYPROF" dump "$TPID"
	grep -q "c.sock.http-addr belongs to uid 65534, not to you" "$T/ref.err"
	PYPROF_HTTP_TOKEN=operators-secret refused_line "$PP_PYPROF" top --pid "$TPID" --duration 1
	grep -q "belongs to uid 65534" "$T/ref.err"
	if [[ -s $D/own/heard ]]; then
		cat -v "$D/own/heard"
		fail "the stranger's server heard from pyprof"
	fi
}

@test "39.11 dump prints the target's names as text: no escape reaches the terminal" {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.1[45]/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.14+ interpreter"
	cat >"$D/esc.py" <<'PY'
import threading, time
name = "evil\x1b]0;owned\x07\x1b[2J"
def f():
    time.sleep(60)
f.__qualname__ = f.__name__ = name
f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)
threading.Thread(target=f, name="t\x1b[31m").start()
print("ready", flush=True)
PY
	chmod 0644 "$D/esc.py"
	(exec "$exe" "$D/esc.py") >"$T/esc.out" 2>"$T/esc.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/esc.out" '^ready$' 20
	PATH=$(dirname "$(readlink -f "$exe")"):/usr/bin:/bin \
		"$PP_PYPROF" dump "$TPID" >"$T/dump" 2>&1 || { cat "$T/dump"; fail "dump"; }
	cat -v "$T/dump"
	grep -q 'evil?\]0;owned?' "$T/dump" || fail "the name is not there as text"
	if LC_ALL=C grep -q $'\x1b' "$T/dump"; then
		fail "an escape reached the output"
	fi
}

@test "39.13 lib-path refuses a path LD_PRELOAD would split: one line, nothing printed" {
	mkdir -p "$D/a b"
	cp "$PP_PYPROF" "$PP_LIB" "$D/a b/"
	run_capture lp "$D/a b/pyprof" lib-path
	cat "$T/lp.err"
	assert_eq 1 "$RC" "exit status"
	[[ ! -s $T/lp.out ]] || fail "printed: $(cat "$T/lp.out")"
	grep -q "holds a space, which LD_PRELOAD cannot hold" "$T/lp.err"
	[[ $(wc -l <"$T/lp.err") == 1 ]]
}

@test "39.9 a request another site's page makes is refused, whatever credentials the browser holds (CSRF); the user's own and our pages' are served" {
	local port tok u code
	collector_start --http 0 --http-token s3cret-csrf
	port=$(http_port "$T/collector.log")
	u="http://127.0.0.1:$port/debug/pprof/"
	for h in "Sec-Fetch-Site: cross-site" "Sec-Fetch-Site: same-site" \
		"Origin: http://127.0.0.1:8080" "Origin: null"; do
		code=$(curl -s -o "$T/body" -w '%{http_code}' -H "$h" \
			-b "pyprof_token_$port=s3cret-csrf" "$u?token=s3cret-csrf")
		[[ $code == 403 ]] || fail "$h: $code"
		grep -q "another site's page" "$T/body"
	done
	for h in "Sec-Fetch-Site: same-origin" "Sec-Fetch-Site: none" \
		"Origin: http://127.0.0.1:$port" "X-Nothing: 1"; do
		code=$(curl -s -o /dev/null -w '%{http_code}' -H "$h" \
			"$u?token=s3cret-csrf")
		[[ $code == 200 ]] || fail "$h: $code"
	done
	collector_stop
}

@test "39.12 a program bound to glibc's old condition variables (GLIBC_2.2.5) runs as without the library" {
	cc -O2 -pthread -o "$T/oldcond" "$PP_TARGETS/oldcond.c" ||
		fail "cannot build tests/targets/oldcond.c"
	run_capture plain timeout 20 "$T/oldcond"
	assert_eq 0 "$RC" "without the library: $(cat "$T/plain.out")"
	run_capture pre env LD_PRELOAD="$PP_LIB" timeout 20 "$T/oldcond"
	cat "$T/pre.out" "$T/pre.err"
	assert_eq 0 "$RC" "with the library preloaded"
	assert_same_file "$T/plain.out" "$T/pre.out"
	# the library's wrappers are the new ABI's only
	objdump -T "$PP_LIB" | grep -E ' GLIBC_2\.3\.2 +pthread_cond_timedwait$' ||
		fail "pthread_cond_timedwait is not versioned GLIBC_2.3.2"
}

@test "39.14 an attach directory another user made first: attach says whose it is and what to do in one line; top --pid reads from outside, past it" {
	local exe
	exe=$(pyprof_pythons | awk '$1 ~ /^3\.1[45]/ {print $2; exit}')
	[[ -n $exe ]] || fail "no 3.14+ interpreter"
	mkdir -m 1777 "$D/tmp"
	as_nobody mkdir -m 0700 "$D/tmp/pyprof-attach.$(id -u)"
	(exec "$exe" "$PP_TARGETS/attach_blocked.py" sleep 30) \
		>"$T/t.out" 2>"$T/t.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/t.out" '^ready$' 20
	TMPDIR=$D/tmp refused_line "$PP_PYPROF" attach "$TPID" --duration 1
	grep -q "another user (uid 65534) made it, where attach keeps its files; remove it (as root), or set TMPDIR" "$T/ref.err"
	# top --pid reads a process with nothing loaded from outside (issue
	# 45): the squatter's directory is not used at all
	TMPDIR=$D/tmp "$PP_PYPROF" top --pid "$TPID" --duration 1 \
		>"$T/top.out" 2>"$T/top.err" || { cat "$T/top.err"; fail "top --pid"; }
	[[ -z $(ls -A "$D/tmp/pyprof-attach.$(id -u)") ]] ||
		fail "top --pid wrote into the directory another user made"
	! grep -q "libpyprof" "/proc/$TPID/maps" || fail "the library was loaded"
}

# our_python NAME: a Python process of root's with the library, reporting
# to $SOCK, dormant, every thread sampled in wall time when woken (its
# main thread sleeps); TPID its pid.
our_python() {
	LD_PRELOAD=$PP_LIB PYPROF_SOCKET=$SOCK PYPROF_START=off \
		PYPROF_MODE=wall /usr/bin/python3 -c \
		'import time; print("ready", flush=True); time.sleep(60)' \
		>"$T/$1.out" 2>"$T/$1.err" </dev/null 3>&- &
	TPID=$!
	KIDS+=("$TPID")
	wait_for_line "$T/$1.out" '^ready$' 20
}

@test "39.8 --http unix:PATH: a 0600 socket in the collector's directory; curl --unix-socket with the token, top --collector and dump through it; a directory another user writes is refused" {
	local tok code
	mkdir -m 0700 "$T/h"
	collector_start --http "unix:$T/h/http.sock"
	wait_for_line "$SOCK.http-addr" . 10
	[[ $(cat "$SOCK.http-addr") == "unix:$T/h/http.sock" ]] ||
		fail "http-addr: $(cat "$SOCK.http-addr")"
	[[ -S $T/h/http.sock && $(stat -c %a "$T/h/http.sock") == 600 ]] ||
		fail "socket: $(ls -l "$T/h")"
	our_python sleeper
	tok=$(cat "$SOCK.http-token")
	code=$(curl -s -o "$T/index.html" -w '%{http_code}' \
		--unix-socket "$T/h/http.sock" \
		"http://localhost/debug/pprof/?token=$tok")
	[[ $code == 200 ]] || fail "with the token: $code"
	grep -q "data-pid=\"$TPID\"" "$T/index.html" ||
		fail "the process is not in the index"
	code=$(curl -s -o /dev/null -w '%{http_code}' \
		--unix-socket "$T/h/http.sock" http://localhost/debug/pprof/)
	[[ $code == 401 ]] || fail "without the token: $code"
	timeout 60 "$PP_PYPROF" top --collector "$SOCK" --duration 2 -n 5 \
		>"$T/top.out" 2>"$T/top.err" || { cat "$T/top.err"; fail "top --collector"; }
	grep -q "^pyprof top: every process of $SOCK, " "$T/top.out" ||
		{ cat "$T/top.out"; fail "no table"; }
	timeout 60 "$PP_PYPROF" dump "$TPID" >"$T/dump.out" 2>"$T/dump.err" ||
		{ cat "$T/dump.err"; fail "dump through the collector"; }
	grep -q "^Thread $TPID \"MainThread\"" "$T/dump.out" ||
		{ cat "$T/dump.out"; fail "no main thread in the dump"; }
	collector_stop
	[[ ! -e $T/h/http.sock ]] || fail "the socket outlived the collector"
	# a directory the stranger may write: it could replace the socket
	local rc=0
	timeout 20 "$PP_COLLECTOR" --socket "$T/r.sock" --output-dir "$OUT" \
		--http "unix:$D/own/http.sock" >"$T/r.out" 2>&1 </dev/null 3>&- ||
		rc=$?
	cat "$T/r.out"
	[[ $rc == 1 ]] || fail "exit status $rc, not 1"
	grep -qF "$D/own" "$T/r.out" || fail "the directory is not named"
	[[ ! -e $D/own/http.sock ]] || fail "a socket was made there"
}

@test "39.8 top --collector and dump send nothing to a TCP port another user took while the collector was down: one line naming the address and both uids" {
	local port
	collector_start --http 127.0.0.1:0
	wait_for_line "$SOCK.http-addr" . 10
	port=$(sed -n 's/^127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$SOCK.http-addr")
	[[ -n $port ]] || fail "http-addr: $(cat "$SOCK.http-addr")"
	our_python sleeper
	# the collector dies (its files stay); the stranger takes its port
	collector_kill
	cp "$PP_ROOT/tests/lib/squatter.py" "$D/"
	chmod 0644 "$D/squatter.py"
	(exec setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/python3 "$D/squatter.py" --tcp "127.0.0.1:$port" \
		"$D/own/heard") >"$T/squatter.out" 2>&1 </dev/null 3>&- &
	KIDS+=("$!")
	wait_for_line "$D/own/heard" '^ready$' 20
	refused_line "$PP_PYPROF" top --collector "$SOCK" --duration 1
	grep -qF "http://127.0.0.1:$port/ is served by uid 65534, not by uid 0 " "$T/ref.err"
	refused_line "$PP_PYPROF" dump "$TPID"
	grep -qF "http://127.0.0.1:$port/ is served by uid 65534, not by uid 0 " "$T/ref.err"
	sleep 1.2 # the squatter counts a connection after 1 s of silence
	if grep -q '^conn [1-9]' "$D/own/heard"; then
		cat "$D/own/heard"
		fail "the stranger heard from pyprof"
	fi
}
