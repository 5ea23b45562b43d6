# interpreters.sh - the interpreters the version matrix runs against.
# shellcheck shell=sh
# Sourced by the tests/versions/*.sh drivers (POSIX sh).
#
# versions_interpreters prints one "VERSION EXECUTABLE" line per interpreter:
# every `pyenv versions --bare` under `pyenv root`, then Debian's
# /usr/bin/python3. VERSION is the full version (3.11.7), or for the system
# interpreter its version and path (3.11.2:/usr/bin/python3).
#
# A missing interpreter is a failure, not a skip (issue 3): every minor in
# PYPROF_REQUIRED (default 2.7 and 3.6 to 3.13) must be installed through
# pyenv, and /usr/bin/python3 must exist unless PYPROF_NO_SYSTEM_PYTHON=1.
# The function then prints what is missing to stderr and returns 1, after
# listing what it did find.

PYPROF_REQUIRED=${PYPROF_REQUIRED:-"2.7 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13"}

versions_interpreters() {
	vi_missing=0
	vi_found=""
	if command -v pyenv >/dev/null 2>&1; then
		vi_root=$(pyenv root)
		for vi_v in $(pyenv versions --bare); do
			vi_exe="$vi_root/versions/$vi_v/bin/python"
			[ -x "$vi_exe" ] || continue
			vi_full=$("$vi_exe" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])') || continue
			echo "$vi_full $vi_exe"
			vi_found="$vi_found ${vi_full%.*}"
		done
	else
		echo "interpreters: pyenv not found" >&2
	fi
	for vi_m in $PYPROF_REQUIRED; do
		case " $vi_found " in
		*" $vi_m "*) ;;
		*) echo "FAIL missing interpreter: no pyenv Python $vi_m" >&2
		   vi_missing=1 ;;
		esac
	done
	if [ "${PYPROF_NO_SYSTEM_PYTHON:-0}" != 1 ]; then
		if [ -x /usr/bin/python3 ]; then
			vi_full=$(/usr/bin/python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
			echo "$vi_full:/usr/bin/python3 /usr/bin/python3"
		else
			echo "FAIL missing interpreter: /usr/bin/python3" >&2
			vi_missing=1
		fi
	fi
	return $vi_missing
}

# The C flags the drivers build their checkers with: the project's
# warnings, plus -fsanitize=$SANITIZE when set (SANITIZE=address).
versions_cflags() {
	echo "-std=gnu11 -O1 -g -Wall -Wextra -Wshadow -Wstrict-prototypes" \
	     "-Wmissing-prototypes -Wformat=2 -Werror -D_GNU_SOURCE" \
	     "${SANITIZE:+-fsanitize=$SANITIZE -fno-omit-frame-pointer}"
}

# versions_embed_flags EXE: how to compile and link a program that embeds
# EXE's interpreter. Prints the include directory on the first line and the
# link flags on the second: pyenv's shared libpython, or for an interpreter
# whose executable has libpython linked in statically (Debian's
# /usr/bin/python3) the static libpython from its LIBPL, the very archive
# that executable is built from.
versions_embed_flags() {
	"$1" -c '
import os, sysconfig
g = sysconfig.get_config_var
maps = open("/proc/self/maps").read()
print(g("INCLUDEPY"))
if "libpython" in maps:
    d = g("LIBDIR")
    print("-L%s -lpython%s%s -Wl,-rpath,%s %s %s" % (d, g("VERSION"), g("ABIFLAGS") or "",
          d, g("LIBS") or "", g("SYSLIBS") or ""))
else:
    # A static libpython is not position-independent.
    # Extension modules in lib-dynload resolve CPython symbols from the
    # executable: LINKFORSHARED exports them.
    print("-no-pie %s %s %s %s %s" % (os.path.join(g("LIBPL"), g("LIBRARY")), g("LIBS") or "",
          g("SYSLIBS") or "", g("MODLIBS") or "", g("LINKFORSHARED") or ""))
'
}
