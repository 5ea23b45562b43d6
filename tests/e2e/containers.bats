#!/usr/bin/env bats
# containers.bats - the layout docs/containers.md describes, with Linux
# namespaces standing in for containers: the collector in a mount and pid
# namespace of its own, the application (library preloaded) in another,
# sharing nothing but one directory, the "volume" that holds the socket,
# mounted at /run/pyprof in both; each sees a private /tmp and its own pids
# (the program is pid 1's child in its namespace). The program's profile
# comes out of the collector's side, named by the pid the program has in
# its own namespace. Root (unshare); skipped otherwise. About 3 s.

load ../lib/common

setup() {
	common_setup
	[[ $(id -u) == 0 ]] || skip "needs root for unshare --mount --pid"
	PY=$(pyprof_pythons | awk '$3 != "missing" { print $2; exit }')
	BIN=$T/bin
	mkdir -p "$BIN"
	cp "$PP_COLLECTOR" "$PP_LIB" "$BIN/"
}

teardown() {
	[[ -n ${CPID:-} ]] && pkill -KILL -P "$CPID" 2>/dev/null
	common_teardown
}

# in_container VOLUME DATA CMD...: CMD in new mount and pid namespaces,
# with /proc of its own, VOLUME mounted at /run/pyprof, DATA (if not -) at
# /mnt, pyprof's programs at /opt (copied to $BIN: a tree cloned under the
# host's /tmp would be hidden by the next mount), and then a private /tmp
# (the volumes live under the host's /tmp).
# It execs unshare: `in_container ... &` gives unshare's pid in $!, and
# its one child is CMD.
in_container() {
	local vol=$1 data=$2
	shift 2
	exec unshare --mount --pid --fork --mount-proc --propagation private bash -c '
		set -e
		mount -t tmpfs none /run
		mkdir -p /run/pyprof
		mount --bind "$1" /run/pyprof
		[[ $2 == - ]] || mount --bind "$2" /mnt
		mount --bind "$3" /opt
		mount -t tmpfs none /tmp
		shift 3
		exec "$@"' container "$vol" "$data" "$BIN" "$@"
}

@test "containers: the collector and the application in separate mount and pid namespaces share only the socket's volume" {
	local vol=$T/volume out=$T/profiles-volume f
	mkdir -p "$vol" "$out"
	chmod 0700 "$vol"
	in_container "$vol" "$out" /opt/pyprof-collector --socket /run/pyprof/collector.sock \
		--output-dir /mnt >"$T/collector.log" 2>&1 3>&- &
	CPID=$!
	for ((i = 0; i < 100; i++)); do [[ -S $vol/collector.sock ]] && break; sleep 0.05; done
	[[ -S $vol/collector.sock ]] || fail "no socket in the volume: $(cat "$T/collector.log")"
	# the application's container: the library and the variables, nothing else
	(in_container "$vol" - env LD_PRELOAD=/opt/libpyprof.so PYPROF_SOCKET=/run/pyprof/collector.sock \
		"$PY" -c 'import os, time
print("pid in its namespace: %d" % os.getpid())
t = time.process_time() if hasattr(time, "process_time") else time.clock()
while (time.process_time() if hasattr(time, "process_time") else time.clock()) - t < 0.4: pass
print("/tmp holds %d entries" % len(os.listdir("/tmp")))') >"$T/app.out" 2>&1 3>&- ||
		fail "the application failed: $(cat "$T/app.out")"
	cat "$T/app.out"
	grep -qx 'pid in its namespace: 1' "$T/app.out" || fail "not in a pid namespace of its own"
	grep -qx '/tmp holds 0 entries' "$T/app.out" || fail "the application's /tmp is not private"
	# SIGTERM to the collector (unshare's child, pid 1 in its namespace,
	# as `docker stop` would send it); unshare exits with its status
	local cp
	cp=$(pgrep -P "$CPID")
	kill -TERM "$cp"
	for ((i = 0; i < 100; i++)); do kill -0 "$cp" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$cp" 2>/dev/null ||
		fail "the collector, pid 1 of its namespace, did not stop on SIGTERM within 10 s"
	wait "$CPID" || fail "the collector exited non-zero: $(cat "$T/collector.log")"
	CPID=
	cat "$T/collector.log"
	f=$(ls "$out"/*.1.*.pb.gz 2>/dev/null) || fail "no profile of pid 1: $(ls "$out")"
	go tool pprof -symbolize=none -raw "$f" >"$T/raw" 2>/dev/null
	awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ / { s += $1 } /^Locations/ { on = 0 } END { exit !(s >= 20) }' "$T/raw" ||
		fail "too few samples of 0.4 s of CPU: $(head -20 "$T/raw")"
}
