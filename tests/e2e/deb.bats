#!/usr/bin/env bats
# deb.bats - the Debian package (tools/deb, make deb) on this machine:
# dpkg -i installs the programs, the library (LD_PRELOAD=libpyprof.so by
# its bare name), the module for the system Python, the manual pages, the
# unit and its configuration, the user and group pyprof; the collector run
# as the unit says (by hand: its User, Group, RuntimeDirectory, UMask and
# ExecStart, through setpriv, which execs as runuser would not, since no
# systemd runs here; systemd-analyze verify on the unit) serves a
# process of a member of the group pyprof and refuses a non-member's,
# and serves the member, not the non-member, on the members' socket;
# dpkg -r then dpkg --purge leave nothing behind: no file, directory, user
# or group the package made.
#
# This test changes the machine (a package, users, files under /usr, /etc,
# /var/lib, /run): root only, skipped otherwise; skipped too if a package
# or a user named pyprof is there already (not ours to touch). teardown
# purges and removes its two test users whatever happened. About 10 s.

load ../lib/common

U_IN=pyproft-in   # a member of the group pyprof
U_OUT=pyproft-out # not a member

setup() {
	common_setup
	[[ $(id -u) == 0 ]] || skip "the .deb test installs a package: root only"
	dpkg -s pyprof >/dev/null 2>&1 && skip "a package pyprof is installed already"
	getent passwd pyprof >/dev/null && skip "a user pyprof exists already"
	getent group pyprof >/dev/null && skip "a group pyprof exists already"
	getent group pyprof-readers >/dev/null && skip "a group pyprof-readers exists already"
	"$PP_ROOT/tools/deb" "$PP_BUILD" "$T/dist" >"$T/deb.log" 2>&1 ||
		fail "tools/deb: $(cat "$T/deb.log")"
	DEB=$(ls "$T"/dist/pyprof_*.deb)
	COLL=
	OURS=1 # the package, user and group pyprof are this test's to remove
}

teardown() {
	[[ -n ${COLL:-} ]] && kill -KILL "$COLL" 2>/dev/null
	if [[ $(id -u) == 0 ]]; then
		dpkg -s pyprof >/dev/null 2>&1 && dpkg --purge pyprof >/dev/null 2>&1
		# what a failed purge left (a collector as pyprof, the user), so
		# that the next test does not skip for a user "already there"
		if [[ -n ${OURS:-} ]] && getent passwd pyprof >/dev/null; then
			pkill -KILL -u pyprof 2>/dev/null
			sleep 0.2
			userdel pyprof >/dev/null 2>&1
			getent group pyprof >/dev/null && groupdel pyprof >/dev/null 2>&1
		fi
		for u in "$U_IN" "$U_OUT"; do
			getent passwd "$u" >/dev/null && userdel -r "$u" >/dev/null 2>&1
		done
	fi
	common_teardown
}

# leftovers: what of the package's paths, users and groups exist.
leftovers() {
	local p
	for p in /usr/bin/pyprof /usr/bin/pyprof-collector /usr/lib/libpyprof.so \
		/usr/lib/pyprof /usr/lib/python3/dist-packages/pyprof.py \
		/usr/share/man/man1/pyprof.1.gz /usr/share/man/man7/libpyprof.7.gz \
		/lib/systemd/system/pyprof-collector.service /etc/pyprof /var/lib/pyprof \
		/run/pyprof /usr/share/doc/pyprof; do
		[[ -e $p || -L $p ]] && echo "file $p"
	done
	getent passwd pyprof >/dev/null && echo "user pyprof"
	getent group pyprof >/dev/null && echo "group pyprof"
	getent group pyprof-readers >/dev/null && echo "group pyprof-readers"
	ldconfig -p | grep -q 'libpyprof\.so ' && echo "ldconfig libpyprof.so"
	true
}

# unit_value KEY: the unit's KEY= value.
unit_value() {
	sed -n "s/^$1=//p" /lib/systemd/system/pyprof-collector.service
}

@test "the .deb installs, its collector serves the group pyprof as the unit says, and purge leaves the machine clean" {
	local before exec user rdir mode out pid_in pid_out f
	before=$(leftovers)
	[[ -z $before ]] || fail "the machine has pyprof's files already: $before"
	dpkg -i "$DEB" >"$T/install.log" 2>&1 || fail "dpkg -i: $(cat "$T/install.log")"
	for f in /usr/bin/pyprof /usr/bin/pyprof-collector /usr/lib/libpyprof.so \
		/usr/lib/python3/dist-packages/pyprof.py /usr/lib/pyprof/python/pyprof.py \
		/usr/share/man/man1/pyprof.1.gz /usr/share/man/man1/pyprof-collector.1.gz \
		/usr/share/man/man7/libpyprof.7.gz /etc/pyprof/collector.conf \
		/lib/systemd/system/pyprof-collector.service; do
		[[ -f $f ]] || fail "dpkg -i did not install $f"
	done
	getent passwd pyprof | grep -q ':/var/lib/pyprof:/usr/sbin/nologin$' || fail "no system user pyprof"
	getent group pyprof >/dev/null || fail "no group pyprof"
	getent group pyprof-readers >/dev/null || fail "no group pyprof-readers"
	assert_eq "pyprof:pyprof 751" "$(stat -c '%U:%G %a' /var/lib/pyprof)" "/var/lib/pyprof"
	/usr/bin/pyprof-collector -V | grep -q '^pyprof-collector ' || fail "pyprof-collector -V"
	assert_eq /usr/lib/libpyprof.so "$(/usr/bin/pyprof lib-path)" "pyprof lib-path"
	MAN_DISABLE_SECCOMP=1 man -w pyprof-collector | grep -q /usr/share/man/man1/ || fail "man -w"
	if command -v systemd-analyze >/dev/null; then
		systemd-analyze verify /lib/systemd/system/pyprof-collector.service 2>&1 | tee "$T/verify"
		[[ ! -s $T/verify ]] || fail "systemd-analyze verify: $(cat "$T/verify")"
	fi

	# The collector as the unit runs it: its user, runtime directory, command.
	user=$(unit_value User)
	rdir=/run/$(unit_value RuntimeDirectory)
	mode=$(unit_value RuntimeDirectoryMode)
	exec=$(unit_value ExecStart)
	assert_eq pyprof "$user" "User="
	# what the collector's clients cannot bound, the kernel does
	[[ -n $(unit_value MemoryMax) ]] || fail "no MemoryMax= in the unit"
	install -d -o "$user" -g "$(unit_value Group)" -m "$mode" "$rdir"
	(cd / && umask "$(unit_value UMask)" &&
		exec setpriv --reuid="$user" --regid="$(unit_value Group)" --init-groups -- $exec) \
		>"$T/collector.log" 2>&1 3>&- &
	COLL=$!
	for ((i = 0; i < 100; i++)); do
		[[ -S $rdir/collector.sock ]] && break
		sleep 0.1
	done
	[[ -S $rdir/collector.sock ]] || fail "no socket in $rdir: $(cat "$T/collector.log")"

	useradd --no-create-home --shell /bin/sh -G pyprof "$U_IN"
	useradd --no-create-home --shell /bin/sh "$U_OUT"
	# the members' live views (http-members): a member is served, others
	# are not
	assert_eq "unix:$rdir/members.sock 644" \
		"$(cat "$rdir/collector.sock.http-members") $(stat -c %a "$rdir/collector.sock.http-members")" \
		"collector.sock.http-members"
	(cd / && setpriv --reuid="$U_IN" --regid="$(id -g "$U_IN")" --init-groups -- \
		curl -s --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$rdir/members.sock" \
		http://localhost/debug/pprof/) >"$T/code" 2>&1
	assert_eq 200 "$(cat "$T/code")" "the member's index page on the members' socket"
	(cd / && setpriv --reuid="$U_OUT" --regid="$(id -g "$U_OUT")" --init-groups -- \
		curl -s --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$rdir/members.sock" \
		http://localhost/debug/pprof/) >"$T/code" 2>&1
	assert_eq 403 "$(cat "$T/code")" "a non-member on the members' socket"
	local prog='import pyprof, time
t = time.time()
with pyprof.labels(who="member"):
    while time.time() - t < 0.4: pass'
	for u in "$U_IN" "$U_OUT"; do
		(cd / && exec setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups -- env LD_PRELOAD=libpyprof.so \
			PYPROF_SOCKET="$rdir/collector.sock" PYPROF_COLLECTOR_USER=pyprof \
			/usr/bin/python3 -c "$prog") >"$T/$u.out" 2>&1 3>&- &
		echo $! >"$T/$u.pid"
		wait $! || fail "$u's program failed: $(cat "$T/$u.out")"
	done
	pid_in=$(cat "$T/$U_IN.pid")
	pid_out=$(cat "$T/$U_OUT.pid")
	for ((i = 0; i < 100; i++)); do
		ls /var/lib/pyprof/profiles/uid-*/python3."$pid_in".*.pb.gz >/dev/null 2>&1 && break
		sleep 0.1
	done
	kill -TERM "$COLL"
	wait "$COLL" || fail "the collector exited non-zero: $(cat "$T/collector.log")"
	COLL=
	cat "$T/collector.log"
	out=$(ls /var/lib/pyprof/profiles/*/python3*.pb.gz 2>/dev/null)
	assert_eq 1 "$(echo "$out" | grep -c .)" "profiles written (one: the member's): $out"
	[[ $out == /var/lib/pyprof/profiles/uid-$(id -u "$U_IN")/python3."$pid_in".*.pb.gz ]] || fail "not the member's: $out"
	assert_eq "pyprof-readers 640" "$(stat -c '%G %a' "$out")" "the profile's group and mode"
	# the member reads its own profile through the package's directories
	(cd / && setpriv --reuid="$U_IN" --regid="$(id -g "$U_IN")" --init-groups -- cat "$out") >/dev/null ||
		fail "the member cannot read its own profile"
	go tool pprof -tags "$out" 2>/dev/null | grep -q ': member$' || fail "the member's labels are not in $out"
	grep -q "refused client pid $pid_out: uid $(id -u "$U_OUT") is not ours" "$T/collector.log" ||
		fail "the non-member was not refused"
	grep -q 'in group' "$T/collector.log" || fail "no log line for --allow-group"

	# remove keeps the configuration and the user; purge takes everything
	dpkg -r pyprof >"$T/remove.log" 2>&1 || fail "dpkg -r: $(cat "$T/remove.log")"
	[[ -f /etc/pyprof/collector.conf && ! -e /usr/bin/pyprof ]] || fail "after dpkg -r: $(leftovers)"
	dpkg --purge pyprof >"$T/purge.log" 2>&1 || fail "dpkg --purge: $(cat "$T/purge.log")"
	assert_eq "" "$(leftovers)" "left after dpkg --purge"
}

@test "without systemd the .deb says that no collector was started and how to start one; purge while that collector runs stops it and leaves nothing" {
	[[ -d /run/systemd/system ]] && skip "systemd runs here (this test is for a machine without it)"
	dpkg -i "$DEB" >"$T/install.log" 2>&1 || fail "dpkg -i: $(cat "$T/install.log")"
	cat "$T/install.log"
	grep -q 'pyprof: systemd is not running here: no collector was started' "$T/install.log" ||
		fail "the install does not say that no collector runs"
	# the commands it gives, as a user would run them
	local cmds
	cmds=$(sed -n 's/^pyprof:   //p' "$T/install.log")
	[[ $(grep -c . <<<"$cmds") == 2 ]] || fail "not the two commands: $cmds"
	(cd / && eval "$cmds") >"$T/collector.log" 2>&1 3>&-
	for ((i = 0; i < 100; i++)); do
		[[ -S /run/pyprof/collector.sock ]] && break
		sleep 0.1
	done
	[[ -S /run/pyprof/collector.sock ]] || fail "the commands started no collector: $(cat "$T/collector.log")"
	local pid
	pid=$(pgrep -u pyprof -f "^pyprof-collector ") || fail "no collector runs as pyprof"
	# before: userdel failed while it ran, and the purge with it
	dpkg --purge pyprof >"$T/purge.log" 2>&1 || fail "dpkg --purge: $(cat "$T/purge.log")"
	cat "$T/purge.log"
	grep -q "stopped the collector running as user pyprof (pid $pid)" "$T/purge.log" ||
		fail "the purge does not say it stopped the collector"
	[[ ! -d /proc/$pid ]] || fail "the collector still runs"
	assert_eq "" "$(leftovers)" "left after dpkg --purge"
}
