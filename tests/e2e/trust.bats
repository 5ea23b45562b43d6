#!/usr/bin/env bats
# trust.bats - who may hear whom over the collector's socket, with other
# local users about: the library talks only to a collector of its own user
# (or root, or the one it is told to trust), in a directory no one else
# controls; the collector refuses a socket directory that is a symbolic
# link or another user's, and says what to do; a client of another user
# (--allow-user) speaks for its own pid only.
#
# Other users are played with setpriv (no accounts created): nobody
# (65534) as the stranger, a free uid as the victim where the default
# socket path (/tmp/pyprof-<uid>) must be the victim's own. What they run
# is copied where they can read it; Debian's python3 stands in for the
# victim's interpreter there (pyenv's live under /root).

load ../lib/common

setup() {
	common_setup
	[[ -f $PP_LIB ]] || fail "$PP_LIB not built"
	[[ $(id -u) == 0 ]] || skip "needs root to act as other users"
	command -v setpriv >/dev/null || skip "no setpriv"
	[[ -x /usr/bin/python3 ]] || skip "no /usr/bin/python3"
	SQ_PID=
	VDIR=
	# What the other users run, readable by them.
	D=$(mktemp -d /tmp/pyprof-trust.XXXXXX)
	cp "$PP_LIB" "$PP_TARGETS/outputs.py" "$ROOT_HELPERS/squatter.py" \
		"$ROOT_HELPERS/wire_client.py" "$ROOT_HELPERS/forger.py" "$D/"
	chmod 0755 "$D"
	chmod 0644 "$D"/*
	# The stranger's log, which only it writes.
	mkdir "$D/sq"
	chown 65534:65534 "$D/sq"
}

ROOT_HELPERS=$(cd "$(dirname "$BATS_TEST_FILENAME")/../lib" && pwd)

teardown() {
	if [[ -n $SQ_PID ]]; then
		kill "$SQ_PID" 2>/dev/null || true
		wait "$SQ_PID" 2>/dev/null || true
	fi
	[[ -z $VDIR ]] || rm -rf "$VDIR" "$VDIR.real"
	rm -rf "${D:-/nonexistent}"
	common_teardown
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# squat SOCKET [ARGS]: the stranger listens at SOCKET (squatter.py). The
# background job execs it, so that $! is the squatter itself (a function
# run in the background is a subshell whose kill left the squatter
# running after the tests).
squat() {
	(exec setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/python3 "$D/squatter.py" "$1" "$D/sq/log" "${@:2}") \
		>"$T/squatter.out" 2>&1 </dev/null 3>&- &
	SQ_PID=$!
	wait_for_line "$D/sq/log" '^ready$'
}

# heard: how many bytes the stranger received, over all connections
# (each ends within 1 s of silence; the library has exited by then).
heard() {
	sleep 1.2
	awk '$1 == "conn" { n += $2 } END { print n + 0 }' "$D/sq/log"
}

# one_added_line NAME REGEX: $T/NAME.err is $T/plain.err plus exactly one
# line, which matches REGEX; stdout and exit status are the plain run's.
one_added_line() {
	local added
	assert_same_file "$T/plain.out" "$T/$1.out" "stdout"
	assert_eq "$PLAIN_RC" "$RC" "exit status"
	diff "$T/plain.err" "$T/$1.err" >"$T/$1.diff" || true
	assert_eq 0 "$(grep -c '^<' "$T/$1.diff" || true)" "lines of the program's stderr lost"
	added=$(sed -n 's/^> //p' "$T/$1.diff")
	assert_eq 1 "$(grep -c '^>' "$T/$1.diff" || true)" "lines added to stderr ($added)"
	grep -qE "$2" <<<"$added" || fail "the added line does not match '$2': $added"
}

# ---- the library --------------------------------------------------------------

# A free uid, so that /tmp/pyprof-<uid> is nobody's yet.
free_uid() {
	local u
	for u in $(shuf -i 20000-59999 -n 50); do
		if ! getent passwd "$u" >/dev/null && [[ ! -e /tmp/pyprof-$u && ! -e /tmp/pyprof-$u.real ]]; then
			echo "$u"
			return 0
		fi
	done
	fail "no free uid"
}

@test "2.1 a stranger's /tmp/pyprof-<uid>/ hears nothing: one line, the program unchanged" {
	local v how
	for how in 0777 symlink; do
		rm -f "$D/sq/log"
		v=$(free_uid)
		VDIR=/tmp/pyprof-$v
		as_victim() {
			setpriv --reuid="$v" --regid="$v" --clear-groups \
				env -u XDG_RUNTIME_DIR "$@"
		}
		if [[ $how == symlink ]]; then
			squat "$VDIR/collector.sock" --make-dir 0777 --symlink
		else
			squat "$VDIR/collector.sock" --make-dir 0777
		fi
		run_capture plain as_victim /usr/bin/python3 "$D/outputs.py" exit3 0.3
		PLAIN_RC=$RC
		run_capture victim as_victim LD_PRELOAD="$D/libpyprof.so" \
			/usr/bin/python3 "$D/outputs.py" exit3 0.3
		assert_eq 0 "$(heard)" "$how: bytes the stranger received"
		one_added_line victim "^pyprof: not connecting to the collector socket $VDIR/collector.sock: .*profiling is off"
		if [[ $how == symlink ]]; then
			grep -q "its directory $VDIR is a symbolic link" "$T/victim.err" || fail "$how: $(cat "$T/victim.err")"
		else
			grep -q "its directory $VDIR belongs to uid 65534, not to you (uid $v) or root; if that user runs your collector (the package's: pyprof), set PYPROF_COLLECTOR_USER=65534; else remove that directory" "$T/victim.err" ||
				fail "$how: $(cat "$T/victim.err")"
		fi
		kill "$SQ_PID"
		wait "$SQ_PID" 2>/dev/null || true
		SQ_PID=
		rm -rf "$VDIR" "$VDIR.real"
	done
}

# 2.2, 2.5 and 2.3: the library decides before it reads any interpreter
# (its constructor), so three stand for all: 2.7, Debian's static 3.11
# and 3.15 (make check's time: docs/testing.md, "What runs where").
@test "2.2 a stranger listening at PYPROF_SOCKET hears nothing unless PYPROF_COLLECTOR_USER names it" {
	# A directory like /tmp: root's, sticky, open to all.
	chmod 1777 "$SOCKDIR"
	squat "$SOCK"
	check() {
		run_capture plain "$2" "$PP_TARGETS/outputs.py" exit3 0.3
		PLAIN_RC=$RC
		: >"$D/sq/log"
		run_capture refused env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			"$2" "$PP_TARGETS/outputs.py" exit3 0.3
		assert_eq 0 "$(heard)" "bytes the stranger received"
		one_added_line refused "^pyprof: not connecting to the collector socket $SOCK: the collector there runs as uid 65534, not as you \(uid 0\) or root; if you trust that user, set PYPROF_COLLECTOR_USER=65534; profiling is off$"
		# Trusted by name: the HELLO goes out, the program still unchanged.
		: >"$D/sq/log"
		run_capture trusted env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
			PYPROF_COLLECTOR_USER=nobody "$2" "$PP_TARGETS/outputs.py" exit3 0.3
		assert_same_file "$T/plain.out" "$T/trusted.out" "stdout"
		assert_same_file "$T/plain.err" "$T/trusted.err" "stderr"
		assert_eq "$PLAIN_RC" "$RC" "exit status"
		(($(heard) > 0)) || fail "with PYPROF_COLLECTOR_USER=nobody nothing was sent: $(cat "$D/sq/log")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 system 3.15) for_each_python check
}

@test "2.5 a process pyprof does not profile tells a stranger nothing either (not even its refusal)" {
	# The refusal notice names the executable: it must pass the same
	# checks as the agent's HELLO. The compiled table withheld stands in
	# for an unsupported interpreter.
	chmod 1777 "$SOCKDIR"
	squat "$SOCK"
	check() {
		run_capture plain "$2" "$PP_TARGETS/outputs.py" exit3 0.3
		PLAIN_RC=$RC
		: >"$D/sq/log"
		PYPROF_TEST_WITHHOLD_TABLE=1 run_capture refused env LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" "$2" "$PP_TARGETS/outputs.py" exit3 0.3
		assert_eq 0 "$(heard)" "bytes the stranger received"
		one_added_line refused "profiling is off$"
		# Trusted by name: the refusal goes out.
		: >"$D/sq/log"
		PYPROF_TEST_WITHHOLD_TABLE=1 run_capture trusted env LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" PYPROF_COLLECTOR_USER=nobody \
			"$2" "$PP_TARGETS/outputs.py" exit3 0.3
		assert_eq "$PLAIN_RC" "$RC" "exit status"
		(($(heard) > 0)) || fail "with PYPROF_COLLECTOR_USER=nobody no refusal was sent: $(cat "$D/sq/log")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 system 3.15) for_each_python check
}

@test "2.3 a refused process's forked children say nothing more: one line in all" {
	chmod 1777 "$SOCKDIR"
	squat "$SOCK"
	# Busy, then idle while the library meets the stranger, then three
	# children that work a little (Python 2.7 too: no process_time).
	cat >"$T/forks.py" <<-'EOF'
		import os, time
		def burn(s):
		    end = time.time() + s
		    while time.time() < end:
		        pass
		burn(0.2)
		time.sleep(0.5)
		kids = []
		for i in range(3):
		    pid = os.fork()
		    if pid == 0:
		        burn(0.3)
		        os._exit(0)
		    kids.append(pid)
		for k in kids:
		    os.waitpid(k, 0)
		print("done")
	EOF
	check() {
		: >"$D/sq/log"
		run_capture forks env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" "$2" "$T/forks.py"
		assert_eq 0 "$(heard)" "bytes the stranger received"
		assert_eq 0 "$RC" "exit status"
		assert_eq "done" "$(cat "$T/forks.out")" "stdout"
		assert_eq 1 "$(grep -c 'not connecting to the collector socket' "$T/forks.err" || true)" \
			"refusal lines from the parent and its children: $(cat "$T/forks.err")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 system 3.15) for_each_python check
}

@test "2.4 PYPROF_COLLECTOR_USER=no-such-user: one line naming it, the program unchanged" {
	run_capture plain /usr/bin/python3 "$PP_TARGETS/outputs.py" exit3 0.05
	PLAIN_RC=$RC
	run_capture bad env LD_PRELOAD="$PP_LIB" PYPROF_SOCKET="$SOCK" \
		PYPROF_COLLECTOR_USER=no-such-user /usr/bin/python3 "$PP_TARGETS/outputs.py" exit3 0.05
	one_added_line bad '^pyprof: PYPROF_COLLECTOR_USER="no-such-user" is not valid: expected a numeric uid or a user name in /etc/passwd; profiling is off$'
}

# ---- the collector's socket directory -------------------------------------------

@test "3.1 the collector refuses a socket directory that is a symbolic link, and leaves its target alone" {
	local rc=0
	mkdir -m 0700 "$T/target"
	ln -s "$T/target" "$SOCKDIR/link"
	timeout 10 "$PP_COLLECTOR" --socket "$SOCKDIR/link/c.sock" --output-dir "$OUT" \
		--allow-user nobody >"$T/collector.log" 2>&1 </dev/null 3>&- || rc=$?
	assert_eq 1 "$rc" "exit status"
	grep -qF "refusing socket directory $SOCKDIR/link: it is a symbolic link; remove it" "$T/collector.log" ||
		fail "log: $(cat "$T/collector.log")"
	assert_eq 700 "$(stat -c %a "$T/target")" "mode of the link's target"
	[[ -z $(ls -A "$T/target") ]] || fail "something was created in the target: $(ls -A "$T/target")"
}

@test "3.2 the collector refuses another user's socket directory and says what to do" {
	local rc=0
	mkdir -m 0777 "$SOCKDIR/theirs"
	chown 65534:65534 "$SOCKDIR/theirs"
	timeout 10 "$PP_COLLECTOR" --socket "$SOCKDIR/theirs/c.sock" --output-dir "$OUT" \
		>"$T/collector.log" 2>&1 </dev/null 3>&- || rc=$?
	assert_eq 1 "$rc" "exit status"
	grep -qE "refusing socket directory $SOCKDIR/theirs: owned by uid 65534, not by us \(uid 0\) or root: .*; remove it .*--socket PATH \(and PYPROF_SOCKET=PATH for the programs\), or set XDG_RUNTIME_DIR" "$T/collector.log" ||
		fail "log: $(cat "$T/collector.log")"
	[[ ! -e $SOCKDIR/theirs/c.sock ]] || fail "bound in their directory"
}

@test "3.3 a collector creates its missing socket directory 0700, and 0711 with --allow-user" {
	SOCK=$SOCKDIR/a/b/c.sock
	collector_start
	assert_eq 700 "$(stat -c %a "$SOCKDIR/a/b")" "mode of the socket directory"
	collector_stop
	rm -rf "$SOCKDIR/a"
	collector_start --allow-user nobody
	assert_eq 711 "$(stat -c %a "$SOCKDIR/a/b")" "mode of the shared socket directory"
	assert_eq 666 "$(stat -c %a "$SOCK")" "mode of the shared socket"
	collector_stop
}

# ---- the pid in HELLO -----------------------------------------------------------

@test "6.1 a client of another user cannot claim another process's pid; its own pid, and ours any pid, still work" {
	local pid
	collector_start --allow-user nobody
	# nobody claims pid 5901: refused, nothing recorded for it.
	as_nobody /usr/bin/python3 "$D/wire_client.py" good --socket "$SOCK" \
		--pid 5901 --samples 10 --comm claimer >"$T/c1.out" 2>&1 </dev/null 3>&- || true
	wait_for_line "$T/collector.log" "refused client pid [0-9]+ \(uid 65534\): its HELLO claims pid 5901"
	# nobody with its own pid: served.
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 \
		"$D/wire_client.py" good --socket "$SOCK" --samples 10 \
		--comm honest >"$T/c2.out" 2>&1 </dev/null 3>&- &
	pid=$!
	wait "$pid" || fail "the honest client failed: $(cat "$T/c2.out")"
	wait_profile "$pid" >/dev/null
	# Our own user may send a pid that is not the socket's (a process in
	# another pid namespace).
	"$PP_HOST_PYTHON" "$D/wire_client.py" good --socket "$SOCK" \
		--pid 5902 --samples 10 --comm inns >"$T/c3.out" 2>&1 </dev/null 3>&-
	wait_profile 5902 >/dev/null
	collector_stop
	! compgen -G "$OUT/*.5901.*.pb.gz" >/dev/null || fail "a profile for the claimed pid 5901: $(ls "$OUT")"
	assert_eq 1 "$(grep -c 'its HELLO claims pid 5901' "$T/collector.log")" "refusal lines at warn"
}

@test "3.4 the collector refuses its own socket directory when others may write it (not sticky)" {
	local rc=0
	mkdir -m 0777 "$SOCKDIR/open"
	chmod 0777 "$SOCKDIR/open"
	timeout 10 "$PP_COLLECTOR" --socket "$SOCKDIR/open/c.sock" --output-dir "$OUT" \
		>"$T/collector.log" 2>&1 </dev/null 3>&- || rc=$?
	assert_eq 1 "$rc" "exit status"
	assert_eq 1 "$(wc -l <"$T/collector.log")" "lines: $(cat "$T/collector.log")"
	grep -qF "refusing socket directory $SOCKDIR/open: writable by others (mode 0777); remove it" \
		"$T/collector.log" || fail "log: $(cat "$T/collector.log")"
	[[ ! -e $SOCKDIR/open/c.sock ]] || fail "bound in a world-writable directory"
	# Sticky, as /tmp: others cannot remove or replace our socket there.
	chmod 1777 "$SOCKDIR/open"
	SOCK=$SOCKDIR/open/c.sock
	collector_start
	collector_stop
}

# ---- pyprof ctl: the same checks as the library ----------------------------------

@test "7.1 pyprof ctl sends nothing to another user's listener: at the default path, in a sticky directory; PYPROF_COLLECTOR_USER trusts it" {
	cp "$PP_PYPROF" "$D/"
	mkdir -p -m 0755 "$D/xdg/pyprof"
	chown 65534:65534 "$D/xdg/pyprof"
	squat "$D/xdg/pyprof/collector.sock"
	run env -u PYPROF_SOCKET XDG_RUNTIME_DIR="$D/xdg" "$PP_PYPROF" ctl status
	((status == 1)) || fail "status $status: $output"
	assert_eq 1 "$(wc -l <<<"$output")" "lines: $output"
	[[ $output == *"refusing the collector socket's directory $D/xdg/pyprof: owned by uid 65534, not by us (uid 0) or root"*"PYPROF_COLLECTOR_USER"* ]] ||
		fail "$output"
	assert_eq 0 "$(heard)" "bytes the stranger received"
	kill "$SQ_PID"; wait "$SQ_PID" 2>/dev/null || true
	SQ_PID=
	# A directory that is fine (root's, sticky), a listener that is not.
	mkdir -m 1777 "$D/tmp"
	chmod 1777 "$D/tmp"
	: >"$D/sq/log"
	squat "$D/tmp/c.sock"
	run "$PP_PYPROF" ctl status --socket "$D/tmp/c.sock"
	((status == 1)) || fail "status $status: $output"
	[[ $output == *"refusing the listener on $D/tmp/c.sock: it runs as uid 65534, not as us (uid 0) or root"*"PYPROF_COLLECTOR_USER=65534"* ]] ||
		fail "$output"
	assert_eq 0 "$(heard)" "bytes the stranger received"
	# Trusted by name: the request goes out.
	run env PYPROF_COLLECTOR_USER=nobody "$PP_PYPROF" ctl status --socket "$D/tmp/c.sock"
	(($(heard) > 0)) || fail "nothing sent to a trusted collector: $output"
}

@test "7.2 pyprof ctl run by an allowed user that the collector refuses says why" {
	cp "$PP_PYPROF" "$D/"
	chmod 0755 "$D/pyprof"
	collector_start --allow-user nobody
	run as_nobody "$D/pyprof" ctl status --socket "$SOCK"
	((status == 1)) || fail "status $status: $output"
	[[ $output == *"the collector (uid 0) refused the request: it takes control requests from its own user and root only, not from uid 65534"* ]] ||
		fail "$output"
	[[ $output != *"older than this pyprof"* ]] || fail "$output"
	collector_stop
}
# A connection speaks for the process that opened it (SO_PEERCRED at
# accept), while that process runs. Before, a client of another user could
# let a fork child connect and exit, keep the socket and claim the child's
# pid; once a root process got that pid, its profile, command line and
# `pyprof ctl` line were the forger's. Played by tests/lib/forger.py.
@test "6.2 a connection whose opener has exited cannot speak for its pid, and ends when its opener exits" {
	local child
	collector_start --allow-user nobody
	# The child connected and exited before HELLO: refused.
	as_nobody /usr/bin/python3 "$D/forger.py" "$SOCK" dead >"$T/f1.out" 2>&1 </dev/null 3>&-
	cat "$T/f1.out"
	child=$(awk '$1 == "child" {print $2}' "$T/f1.out")
	grep -qx closed-by-collector "$T/f1.out" || fail "the forger was not closed"
	grep -q "refused client pid $child (uid 65534): the process that opened the connection has exited and another holds it" \
		"$T/collector.log" || { cat "$T/collector.log"; fail "no refusal line"; }
	# HELLO while the child lived: served, until the child exits.
	as_nobody /usr/bin/python3 "$D/forger.py" "$SOCK" later >"$T/f2.out" 2>&1 </dev/null 3>&-
	cat "$T/f2.out"
	child=$(awk '$1 == "child" {print $2}' "$T/f2.out")
	grep -qx closed-by-collector "$T/f2.out" || fail "the forger kept its connection after its opener exited"
	grep -q "pid $child (uid 65534): its process has exited but its connection stayed open; closing it" \
		"$T/collector.log" || { cat "$T/collector.log"; fail "no closing line"; }
	# A short process that sent everything and exited before the
	# collector read its HELLO (the collector stopped meanwhile) left no
	# one holding its socket: it is served.
	kill -STOP "$COLLECTOR_PID"
	setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 \
		"$D/wire_client.py" good --socket "$SOCK" --samples 10 \
		--comm quick >"$T/c4.out" 2>&1 </dev/null 3>&- &
	child=$!
	wait "$child" || { kill -CONT "$COLLECTOR_PID"; fail "the quick client failed: $(cat "$T/c4.out")"; }
	kill -CONT "$COLLECTOR_PID"
	wait_profile "$child" >/dev/null || fail "the quick client's profile was not written"
	collector_stop
}

# One pid, one live connection, whoever the users: a connection whose
# opener has exited while another process holds it is closed when a
# process says HELLO with that pid (a reused pid), even one of our own
# user's (which the sweep of 6.2 leaves alone: ours may speak for pids of
# other namespaces). The forger runs as root here, so only that rule
# closes it.
@test "6.3 a HELLO for a pid held by a connection whose opener has exited closes that connection" {
	local child
	collector_start
	"$PP_HOST_PYTHON" "$D/forger.py" "$SOCK" dead >"$T/f.out" 2>&1 </dev/null 3>&- &
	local fpid=$!
	wait_for_line "$T/f.out" '^child [0-9]+$'
	child=$(awk '$1 == "child" {print $2}' "$T/f.out")
	wait_for_line "$T/collector.log" "pid $child connected: .*\(forged\)"
	"$PP_HOST_PYTHON" "$D/wire_client.py" good --socket "$SOCK" --pid "$child" \
		--samples 10 --comm real >"$T/real.out" 2>&1 </dev/null 3>&-
	wait "$fpid" || true
	cat "$T/f.out"
	grep -qx closed-by-collector "$T/f.out" || fail "the stale connection was not closed"
	grep -q "pid $child: an older connection (opened by uid 0) spoke for this pid after its process had exited; closing it" \
		"$T/collector.log" || { cat "$T/collector.log"; fail "no closing line"; }
	collector_stop
}

# Each client costs a few log lines (connected, disconnected, its
# profile): a user let in with --allow-user made 20,000 lines (2.6 MB) in
# 0.8 s. The lines its clients cause are limited per user (a burst of 100,
# then 10 a second), and one line says how many were suppressed.
@test "8.1 a flood of clients of another user cannot flood the collector's log: one line counts what was suppressed" {
	local ours theirs
	collector_start --allow-user nobody
	as_nobody /usr/bin/python3 - "$SOCK" "$D" <<'PY' 3>&- || fail "the flood failed"
import os, sys, time
sys.path.insert(0, sys.argv[2])
import wire_client as w
for i in range(1500):
    s = w.connect(sys.argv[1])
    s.sendall(w.hello(os.getpid(), time.time_ns(), time.monotonic_ns(),
                      comm="flood"))
    s.close()
PY
	# our own user's clients are not limited
	for i in 1 2 3; do
		"$PP_HOST_PYTHON" "$D/wire_client.py" good --socket "$SOCK" \
			--pid $((7100 + i)) --samples 5 --comm ours >/dev/null 2>&1 </dev/null 3>&-
	done
	wait_for_line "$T/collector.log" "uid 65534: [0-9]+ log lines about its clients suppressed" 5
	collector_stop
	theirs=$(wc -l <"$T/collector.log")
	ours=$(grep -c "pid 710[123] connected" "$T/collector.log" || true)
	n=$(sed -n 's/.*uid 65534: \([0-9]*\) log lines about its clients suppressed.*/\1/p' "$T/collector.log" | paste -sd+ | bc)
	echo "   $theirs lines in the log, $n said suppressed; $ours of our 3 clients' lines"
	((theirs <= 300)) || fail "$theirs lines in the log"
	((n >= 1500)) || fail "only $n lines said suppressed"
	assert_eq 3 "$ours" "our own clients' lines"
}

# ---- each member's share of a shared collector -----------------------------------

# hog N BYTES [ARGS]: the stranger's one process opens N connections to
# $SOCK, says HELLO on each (with ARGS arguments of 1,000 bytes in its
# command line, default 2) and defines about BYTES bytes of strings on
# each (in strings of 60,000 bytes), then writes one line per connection,
# "open" or
# "closed" (by the collector), then "ready"; then, every half second, the
# number still open ("still N"), holding them until killed.
hog() {
	cat >"$D/hog.py" <<'PY'
import os, socket, sys, time
sys.path.insert(0, sys.argv[2])
import wire_client as w

def is_open(s):
    try:
        s.setblocking(False)
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False

n, size = int(sys.argv[3]), int(sys.argv[4])
n_args = int(sys.argv[5]) if len(sys.argv) > 5 else 0
args = ["python3", "app.py"] + ["%04d" % i + "a" * 996 for i in range(n_args)]
start, mono = time.time_ns(), time.monotonic_ns()
socks = []
for i in range(n):
    s = w.connect(sys.argv[1])
    try:
        s.sendall(w.hello(os.getpid(), start, mono, comm="hog", args=args))
        for k in range(1, size // 60000 + 1):
            s.sendall(w.string(k, b"%08d" % (i * 100000 + k) + b"x" * 59992))
    except OSError:
        pass
    socks.append(s)
    time.sleep(0.1)
time.sleep(0.5)
for s in socks:
    print("open" if is_open(s) else "closed", flush=True)
print("ready", flush=True)
while True:
    time.sleep(0.5)
    print("still %d" % sum(is_open(s) for s in socks), flush=True)
PY
	chmod 0644 "$D/hog.py"
	(exec setpriv --reuid=65534 --regid=65534 --clear-groups \
		/usr/bin/python3 "$D/hog.py" "$SOCK" "$D" "$1" "$2" "${3:-0}") \
		>"$T/hog.out" 2>&1 </dev/null 3>&- &
	SQ_PID=$!
	wait_for_line "$T/hog.out" '^ready$' 30
}

# hog_holds N: the stranger's connections come down to N open (a loaded
# machine's collector may take a while to close the others), and stay.
hog_holds() {
	wait_for_line "$T/hog.out" "^still $1\$" 15 || {
		cat "$T/hog.out"
		fail "the stranger does not hold $1 connections"
	}
	sleep 1.1
	assert_eq "still $1" "$(tail -n 1 "$T/hog.out")" "the stranger's connections open"
}

# ours PID: our own program (a well-behaved client) is served: it
# connects and its profile is written.
ours() {
	"$PP_HOST_PYTHON" "$D/wire_client.py" good --socket "$SOCK" \
		--pid "$1" --samples 5 --comm ours >/dev/null 2>&1 </dev/null 3>&-
	wait_for_line "$T/collector.log" "pid $1 connected" 5 ||
		fail "our client pid $1 was not served"
	wait_profile "$1" 5 >/dev/null || fail "no profile for our client pid $1"
}

@test "39.6 one user's process cannot hold every connection of a shared collector: its share, one line; another user's program still served" {
	collector_start --allow-user nobody --max-clients 8 --max-clients-per-user 4
	hog 8 0
	cat "$T/hog.out"
	hog_holds 4
	ours 7301
	ours 7302
	collector_stop
	grep -E "client pid $SQ_PID of uid 65534 turned away: its user has its share of the connections \(--max-clients-per-user 4\)" "$T/collector.log" ||
		fail "no line names the share"
	assert_eq 1 "$(grep -c "of uid 65534 turned away" "$T/collector.log")" "lines about the refusals"
}

@test "39.6 one process's share of the connections: --max-clients-per-process" {
	collector_start --allow-user nobody --max-clients 16 --max-clients-per-process 3
	hog 6 0
	hog_holds 3
	ours 7303
	collector_stop
	grep -qE "client pid $SQ_PID of uid 65534 turned away: its process has its share of the connections \(--max-clients-per-process 3\)" "$T/collector.log" ||
		fail "no line names the share"
}

@test "39.6 the definitions all clients hold are bounded, and one user's: a client past a bound is closed, one line; the others untouched" {
	collector_start --allow-user nobody --max-memory 8M --max-memory-per-user 3M
	# 2 MiB each: the first fits in the stranger's 3 MiB, the others not
	hog 3 2000000
	cat "$T/hog.out"
	hog_holds 1
	assert_eq open "$(grep -m1 -E '^(open|closed)$' "$T/hog.out")" "the stranger's first connection"
	grep -qE "uid 65534's clients together would pass --max-memory-per-user \(3 MiB\)" "$T/collector.log" ||
		fail "no line names --max-memory-per-user"
	# Our own user has no share of its own, but the bound on all: 7 MiB
	# more would pass 8 MiB.
	"$PP_HOST_PYTHON" - "$SOCK" "$D" <<'PY' 3>&- >"$T/big.out" || fail "the big client failed"
import os, socket, sys, time
sys.path.insert(0, sys.argv[2])
import wire_client as w
s = w.connect(sys.argv[1])
try:
    s.sendall(w.hello(os.getpid(), time.time_ns(), time.monotonic_ns(), comm="big"))
    for k in range(1, 7 * 2**20 // 60000 + 1):
        s.sendall(w.string(k, b"%08d" % k + b"y" * 59992))
    s.settimeout(5)
    print("closed" if s.recv(1) == b"" else "open")
except OSError:
    print("closed")
PY
	assert_eq closed "$(cat "$T/big.out")" "the client past --max-memory"
	grep -qE "the definitions of all clients together would pass --max-memory \(8 MiB\)" "$T/collector.log" ||
		fail "no line names --max-memory"
	ours 7304
	hog_holds 1
	collector_stop
}

@test "39.6 the HTTP index page shows at most 4 KiB of a member's command line, with a link to the whole" {
	collector_start --allow-user nobody --http 127.0.0.1:0
	local port tok size
	port=$(http_port "$T/collector.log")
	tok=$(cat "$SOCK.http-token")
	# 900 arguments of 1,000 bytes: 900 KB of command line
	hog 1 0 900
	hog_holds 1
	curl -sf "http://pyprof:$tok@127.0.0.1:$port/debug/pprof/" >"$T/index.html" ||
		fail "no index page"
	size=$(wc -c <"$T/index.html")
	echo "   index page: $size bytes"
	((size < 16384)) || fail "the index page is $size bytes"
	grep -q "data-pid=\"$SQ_PID\"" "$T/index.html" || fail "the stranger's process is not listed"
	grep -q "&hellip; <a href=\"cmdline?pid=$SQ_PID\">(902 arguments)</a>" "$T/index.html" ||
		fail "no ellipsis and link where the command line is cut"
	curl -sf "http://pyprof:$tok@127.0.0.1:$port/debug/pprof/cmdline?pid=$SQ_PID" >"$T/cmdline" ||
		fail "no cmdline"
	(($(wc -c <"$T/cmdline") > 900000)) || fail "cmdline?pid= does not hold the whole command line"
	collector_stop
}
