#!/usr/bin/env bats
# record.bats - `pyprof record`: runs the command with a private collector,
# exits with the command's status, writes the profile, prints one summary
# line, survives Ctrl-C, and reports its own failures with distinct exit
# codes (125 pyprof, 126 not executable, 127 not found). The exit status
# and the profile's contents are checked on every interpreter in
# tests/lib/pythons.sh; what is pyprof's own business (-o, signals, --hz,
# an installed copy) on 2.7 and 3.11 shared and static.

load ../lib/common

setup() {
	common_setup
	SUMMARY_RE='^pyprof: wrote .* \([0-9]+ samples?, [0-9]+ process(es)?, [0-9]+ dropped\)$'
}

teardown() {
	common_teardown
}

@test "pyprof record exits with the command's status and prints one summary line" {
	check() {
		local exe=$2 rc_without
		run_capture plain "$exe" "$PP_TARGETS/outputs.py" exit3 0.5
		rc_without=$RC
		run_capture rec "$PP_PYPROF" record -o "$T/p.pb.gz" -- \
			"$exe" "$PP_TARGETS/outputs.py" exit3 0.5
		cat "$T/rec.err"
		assert_eq "$rc_without" "$RC" "exit status"
		assert_same_file "$T/plain.out" "$T/rec.out" "stdout"
		# stderr: the program's, then exactly one line of ours.
		head -n -1 "$T/rec.err" >"$T/rec.err.program"
		assert_same_file "$T/plain.err" "$T/rec.err.program" "the program's stderr"
		tail -1 "$T/rec.err" | grep -qE "^pyprof: wrote $T/p.pb.gz \([0-9]+ samples?, 1 process, [0-9]+ dropped\)\$" ||
			fail "last line is not the summary: $(tail -1 "$T/rec.err")"
		[[ -s $T/p.pb.gz ]] || fail "no profile at $T/p.pb.gz"
	}
	for_each_python check
}

@test "the profile pyprof record writes names the program's functions and lines" {
	check() {
		local exe=$2 calls=$PP_TARGETS/calls.py fn
		run_capture rec "$PP_PYPROF" record -o "$T/calls.pb.gz" -- \
			"$exe" "$calls" 1
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status"
		pprof_raw "$T/calls.pb.gz" >"$T/raw" || fail "go tool pprof -raw failed"
		shares funcs "$T/raw" | tee "$T/funcs"
		for fn in outer middle inner; do
			grep -qE "  $fn $calls:$(marker_line "$calls" "def_$fn")\$" "$T/funcs" ||
				fail "$fn missing or without its file and def line"
		done
		shares expect-line "$T/raw" middle "$(marker_line "$calls" middle_call)" \
			--min 0 --min-share 0.5
	}
	for_each_python check
}

@test "pyprof record writes the file named by -o relative to the current directory" {
	check() {
		mkdir -p "$T/cwd"
		(cd "$T/cwd" && "$PP_PYPROF" record -o rel.pb.gz "$2" \
			"$PP_TARGETS/calls.py" 0.3 >"$T/rec.out" 2>"$T/rec.err") ||
			fail "status $?: $(cat "$T/rec.err")"
		[[ -s $T/cwd/rel.pb.gz ]] || fail "no $T/cwd/rel.pb.gz"
		grep -q '^pyprof: wrote rel.pb.gz ' "$T/rec.err" ||
			fail "summary does not name rel.pb.gz: $(cat "$T/rec.err")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 system) for_each_python check
}

@test "Ctrl-C stops the command and pyprof still writes the profile" {
	check() {
		local exe=$2 want
		start_in_pgrp "$T/rec.out" "$T/rec.err" \
			"$PP_PYPROF" record -o "$T/int.pb.gz" -- "$exe" "$PP_TARGETS/spin.py" 30
		wait_for_line "$T/rec.out" '^spinning$' 15
		sleep 1
		# What a terminal does on Ctrl-C: SIGINT to the foreground group.
		kill -INT -- "-$PID"
		RC=0
		wait "$PID" || RC=$?
		cat "$T/rec.out" "$T/rec.err"
		# Python 3.8+ dies by SIGINT after KeyboardInterrupt; older ones
		# exit 1.
		case $(python_major_minor "$exe") in
		2.* | 3.[0-7]) want=1 ;;
		*) want=130 ;;
		esac
		assert_eq "$want" "$RC" "exit status"
		grep -q KeyboardInterrupt "$T/rec.err" || fail "no KeyboardInterrupt"
		grep -qE "$SUMMARY_RE" "$T/rec.err" || fail "no summary line"
		pprof_raw "$T/int.pb.gz" >"$T/raw" || fail "profile unreadable"
		shares funcs "$T/raw" | grep -q '  spin ' || fail "spin not in the profile"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 system) for_each_python check
}

@test "SIGTERM to pyprof reaches the command and the profile is still written" {
	check() {
		local exe=$2
		"$PP_PYPROF" record -o "$T/term.pb.gz" -- "$exe" "$PP_TARGETS/spin.py" 30 \
			>"$T/rec.out" 2>"$T/rec.err" </dev/null 3>&- &
		PID=$!
		wait_for_line "$T/rec.out" '^spinning$' 15
		sleep 0.5
		kill -TERM "$PID"
		RC=0
		wait "$PID" || RC=$?
		cat "$T/rec.err"
		assert_eq 143 "$RC" "exit status (128 + SIGTERM)"
		grep -qE "$SUMMARY_RE" "$T/rec.err" || fail "no summary line"
		pprof_raw "$T/term.pb.gz" >/dev/null || fail "profile unreadable"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 system) for_each_python check
}

@test "pyprof record --hz sets the sampling period" {
	check() {
		run_capture rec "$PP_PYPROF" record --hz 200 -o "$T/hz.pb.gz" -- \
			"$2" "$PP_TARGETS/calls.py" 0.5
		assert_eq 0 "$RC" "exit status"
		pprof_raw "$T/hz.pb.gz" >"$T/raw"
		grep -qx 'Period: 5000000' "$T/raw" ||
			fail "period is not 5 ms: $(grep '^Period' "$T/raw")"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 system) for_each_python check
}

@test "an installed pyprof finds the library in PREFIX/lib" {
	mkdir -p "$T/prefix/bin" "$T/prefix/lib"
	cp "$PP_PYPROF" "$PP_COLLECTOR" "$T/prefix/bin/"
	cp "$PP_LIB" "$T/prefix/lib/"
	check() {
		run_capture rec "$T/prefix/bin/pyprof" record -o "$T/inst.pb.gz" -- \
			"$2" "$PP_TARGETS/calls.py" 0.3
		cat "$T/rec.err"
		assert_eq 0 "$RC" "exit status"
		grep -qE "$SUMMARY_RE" "$T/rec.err" || fail "no summary line"
		grep -q ', 1 process,' "$T/rec.err" || fail "the program did not report"
	}
	PYPROF_TEST_PYTHONS=$(pythons_of 2.7 3.11 system) for_each_python check
}

@test "pyprof record keeps LD_PRELOAD entries that were already set" {
	local extra
	extra=$(ldd /bin/ls | awk '/libc\.so/ { print $3 }')
	LD_PRELOAD=$extra run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- \
		sh -c 'echo "$LD_PRELOAD"'
	assert_eq "$PP_LIB $extra" "$(cat "$T/rec.out")" "LD_PRELOAD in the command"
}

@test "pyprof record passes the socket and options to the command's environment" {
	run_capture rec "$PP_PYPROF" record --hz 250 --mode cpu --max-depth 64 \
		-o "$T/x.pb.gz" -- sh -c 'echo "$PYPROF_HZ $PYPROF_MODE $PYPROF_MAX_DEPTH"; test -S "$PYPROF_SOCKET"'
	assert_eq 0 "$RC" "status (is PYPROF_SOCKET a socket?)"
	assert_eq "250 cpu 64" "$(cat "$T/rec.out")" "PYPROF_* in the command"
}

@test "pyprof record exits 128+N when the command is killed by signal N" {
	run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- sh -c 'kill -TERM $$'
	cat "$T/rec.err"
	assert_eq 143 "$RC" "exit status"
}

@test "pyprof record exits 127 when the command is not found" {
	run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- no-such-command-pyprof
	cat "$T/rec.err"
	assert_eq 127 "$RC" "exit status"
	grep -q 'no-such-command-pyprof' "$T/rec.err" || fail "the error does not name the command"
	[[ ! -e $T/x.pb.gz ]] || fail "a profile was written"
}

@test "pyprof record exits 126 when the command cannot be executed" {
	printf 'not a program\n' >"$T/noexec"
	chmod 0644 "$T/noexec"
	run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- "$T/noexec"
	cat "$T/rec.err"
	assert_eq 126 "$RC" "exit status"
}

@test "a bad option value: exit 125 and one line naming the option" {
	local opt val
	while read -r opt val; do
		run_capture rec "$PP_PYPROF" record "$opt" "$val" -- touch "$T/ran"
		cat "$T/rec.err"
		assert_eq 125 "$RC" "exit status for $opt $val"
		assert_eq 1 "$(wc -l <"$T/rec.err")" "lines on stderr for $opt $val"
		grep -q -- "$opt" "$T/rec.err" || fail "the line does not name $opt"
		[[ ! -e $T/ran ]] || fail "the command ran despite $opt $val"
	done <<-'LIST'
		--hz abc
		--hz 0
		--hz 100000
		--mode bogus
		--max-depth -1
		--max-depth 0
	LIST
	run_capture rec "$PP_PYPROF" record --no-such-option -- touch "$T/ran"
	assert_eq 125 "$RC" "exit status for an unknown option"
	grep -q -- '--no-such-option' "$T/rec.err" || fail "the line does not name it"
	run_capture rec "$PP_PYPROF" record
	assert_eq 125 "$RC" "exit status without a command"
}

@test "a bad PYPROF_* value in the environment: exit 125 before anything starts, with the library's own line" {
	local var val lib_line
	while read -r var val; do
		run_capture rec env "$var=$val" "$PP_PYPROF" record -o "$T/x.pb.gz" \
			-- touch "$T/ran"
		cat "$T/rec.err"
		assert_eq 125 "$RC" "exit status for $var=$val"
		assert_eq 1 "$(wc -l <"$T/rec.err")" "lines on stderr for $var=$val"
		[[ ! -e $T/ran ]] || fail "the command ran despite $var=$val"
		[[ ! -e $T/x.pb.gz ]] || fail "a profile was written despite $var=$val"
		# the same words as the library's own line, which says it stays off
		run_capture lib env "$var=$val" LD_PRELOAD="$PP_LIB" \
			PYPROF_SOCKET="$SOCK" "$PP_HOST_PYTHON" -c pass
		lib_line=$(sed -n 's/^pyprof: \(.*\); profiling is off$/\1/p' "$T/lib.err")
		[[ -n $lib_line ]] || fail "the library printed no line for $var=$val"
		grep -qF -- "$lib_line" "$T/rec.err" ||
			fail "record's line is not the library's: '$lib_line'"
	done <<-'LIST'
		PYPROF_HZ abc
		PYPROF_MODE bogus
		PYPROF_LOG loud
		PYPROF_START maybe
		PYPROF_TOGGLE_SIGNAL KILL
		PYPROF_HEAP_RATE 2G
		PYPROF_MAX_DEPTH 0
	LIST
	# an option replaces the variable: that one is not checked
	run_capture rec env PYPROF_HZ=abc "$PP_PYPROF" record --hz 50 \
		-o "$T/x.pb.gz" -- touch "$T/ran"
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status with --hz over a bad PYPROF_HZ"
	[[ -e $T/ran ]] || fail "the command did not run"
}

@test "pyprof record exits 125 when libpyprof.so is not beside it" {
	mkdir -p "$T/alone"
	cp "$PP_PYPROF" "$T/alone/"
	run_capture rec "$T/alone/pyprof" record -o "$T/x.pb.gz" -- touch "$T/ran"
	cat "$T/rec.err"
	assert_eq 125 "$RC" "exit status"
	grep -q 'libpyprof.so not found' "$T/rec.err" || fail "the error does not say why"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "pyprof record exits 125 when it cannot make its temporary directory" {
	TMPDIR=$T/no/such/dir run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- touch "$T/ran"
	cat "$T/rec.err"
	assert_eq 125 "$RC" "exit status"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "pyprof record leaves no temporary files behind" {
	mkdir -p "$T/tmp"
	TMPDIR=$T/tmp run_capture rec "$PP_PYPROF" record -o "$T/x.pb.gz" -- true
	assert_eq 0 "$RC" "exit status"
	assert_eq "" "$(ls -A "$T/tmp")" "files left in TMPDIR"
}

@test "a profile that cannot be written where asked goes to the current directory, and a successful command exits 125" {
	mkdir -p "$T/gone" "$T/cwd"
	cd "$T/cwd"
	run_capture rec "$PP_PYPROF" record --heap --heap-rate 4096 \
		-o "$T/gone/x.pb.gz" -- sh -c "rmdir '$T/gone'; exec '$PP_HOST_PYTHON' '$PP_TARGETS/spin.py' 0.3"
	cat "$T/rec.err"
	assert_eq 125 "$RC" "exit status"
	local f="$T/cwd/pyprof.$PID.x.pb.gz" h="$T/cwd/pyprof.$PID.x.heap.pb.gz"
	grep -qF "cannot write $T/gone/x.pb.gz: No such file or directory; written to $f instead" \
		"$T/rec.err" || fail "not said where the profile went"
	grep -qF "cannot write $T/gone/x.heap.pb.gz: No such file or directory; written to $h instead" \
		"$T/rec.err" || fail "not said where the heap profile went"
	grep -qE "^pyprof: wrote $f \([1-9][0-9]* samples?" "$T/rec.err" || fail "no summary naming it"
	pprof_raw "$f" | grep -q 'spin' || fail "the profile in $f lacks the program's samples"
	go tool pprof -raw "$h" >/dev/null || fail "the heap profile in $h does not parse"
}

@test "when the current directory cannot take it either, the profile goes to TMPDIR" {
	mkdir -p "$T/gone" "$T/tmp"
	cd /proc
	TMPDIR=$T/tmp run_capture rec "$PP_PYPROF" record -o "$T/gone/x.pb.gz" -- \
		sh -c "rmdir '$T/gone'; exec '$PP_HOST_PYTHON' -c pass"
	cat "$T/rec.err"
	assert_eq 125 "$RC" "exit status"
	grep -qF "written to $T/tmp/pyprof.$PID.x.pb.gz instead" "$T/rec.err" ||
		fail "not in TMPDIR"
	go tool pprof -raw "$T/tmp/pyprof.$PID.x.pb.gz" >/dev/null || fail "does not parse"
}

@test "an output that cannot be written is refused before the command runs, with the system's reason" {
	touch "$T/app.py"
	local o why
	while IFS='|' read -r o why; do
		run_capture rec "$PP_PYPROF" record -o "$o" -- touch "$T/ran"
		cat "$T/rec.err"
		assert_eq 125 "$RC" "exit status for -o $o"
		[[ ! -e $T/ran ]] || fail "the command ran despite -o $o"
		assert_eq "pyprof: error: cannot write $o: $why" "$(cat "$T/rec.err")" "message"
	done <<-LIST
		$T/app.py/x.pb.gz|Not a directory
		/proc/x.pb.gz|No such file or directory
		$T/missing/x.pb.gz|No such file or directory
	LIST
	[[ -z $(ls -A "$T" | grep pyprof-probe) ]] || fail "probe files left behind"
}

@test "a profile that cannot be written keeps a failing command's status" {
	mkdir -p "$T/gone" "$T/cwd"
	cd "$T/cwd" # where the profile goes instead
	run_capture rec "$PP_PYPROF" record -o "$T/gone/x.pb.gz" -- \
		sh -c "rmdir '$T/gone'; exit 4"
	cat "$T/rec.err"
	assert_eq 4 "$RC" "exit status"
	grep -qF "written to $T/cwd/pyprof.$PID.x.pb.gz instead" "$T/rec.err" ||
		fail "not said where the profile went"
}

@test "pyprof --help, pyprof record --help and pyprof --version succeed" {
	run_capture h "$PP_PYPROF" --help
	assert_eq 0 "$RC" "pyprof --help"
	grep -q '^Usage: pyprof' "$T/h.out" || fail "no usage"
	grep -q 'record' "$T/h.out" || fail "record not listed"
	run_capture rh "$PP_PYPROF" record --help
	assert_eq 0 "$RC" "pyprof record --help"
	grep -q '^Usage: pyprof record' "$T/rh.out" || fail "no record usage"
	run_capture v "$PP_PYPROF" --version
	assert_eq 0 "$RC" "pyprof --version"
	grep -qE '^pyprof [0-9]+\.[0-9]+' "$T/v.out" || fail "no version"
	run_capture u "$PP_PYPROF" frobnicate
	assert_eq 125 "$RC" "unknown subcommand"
}

@test "pyprof record writes its profile 0600 whatever the umask (it holds the command line)" {
	(umask 000 && "$PP_PYPROF" record -o "$T/p.pb.gz" -- "$PP_HOST_PYTHON" -c 'pass') \
		>"$T/rec.out" 2>"$T/rec.err" || fail "$(cat "$T/rec.err")"
	[[ $(stat -c %a "$T/p.pb.gz") == 600 ]] || fail "$(stat -c '%a %n' "$T/p.pb.gz")"
	(umask 000 && "$PP_PYPROF" record --format svg -o "$T/p.svg" -- "$PP_HOST_PYTHON" -c 'pass') \
		>"$T/rec.out" 2>"$T/rec.err" || fail "$(cat "$T/rec.err")"
	[[ $(stat -c %a "$T/p.svg") == 600 ]] || fail "$(stat -c '%a %n' "$T/p.svg")"
}

# The daemon outlives record's grace for processes still connected (2 s),
# which multiprocessing's helpers do not need (short.bats).
@test "a command that leaves a daemon running: record ends with it and says how to profile a daemon" {
	run_capture rec "$PP_PYPROF" record -o "$T/d.pb.gz" -- "$PP_HOST_PYTHON" -c "
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 30
        while time.time() < end and not os.path.exists('$T/stop'):
            time.sleep(0.01)
        os._exit(0)
    os._exit(0)
time.sleep(0.3)
"
	touch "$T/stop"
	cat "$T/rec.err"
	assert_eq 0 "$RC" "exit status"
	grep -qE '^pyprof: warning: 1 profiled process was still running when .* exited \(a daemon\?\).*run pyprof-collector and start the daemon with LD_PRELOAD=' \
		"$T/rec.err" || fail "no word about the daemon"
	# a command whose processes all end: nothing said
	run_capture rec2 "$PP_PYPROF" record -o "$T/d.pb.gz" -- "$PP_HOST_PYTHON" -c pass
	if grep -q daemon "$T/rec2.err"; then
		fail "a daemon reported for a command that left none"
	fi
}
