# tests/lib/common.bash - helpers shared by the end-to-end tests (bats).
#
# Every tests/e2e/*.bats file starts with `load ../lib/common` and calls
# common_setup / common_teardown from its setup / teardown. What it gives:
#
#   paths      PP_ROOT PP_BUILD PP_LIB PP_COLLECTOR PP_PYPROF PP_TARGETS
#              (PYPROF_BUILD=dir selects another build, e.g. build-asan)
#   per test   T (the test's own temp dir), SOCK (a short socket path),
#              OUT (the collector's --output-dir)
#   collector  collector_start [ARGS], collector_stop, collector_kill,
#              http_port LOG (the port a --http collector logged)
#   running    profiled CMD... (LD_PRELOAD + PYPROF_SOCKET), run_capture
#              NAME CMD... (stdout/stderr to files, sets RC and PID),
#              start_in_pgrp (for Ctrl-C), wait_for_line
#   profiles   wait_profile PID, pprof_raw/-traces/-top FILE, shares ...
#              (tests/lib/pprof_shares.py), cached_profile
#   pythons    for_each_python FN: runs FN NAME EXE KIND for every
#              interpreter in tests/lib/pythons.sh, reports each, and fails
#              if any failed or is missing (and notes the time each took
#              in $PYPROF_TEST_TIMES, for tests/run's report)
#   checks     fail, assert_same_file, marker_line
#
# The tests run as the bats shell does (set -e); helpers return non-zero on
# failure after printing why, so a failure shows its cause in bats' output.
# Anything started in the background closes fd 3 (3>&-): bats waits for
# every holder of its TAP descriptor before it finishes a test.

PP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PP_BUILD=${PYPROF_BUILD:-$PP_ROOT/build}
case $PP_BUILD in /*) ;; *) PP_BUILD=$PP_ROOT/$PP_BUILD ;; esac
PP_LIB=$PP_BUILD/libpyprof.so
PP_COLLECTOR=$PP_BUILD/pyprof-collector
PP_PYPROF=$PP_BUILD/pyprof
PP_TARGETS=$PP_ROOT/tests/targets
PP_SHARES=$PP_ROOT/tests/lib/pprof_shares.py
# Helpers run on Debian's python3, never under LD_PRELOAD.
if [[ -x /usr/bin/python3 ]]; then
	PP_HOST_PYTHON=/usr/bin/python3
else
	PP_HOST_PYTHON=python3
fi

# shellcheck source=tests/lib/pythons.sh
source "$PP_ROOT/tests/lib/pythons.sh"

# ---- per-test setup ----------------------------------------------------

# The busy lock: systime.bats holds it while its busy loops run
# (busy_start to busy_stop), and a test whose measure needs the machine's
# CPUs for itself takes it around its runs (quiet), so that the two lanes
# of tests/run never put one beside the other (threads.bats' wall-mode
# thirds failed their "machine too busy" guard twice when systime.bats'
# busy-host test ran beside them).
PP_BUSY_LOCK=${TMPDIR:-/tmp}/pyprof-tests-busy.$(id -u).lock

# quiet CMD...: CMD (a function or a command) run holding the busy lock.
# A function runs under set -e as it would without quiet: in a subshell
# whose status is read after it ends (a function called as `f || ...`
# runs with set -e ignored throughout, and a failed check in its middle
# went unnoticed).
quiet() {
	local fd rc e=
	[[ $- == *e* ]] && e=1
	exec {fd}>>"$PP_BUSY_LOCK"
	flock -x "$fd"
	set +e
	(
		set -e
		"$@"
	)
	rc=$?
	[[ -n $e ]] && set -e
	flock -u "$fd"
	exec {fd}>&-
	return "$rc"
}

common_setup() {
	local v
	T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
	# sun_path holds 108 bytes: keep sockets out of bats' deep tmp dirs.
	SOCKDIR=$(mktemp -d /tmp/pyprof-test.XXXXXX)
	SOCK=$SOCKDIR/c.sock
	export PP_LIB PP_SOCK=$SOCK
	PATH=$PP_ROOT/tests/lib/bin:$PATH
	OUT=$T/profiles
	mkdir -p "$OUT"
	COLLECTOR_PID=
	# The caller's own PYPROF_* settings must not leak into the tests.
	for v in $(compgen -e PYPROF_); do
		case $v in PYPROF_TEST_* | PYPROF_BUILD) ;; *) unset "$v" ;; esac
	done
	ulimit -c 0 # crash tests must not leave cores
	export LC_ALL=C
}

common_teardown() {
	if [[ -n ${COLLECTOR_PID:-} ]]; then
		collector_kill
	fi
	rm -rf "${SOCKDIR:-/nonexistent}"
}

# ---- checks ------------------------------------------------------------

fail() {
	echo "FAIL: $*" >&2
	return 1
}

# assert_same_file EXPECTED ACTUAL WHAT: byte-identical, or a diff.
assert_same_file() {
	if ! cmp -s "$1" "$2"; then
		echo "FAIL: $3 differs (- without the library, + with it):" >&2
		diff -u "$1" "$2" | head -40 >&2 || true
		return 1
	fi
}

# assert_eq EXPECTED ACTUAL WHAT
assert_eq() {
	if [[ "$1" != "$2" ]]; then
		echo "FAIL: $3: expected '$1', got '$2'" >&2
		return 1
	fi
}

# marker_line FILE TAG: the number of the line tagged "# @TAG".
marker_line() {
	local n
	n=$(grep -n -E "# @$2\$" "$1" | cut -d: -f1)
	if [[ -z $n || $n == *$'\n'* ]]; then
		fail "marker @$2 not found exactly once in $1"
		return 1
	fi
	echo "$n"
}

# ---- the collector -----------------------------------------------------

# collector_start [ARGS]: a collector on $SOCK writing into $OUT; waits
# until the socket exists. Its log is $T/collector.log.
collector_start() {
	local i
	[[ -x $PP_COLLECTOR ]] || fail "$PP_COLLECTOR not built"
	"$PP_COLLECTOR" --socket "$SOCK" --output-dir "$OUT" "$@" \
		>>"$T/collector.log" 2>&1 3>&- &
	COLLECTOR_PID=$!
	for ((i = 0; i < 200; i++)); do
		[[ -S $SOCK ]] && return 0
		if ! kill -0 "$COLLECTOR_PID" 2>/dev/null; then
			wait "$COLLECTOR_PID" || true
			COLLECTOR_PID=
			cat "$T/collector.log" >&2
			fail "the collector exited before creating $SOCK"
			return 1
		fi
		sleep 0.05
	done
	fail "the collector did not create $SOCK within 10 s"
}

# collector_stop: SIGTERM (it writes what it holds), wait, return its
# status.
collector_stop() {
	local pid=$COLLECTOR_PID rc=0
	[[ -n $pid ]] || return 0
	COLLECTOR_PID=
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	if ((rc != 0)); then
		echo "collector exited with status $rc; its log:" >&2
		cat "$T/collector.log" >&2
	fi
	return $rc
}

# collector_kill: SIGKILL, no questions.
collector_kill() {
	local pid=$COLLECTOR_PID
	[[ -n $pid ]] || return 0
	COLLECTOR_PID=
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# ---- running programs --------------------------------------------------

# profiled CMD...: CMD with the library preloaded, streaming to $SOCK. It
# is tests/lib/bin/profiled (on PATH), which execs CMD, so that $! of
# `profiled CMD &` is CMD's pid. Other PYPROF_* variables come from the
# caller (`PYPROF_HZ=250 profiled ...`).

# run_capture NAME CMD...: runs CMD with stdout in $T/NAME.out, stderr in
# $T/NAME.err; sets RC (exit status, 128+N for signal N) and PID.
run_capture() {
	local name=$1
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null 3>&- &
	PID=$!
	RC=0
	wait "$PID" || RC=$?
}

# start_in_pgrp OUT ERR CMD...: starts CMD in the background in a process
# group of its own (PID = its pgid), as a shell with job control would, so
# that `kill -INT -- -$PID` acts like Ctrl-C on a terminal. Without job
# control bash would start it with SIGINT ignored.
start_in_pgrp() {
	local out=$1 err=$2
	shift 2
	set -m
	"$@" >"$out" 2>"$err" </dev/null 3>&- &
	PID=$!
	set +m
}

# wait_for_line FILE REGEX [SECONDS]: until a line of FILE matches.
wait_for_line() {
	local i secs=${3:-10}
	for ((i = 0; i < secs * 20; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "no line matching '$2' in $1 after ${secs}s"
}

# ---- profiles ----------------------------------------------------------

# wait_profile PID [SECONDS]: prints the path of the profile the collector
# wrote for PID (<comm>.<pid>.<time>.pb.gz in $OUT), waiting up to SECONDS
# (default 15) for it to appear.
wait_profile() {
	local pid=$1 secs=${2:-15} i f
	for ((i = 0; i < secs * 20; i++)); do
		for f in "$OUT"/*."$pid".*.pb.gz; do
			if [[ -f $f ]]; then
				echo "$f"
				return 0
			fi
		done
		sleep 0.05
	done
	echo "no profile for pid $pid in $OUT after ${secs}s; it holds:" >&2
	ls -la "$OUT" >&2
	[[ -f $T/collector.log ]] && tail -20 "$T/collector.log" >&2
	return 1
}

# go tool pprof views. -symbolize=none: our profiles carry their own names.
pprof_raw() { go tool pprof -symbolize=none -raw "$1"; }
pprof_traces() { go tool pprof -symbolize=none -traces "$1"; }
pprof_top() { go tool pprof -symbolize=none -top "$1"; }

# shares SUBCOMMAND ARGS...: tests/lib/pprof_shares.py (see its header).
shares() { "$PP_HOST_PYTHON" "$PP_SHARES" "$@"; }

# cached_profile KEY CMD...: runs CMD (a python program) under the
# library once per bats file for each KEY, and prints the path of its
# profile; later tests in the same file reuse it. The program's stdout is
# kept beside it as PROFILE.stdout. Needs a running collector: call
# collector_start in the test (or setup) before for_each_python, whose
# subshells cannot start one that teardown would know about.
cached_profile() {
	local key=$1 dir=$BATS_FILE_TMPDIR/cache f
	shift
	mkdir -p "$dir"
	if [[ -f $dir/$key.error ]]; then
		cat "$dir/$key.error" >&2
		return 1
	fi
	if [[ ! -f $dir/$key.pb.gz ]]; then
		if ! profile_once "$dir/$key" "$@" 2>"$dir/$key.error"; then
			cat "$dir/$key.error" >&2
			return 1
		fi
		rm -f "$dir/$key.error"
	fi
	echo "$dir/$key.pb.gz"
}

# profile_once PREFIX CMD...: runs CMD profiled, copies its profile to
# PREFIX.pb.gz and its stdout to PREFIX.pb.gz.stdout.
profile_once() {
	local prefix=$1 f
	shift
	if [[ -z $COLLECTOR_PID ]]; then
		echo "profile_once: start the collector first" >&2
		return 1
	fi
	run_capture once profiled "$@"
	if ((RC != 0)); then
		echo "'$*' exited with status $RC under the library; stderr:" >&2
		cat "$T/once.err" >&2
		return 1
	fi
	f=$(wait_profile "$PID") || return 1
	cp "$f" "$prefix.pb.gz"
	cp "$T/once.out" "$prefix.pb.gz.stdout"
}

# noperf_build: $NOPERF, tests/lib/noperf.c built once per file (a
# launcher whose seccomp filter makes perf_event_open fail).
noperf_build() {
	NOPERF=$BATS_FILE_TMPDIR/noperf
	if [[ ! -x $NOPERF ]]; then
		cc -O2 -o "$NOPERF" "$PP_ROOT/tests/lib/noperf.c" ||
			fail "cannot build tests/lib/noperf.c"
	fi
}

# ---- interpreters ------------------------------------------------------

# pythons_of V...: the selected interpreters whose version is one of V
# ("3.11" matches 3.11.7), as a PYPROF_TEST_PYTHONS list; the first
# selected interpreter if none of them is selected.
pythons_of() {
	local name exe kind want out=()
	while read -r name exe kind; do
		[[ $kind == missing ]] && continue
		for want in "$@"; do
			if [[ $name == "$want" || $name == "$want".* ]]; then
				out+=("$name")
			fi
		done
	done < <(pyprof_pythons)
	if ((${#out[@]} == 0)); then
		out=("$(pyprof_pythons | awk '$3 != "missing" {print $1; exit}')")
	fi
	echo "${out[*]}"
}

# for_each_python FN [ARGS]: calls FN NAME EXE KIND [ARGS] for every
# interpreter selected by PYPROF_TEST_PYTHONS, each in a subshell with
# set -e, so one interpreter's failure does not hide the others'. Fails if
# any call failed or any requested interpreter is missing.
for_each_python() {
	local fn=$1 name exe kind rc bad=() n=0 outer=${COLLECTOR_PID:-} t0
	shift
	while read -r name exe kind; do
		n=$((n + 1))
		echo "== $name ($kind) $exe"
		if [[ $kind == missing ]]; then
			echo "   interpreter $name not found" \
				"(PYPROF_TEST_PYTHONS='${PYPROF_TEST_PYTHONS:-all}')"
			bad+=("$name:missing")
			continue
		fi
		t0=$EPOCHREALTIME
		set +e
		(
			set -e
			# A collector this subshell started dies with it. $outer is
			# expanded now: the trap runs after the functions have
			# returned, when for_each_python's locals are gone.
			trap "if [[ -n \${COLLECTOR_PID:-} && \$COLLECTOR_PID != '$outer' ]]; then collector_kill; fi" EXIT
			"$fn" "$name" "$exe" "$kind" "$@"
		)
		rc=$?
		set -e
		# tests/run's report sums these per interpreter.
		if [[ -n ${PYPROF_TEST_TIMES:-} ]]; then
			echo "$name $(awk "BEGIN { print $EPOCHREALTIME - $t0 }")" \
				"$(basename "${BATS_TEST_FILENAME:-?}")" >>"$PYPROF_TEST_TIMES"
		fi
		if ((rc != 0)); then
			echo "   -> FAILED on $name"
			bad+=("$name")
		fi
	done < <(pyprof_pythons)
	if ((n == 0)); then
		fail "no interpreter selected"
		return 1
	fi
	if ((${#bad[@]})); then
		fail "failed for: ${bad[*]}"
		return 1
	fi
}

# python_major_minor EXE: "3.11", "2.7".
python_major_minor() {
	"$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

# http_port LOG: the port the collector logged it serves HTTP on.
http_port() {
	local i p
	for ((i = 0; i < 200; i++)); do
		p=$(sed -n 's|.*http: serving /debug/pprof/ on http://[^ ]*:\([0-9]*\)/.*|\1|p' "$1" | head -1)
		if [[ -n $p ]]; then
			echo "$p"
			return 0
		fi
		sleep 0.05
	done
	cat "$1" >&2
	fail "no HTTP port in $1"
}
