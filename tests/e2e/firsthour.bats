#!/usr/bin/env bats
# firsthour.bats - what a new user meets in the first hour (issue 31):
# pyprof-collector answers --version and -V as pyprof does; `pyprof ctl
# --socket` takes a path relative to the current directory; the commands
# pyprof(1) lists are the ones `pyprof --help` lists (help included);
# --hz counts per second of wall time in wall mode, as the pages now say;
# the manual pages describe sampling past the kernel's tick as the
# library does it (design.md, "Past the tick"); `pyprof top --by opcode`
# keeps its columns in line whatever the opcode's name.
#
# One interpreter (the first selected) where one is needed: about 5 s.

load ../lib/common

setup() {
	common_setup
	export MAN_DISABLE_SECCOMP=1
	PY=$(pyprof_pythons | awk '$3 != "missing" { print $2; exit }')
}

teardown() {
	common_teardown
}

render() {
	LC_ALL=C MANWIDTH=200 man -l "$1" 2>/dev/null | col -b
}

@test "pyprof-collector --version and -V print the version pyprof -V prints" {
	local want opt
	want=$("$PP_PYPROF" -V | awk '{ print $2 }')
	[[ $want =~ ^[0-9]+\.[0-9]+ ]] || fail "pyprof -V gave no version: $want"
	for opt in --version -V; do
		run "$PP_COLLECTOR" "$opt"
		assert_eq 0 "$status" "pyprof-collector $opt exit status"
		assert_eq "pyprof-collector $want" "$output" "pyprof-collector $opt"
	done
	# and it is documented where the options are
	"$PP_COLLECTOR" --help | grep -qE -- '^ +-V, --version ' ||
		fail "pyprof-collector --help does not list -V, --version"
}

@test "pyprof ctl --socket takes a path relative to the current directory" {
	[[ -n $PY ]] || fail "no interpreter selected"
	collector_start
	PYPROF_START=off profiled "$PY" -c 'import time; time.sleep(20)' 3>&- &
	local app=$! i
	# From the socket's directory, by its bare name.
	for ((i = 0; i < 200; i++)); do
		(cd "$SOCKDIR" && "$PP_PYPROF" ctl status --socket c.sock) >"$T/st" 2>&1 || true
		grep -q "^pid=$app " "$T/st" && break
		sleep 0.05
	done
	grep -q "^pid=$app .*status=ok" "$T/st" || fail "ctl status --socket c.sock: $(cat "$T/st")"
	# From a directory beside it, through ../
	(cd "$SOCKDIR/.." && "$PP_PYPROF" ctl status --socket "$(basename "$SOCKDIR")/c.sock") >"$T/st2" 2>&1 ||
		fail "ctl status with DIR/c.sock: $(cat "$T/st2")"
	grep -q "^pid=$app " "$T/st2" || fail "no pid line: $(cat "$T/st2")"
	kill "$app"
	wait "$app" || true
	# Too long once made absolute: one line naming the option, exit 2.
	local long
	long=$(printf 'd%.0s' {1..60})/$(printf 's%.0s' {1..60}).sock
	run "$PP_PYPROF" ctl status --socket "$long"
	assert_eq 2 "$status" "a relative path over 108 bytes"
	[[ $output == *"--socket"*"108 bytes"* ]] || fail "no clear reason: $output"
	(($(echo "$output" | wc -l) == 1)) || fail "more than one line: $output"
	collector_stop
}

@test "pyprof --help lists every command pyprof(1) lists, help included" {
	local c listed
	"$PP_PYPROF" --help >"$T/help"
	listed=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$T/help")
	# SYNOPSIS lines: .B pyprof NAME (lib\-path: a groff hyphen)
	for c in $(sed -n '/^\.SH SYNOPSIS/,/^\.SH /s/^\.B pyprof \([a-z][a-z\\-]*\)$/\1/p' "$PP_ROOT/man/pyprof.1" | tr -d '\\'); do
		grep -qx "$c" <<<"$listed" || fail "pyprof(1) lists '$c', pyprof --help does not"
	done
	grep -qx help <<<"$listed" || fail "pyprof --help does not list help"
	run "$PP_PYPROF" help top
	assert_eq 0 "$status" "pyprof help top"
	[[ $output == *"--by"* ]] || fail "pyprof help top is not top's options"
}

@test "--hz in wall mode is per second of wall time, as pyprof(1) and libpyprof(7) say" {
	[[ -n $PY ]] || fail "no interpreter selected"
	run_capture rec "$PP_PYPROF" record --mode wall --hz 50 -o "$T/w.pb.gz" -- \
		"$PY" -c 'import time; time.sleep(1.5)'
	assert_eq 0 "$RC" "record: $(cat "$T/rec.err")"
	# one thread asleep for 1.5 s of wall time and almost no CPU: ~75
	# samples at 50 per second of wall time, ~0 per second of CPU time
	local n
	n=$(go tool pprof -symbolize=none -raw "$T/w.pb.gz" 2>/dev/null |
		awk '/^Samples:/ { on = 1; next } on && /^ *[0-9]+ / { s += $1 } /^Locations/ { on = 0 } END { print s + 0 }')
	((n >= 55 && n <= 95)) || fail "$n samples in 1.5 s at --hz 50 in wall mode"
	render "$PP_ROOT/man/pyprof.1" | tr -s ' \t\n' ' ' >"$T/p1"
	render "$PP_ROOT/man/libpyprof.7" | tr -s ' \t\n' ' ' >"$T/l7"
	grep -q 'of wall time in wall mode' "$T/p1" || fail "pyprof(1): --hz per second of what?"
	grep -q 'of wall time in wall mode' "$T/l7" || fail "libpyprof(7): PYPROF_HZ per second of what?"
	"$PP_PYPROF" record --help | tr -s ' \t\n' ' ' | grep -q 'of wall time in wall mode' ||
		fail "pyprof record --help: --hz per second of what?"
}

@test "the manual pages describe CPU sampling as the library does it" {
	render "$PP_ROOT/man/pyprof.1" | tr -s ' \t\n' ' ' >"$T/p1"
	render "$PP_ROOT/man/libpyprof.7" | tr -s ' \t\n' ' ' >"$T/l7"
	# In CPU mode a perf counter per thread, opened by a thread of the
	# library's in a table of its own, signals the thread at every rate;
	# where perf is refused that thread reads the threads' CPU clocks.
	grep -q "in CPU mode from a signal of a perf counter of the thread's own CPU time, at every rate" "$T/p1" ||
		fail "pyprof(1) does not say where CPU samples come from"
	grep -q "where perf is refused, from that thread, which reads every thread's CPU clock" "$T/p1" ||
		fail "pyprof(1) does not say what happens where perf is refused"
	! grep -q 'past 250 Hz, one perf counter per thread)' "$T/l7" ||
		fail "libpyprof(7) says past 250 Hz there is one perf counter per thread"
	grep -q 'in a table of its own' "$T/l7" ||
		fail "libpyprof(7) does not say where the counters are open"
}

@test "pyprof top --by opcode keeps its columns in line with long opcode names" {
	local wc="$PP_HOST_PYTHON $PP_ROOT/tests/lib/wire_client.py" f col row
	collector_start
	# 3.11: 72 is PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS (43
	# bytes), 122 BINARY_OP.
	$wc good --socket "$SOCK" --pid 6101 --samples 90 --prefix opclient \
		--opcodes 72,122,122 --pyversion 3.11.7
	f=$(wait_profile 6101)
	collector_stop
	"$PP_PYPROF" top --by opcode "$f" | tee "$T/op"
	grep -q 'PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS' "$T/op" || fail "the long name is not shown"
	# where "hottest in" starts in the header is where every row's
	# functions start, and a name is followed by a space
	col=$(awk '/hottest in/ { print index($0, "hottest in"); exit }' "$T/op")
	[[ -n $col ]] || fail "no header"
	while IFS= read -r row; do
		[[ ${row:col-2:1} == " " && ${row:col-1:8} == opclient ]] ||
			fail "column out of line at $col: '$row'"
	done < <(grep -E '(BINARY_OP|PRECALL)' "$T/op")
}

@test "pyprof-collector --config FILE: key = value lines, the command line wins, one line per bad line" {
	local wc="$PP_HOST_PYTHON $PP_ROOT/tests/lib/wire_client.py" bad
	mkdir -p "$T/from-conf" "$T/from-cmd"
	cat >"$T/c.conf" <<-EOF
		# a comment, then a blank line

		output-dir = $T/from-conf
		merge = true
		summary = $T/summary
		push-label = ignored=1
	EOF
	# push-label needs a push URL: the command line's --push-label does
	# not come into it, so the config's line is checked and refused
	run "$PP_COLLECTOR" --config "$T/c.conf" --socket "$SOCK"
	assert_eq 2 "$status" "push-label without a URL"
	[[ $output == *"--push-label goes with"* ]] || fail "$output"
	sed -i '/push-label/d' "$T/c.conf"
	# --output-dir on the command line wins over the file's; merge and
	# summary come from the file
	"$PP_COLLECTOR" --config "$T/c.conf" --socket "$SOCK" --output-dir "$T/from-cmd" \
		>"$T/collector.log" 2>&1 3>&- &
	COLLECTOR_PID=$!
	for ((i = 0; i < 100; i++)); do [[ -S $SOCK ]] && break; sleep 0.05; done
	$wc good --socket "$SOCK" --pid 6201 --samples 20 --prefix conf
	collector_stop
	ls "$T/from-cmd"/merged.*.pb.gz >/dev/null || fail "no merged profile in --output-dir: $(ls -R "$T")"
	[[ -z $(ls -A "$T/from-conf") ]] || fail "the file's output-dir was used"
	grep -q '^processes=1 samples=20 ' "$T/summary" || fail "no summary from the file's summary key"
	# bad lines: exit 2, one line naming FILE:LINE and what is wrong
	for bad in "nosuch = 1|unknown key 'nosuch'" "merge = maybe|merge is a flag: true or false, not 'maybe'" \
		"period = 0|--period wants whole seconds" "period|expected 'key = value', not 'period'" \
		"help = true|unknown key 'help'" "allow-group = no-such-group-x|--allow-group wants a group name"; do
		printf '# first\n%s\n' "${bad%%|*}" >"$T/bad.conf"
		run "$PP_COLLECTOR" --config "$T/bad.conf" --socket "$SOCK"
		assert_eq 2 "$status" "'${bad%%|*}'"
		assert_eq 1 "$(echo "$output" | wc -l)" "lines for '${bad%%|*}': $output"
		[[ $output == *"$T/bad.conf:2: error: ${bad#*|}"* ]] || fail "'${bad%%|*}': $output"
	done
	run "$PP_COLLECTOR" --config "$T/none.conf"
	assert_eq 2 "$status" "a missing file"
	[[ $output == *"--config $T/none.conf: No such file"* ]] || fail "$output"
}
