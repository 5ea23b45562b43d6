# tests/lib/pythons.sh - which CPython interpreters the tests run against.
#
# Sourced by tests/lib/common.bash (and so by every bats file), or run as a
# script to see the list. pyprof_pythons prints one line per interpreter:
#
#     NAME PATH KIND
#
# NAME is the version ("3.11.7") or "system"; PATH the executable; KIND
# "shared" (libpython is a shared library the executable loads) or
# "static" (libpython linked into the executable, like Debian's python3).
# A requested interpreter that does not exist is printed as
#
#     NAME - missing
#
# and the tests that iterate over interpreters FAIL on it: a test that found
# no interpreter must not pass.
#
# Selection: PYPROF_TEST_PYTHONS, a space- or comma-separated list of
#   3.11      pyenv's newest 3.11.x      3.11.7    exactly that version
#   system    Debian's /usr/bin/python3  all       $PYPROF_ALL_PYTHONS
#   new       $PYPROF_NEW_PYTHONS (3.14 3.15: the newest, alone)
# A minor version pyenv does not have (3.14, 3.15) is looked up among
# Debian sid's interpreters that tools/get-sid-pythons (make test-deps) unpacks
# into ROOT/usr/bin/pythonX.Y, ROOT being $PYPROF_PYTHONS_DIR/root, else
# /var/cache/pyprof-pythons/root, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/pyprof-pythons/root (the script's order);
# NAME is then the interpreter's full version (3.14.10). They are static
# builds (libpython linked in), like Debian's python3.
# Default "all": every interpreter pyprof supports, each one
# required. pyenv is asked for its root and versions (`pyenv root`,
# `pyenv versions --bare`); no path to an interpreter is written here.
# Another pyenv version (a 3.14 being ported to) is tested by naming it.
#
# This is the one list and the one selection of the whole suite: the
# end-to-end tests (for_each_python in tests/lib/common.bash) and the
# version drivers (tests/versions/interpreters.sh) both read it.

# Every interpreter pyprof supports: pyenv's newest of each minor, then
# Debian's python3 (static libpython), then Debian sid's 3.14 and 3.15.
PYPROF_ALL_PYTHONS="2.7 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13 system 3.14 3.15"
# The newest alone (PYPROF_TEST_PYTHONS=new, make check-new).
PYPROF_NEW_PYTHONS="3.14 3.15"

# The root tools/get-sid-pythons unpacked Debian sid's interpreters into,
# in the order that script picks its directory; fails when there is none.
pyprof_sid_root() {
	local d
	for d in ${PYPROF_PYTHONS_DIR:+"$PYPROF_PYTHONS_DIR"} \
		/var/cache/pyprof-pythons "${XDG_CACHE_HOME:-$HOME/.cache}/pyprof-pythons"; do
		if [[ -d $d/root/usr/bin ]]; then
			echo "$d/root"
			return 0
		fi
		# the script uses the first of these it may write to
		[[ -n ${PYPROF_PYTHONS_DIR:-} ]] && return 1
	done
	return 1
}

# A sid interpreter for a MAJOR.MINOR token, or MAJOR.MINOR.PATCH naming
# its exact version: prints "NAME EXE KIND".
pyprof_sid_python() {
	local tok=$1 root exe full
	[[ $tok =~ ^([0-9]+\.[0-9]+)(\.[0-9]+)?$ ]] || return 1
	root=$(pyprof_sid_root) || return 1
	exe=$root/usr/bin/python${BASH_REMATCH[1]}
	[[ -x $exe ]] || return 1
	full=$("$exe" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) ||
		return 1
	[[ $tok == "${BASH_REMATCH[1]}" || $tok == "$full" ]] || return 1
	echo "$full $exe $(pyprof_python_kind "$exe")"
}

# Finds the pyenv executable: on PATH, else in $PYENV_ROOT or pyenv's
# standard install location.
pyprof_pyenv() {
	local p
	for p in "$(command -v pyenv 2>/dev/null)" \
		"${PYENV_ROOT:+$PYENV_ROOT/bin/pyenv}" "$HOME/.pyenv/bin/pyenv"; do
		if [[ -n $p && -x $p ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# KIND of an interpreter executable: does it load libpython?
pyprof_python_kind() {
	local exe=$1
	if command -v readelf >/dev/null 2>&1; then
		if readelf -d "$exe" 2>/dev/null | grep -q 'NEEDED.*libpython'; then
			echo shared
		else
			echo static
		fi
	elif ldd "$exe" 2>/dev/null | grep -q libpython; then
		echo shared
	else
		echo static
	fi
}

# The executable inside a pyenv version directory: bin/pythonX.Y, else
# bin/python.
pyprof_pyenv_exe() {
	local dir=$1 ver=$2 mm
	mm=$(echo "$ver" | cut -d. -f1,2)
	if [[ -x $dir/bin/python$mm ]]; then
		echo "$dir/bin/python$mm"
	elif [[ -x $dir/bin/python ]]; then
		echo "$dir/bin/python"
	else
		return 1
	fi
}

pyprof_pythons() {
	local want=${PYPROF_TEST_PYTHONS:-all}
	local pyenv root versions tok v best exe
	want=" ${want//,/ } "
	want=${want// all / $PYPROF_ALL_PYTHONS }
	want=${want// new / $PYPROF_NEW_PYTHONS }

	pyenv=$(pyprof_pyenv) || pyenv=
	root=
	versions=
	if [[ -n $pyenv ]]; then
		root=$("$pyenv" root 2>/dev/null) || root=
		# Plain CPython versions only (no envs, no pypy).
		versions=$("$pyenv" versions --bare 2>/dev/null |
			grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V) || versions=
	fi
	for tok in $want; do
		if [[ $tok == system ]]; then
			# Debian's own package, not whatever python3 is on PATH.
			exe=/usr/bin/python3
			if [[ -x $exe ]]; then
				echo "system $exe $(pyprof_python_kind "$exe")"
			else
				echo "system - missing"
			fi
			continue
		fi
		best=
		for v in $versions; do
			if [[ $v == "$tok" || $v == "$tok".* ]]; then
				best=$v # sorted: the last match is the newest
			fi
		done
		if [[ -n $best && -n $root ]] &&
			exe=$(pyprof_pyenv_exe "$root/versions/$best" "$best"); then
			echo "$best $exe $(pyprof_python_kind "$exe")"
		elif pyprof_sid_python "$tok"; then
			:
		else
			echo "$tok - missing"
		fi
	done
}

# Run as a script: print the list.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	pyprof_pythons
fi
