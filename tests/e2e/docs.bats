#!/usr/bin/env bats
# docs.bats - the documentation keeps up with the programs: the man pages
# (man/) render with man-db without a warning, every option the programs
# print in --help is in their man page, every PYPROF_* variable the
# library reads is in libpyprof(7), `make install` puts the pages where
# man finds them, and the links of README.md and docs/ lead to files that
# exist. An option or variable added without its documentation fails here.
#
# Runs the built programs (build/pyprof, build/pyprof-collector) for their
# --help, man(1) from man-db and groff (make test-deps), and make install into a
# temporary DESTDIR. No interpreter is needed.

load ../lib/common

setup() {
	common_setup
	MAN=$PP_ROOT/man
	# man-db's seccomp sandbox cannot start in some containers; the
	# rendering and its warnings are the same without it.
	export MAN_DISABLE_SECCOMP=1
}

teardown() {
	common_teardown
}

# render PAGE: the page as text (ASCII, no hyphenation of long lines),
# on stdout; man's warnings on stderr.
render() {
	LC_ALL=C MANWIDTH=200 man --warnings -l "$1"
}

# help_options: the options (-x, --long-name) named in a --help text on
# stdin, one per line.
help_options() {
	grep -oE -- '(^|[^A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*' |
		sed -E 's/^[^-]+//' | sort -u
}

# check_options PAGE HELPFILE: every option of HELPFILE is in PAGE's text.
check_options() {
	local page=$1 help=$2 opt missing=() n=0
	render "$page" >"$T/page.txt" 2>/dev/null || fail "man -l $page failed"
	while read -r opt; do
		n=$((n + 1))
		grep -qE -- "(^|[^A-Za-z0-9_-])${opt}([^A-Za-z0-9_-]|\$)" "$T/page.txt" ||
			missing+=("$opt")
	done < <(help_options <"$help")
	((n >= 2)) || fail "no options found in $help"
	((${#missing[@]} == 0)) ||
		fail "$(basename "$page") lacks ${missing[*]} (from $(basename "$help"))"
}

@test "every man page renders with man -l, without a warning" {
	local page
	for page in "$MAN/pyprof.1" "$MAN/pyprof-collector.1" "$MAN/libpyprof.7"; do
		[[ -f $page ]] || fail "$page is missing"
		LC_ALL=C MANWIDTH=80 man --warnings -l "$page" >"$T/out" 2>"$T/err" ||
			fail "man -l $page exited non-zero: $(cat "$T/err")"
		[[ ! -s $T/err ]] || fail "man -l $page warned: $(cat "$T/err")"
		grep -q '^NAME$' "$T/out" || fail "$page has no NAME section"
		grep -q '^SYNOPSIS$' "$T/out" || fail "$page has no SYNOPSIS section"
		# groff's own checks, every warning category on.
		groff -man -ww -z "$page" 2>"$T/err" || fail "groff failed on $page"
		[[ ! -s $T/err ]] || fail "groff -ww warned on $page: $(cat "$T/err")"
	done
}

@test "every option of pyprof --help and of each command's --help is in pyprof(1)" {
	local cmd
	"$PP_PYPROF" --help >"$T/help" || fail "pyprof --help failed"
	# The commands are the indented words under "Commands:".
	local cmds
	cmds=$(sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$T/help")
	[[ $cmds == *record* && $cmds == *ctl* ]] ||
		fail "no commands found in pyprof --help: $cmds"
	for cmd in $cmds; do
		grep -q "^\.SH PYPROF ${cmd^^}\$" "$MAN/pyprof.1" ||
			fail "pyprof(1) has no section for pyprof $cmd"
		"$PP_PYPROF" "$cmd" --help >>"$T/help" ||
			fail "pyprof $cmd --help failed"
	done
	check_options "$MAN/pyprof.1" "$T/help"
}

@test "every option of pyprof-collector --help is in pyprof-collector(1)" {
	"$PP_COLLECTOR" --help >"$T/help" || fail "pyprof-collector --help failed"
	check_options "$MAN/pyprof-collector.1" "$T/help"
}

@test "every PYPROF_* variable the library reads is in libpyprof(7)" {
	local v missing=() n=0
	render "$MAN/libpyprof.7" >"$T/page.txt" 2>/dev/null || fail "man -l failed"
	# The variables are string literals of the library's sources, wherever
	# they live under preload/; PYPROF_TEST_* are the test suite's hooks.
	while read -r v; do
		n=$((n + 1))
		grep -qE "(^|[^A-Z_])${v}([^A-Z_]|\$)" "$T/page.txt" || missing+=("$v")
	done < <(grep -rhoE --include='*.[ch]' '"PYPROF_[A-Z_]+"' "$PP_ROOT/preload" |
		tr -d '"' | grep -v '^PYPROF_TEST_' | sort -u)
	((n >= 10)) || fail "only $n PYPROF_* variables found in preload/"
	((${#missing[@]} == 0)) || fail "libpyprof(7) lacks ${missing[*]}"
}

@test "every PYPROF_* variable pyprof and pyprof-collector read is in their man pages" {
	local v missing=() n=0
	{
		render "$MAN/pyprof.1"
		render "$MAN/pyprof-collector.1"
	} >"$T/pages.txt" 2>/dev/null || fail "man -l failed"
	while read -r v; do
		n=$((n + 1))
		grep -qE "(^|[^A-Z_])${v}([^A-Z_]|\$)" "$T/pages.txt" || missing+=("$v")
	done < <(grep -rhoE --include='*.c' 'getenv\("PYPROF_[A-Z_]+"\)' "$PP_ROOT/collector" |
		sed -E 's/getenv\("(.*)"\)/\1/' | grep -v '^PYPROF_TEST_' | sort -u)
	((n >= 2)) || fail "only $n PYPROF_* variables found in collector/"
	((${#missing[@]} == 0)) || fail "pyprof(1)/pyprof-collector(1) lack ${missing[*]}"
}

@test "make install puts the man pages where man finds them" {
	make -s -C "$PP_ROOT" install DESTDIR="$T/root" PREFIX=/usr \
		>"$T/make.out" 2>&1 || fail "make install failed: $(cat "$T/make.out")"
	local mandir=$T/root/usr/share/man page want
	for page in man1/pyprof.1 man1/pyprof-collector.1 man7/libpyprof.7; do
		cmp -s "$PP_ROOT/man/$(basename "$page")" "$mandir/$page" ||
			fail "make install did not install $page as man/$(basename "$page")"
	done
	want=$mandir/man1/pyprof.1
	[[ $(MANPATH=$mandir man -w pyprof) == "$want" ]] ||
		fail "man -w pyprof does not find $want"
	want=$mandir/man1/pyprof-collector.1
	[[ $(MANPATH=$mandir man -w pyprof-collector) == "$want" ]] ||
		fail "man -w pyprof-collector does not find $want"
	want=$mandir/man7/libpyprof.7
	[[ $(MANPATH=$mandir man -w 7 libpyprof) == "$want" ]] ||
		fail "man -w 7 libpyprof does not find $want"
}

@test "every relative link in README.md and docs/ leads to a file that exists" {
	local f link target bad=()
	for f in "$PP_ROOT/README.md" "$PP_ROOT"/docs/*.md; do
		while read -r link; do
			link=${link%%#*}
			[[ -z $link || $link == *://* || $link == mailto:* ]] && continue
			target=$(dirname "$f")/$link
			[[ -e $target ]] || bad+=("${f#"$PP_ROOT"/}: $link")
		done < <(grep -oE '\]\([^)]+\)' "$f" | sed -E 's/^\]\((.*)\)$/\1/')
	done
	((${#bad[@]} == 0)) || fail "broken links: ${bad[*]}"
}

@test "the file map of docs/design.md names every source file" {
	local f missing=() n=0
	# The committed files (every file, outside a git checkout).
	list_files() {
		cd "$PP_ROOT" || return
		if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			git ls-files preload collector include tools
		else
			find preload collector include tools -type f
		fi
	}
	while read -r f; do
		n=$((n + 1))
		grep -qF "\`$(basename "$f")\`" "$PP_ROOT/docs/design.md" || missing+=("$f")
	done < <(list_files | grep -E '\.(c|h|map)$|^tools/')
	((n >= 50)) || fail "only $n source files found"
	((${#missing[@]} == 0)) ||
		fail "docs/design.md's file map lacks ${missing[*]} (see its File map section)"
}
