# interpreters.sh - the interpreters the version matrix runs against.
# Sourced by the tests/versions/*.sh drivers (POSIX sh), after they set
# $top to the repository's root.
#
# The list and the selection are tests/lib/pythons.sh's, the same as the
# end-to-end tests': PYPROF_TEST_PYTHONS (default "all": pyenv's 2.7 and
# 3.6 to 3.13, then Debian's /usr/bin/python3).
#
# versions_interpreters prints one "VERSION EXECUTABLE" line per interpreter.
# VERSION is the full version (3.11.7), or for the system interpreter its
# version and path (3.11.2:/usr/bin/python3).
#
# A missing interpreter is a failure, not a skip (a suite that skips the
# interpreter it was meant to check would pass without checking): the function
# prints "FAIL missing interpreter: ..." to stderr for each one and returns
# 1, after listing what it did find.

versions_interpreters() {
	vi_missing=0
	# shellcheck disable=SC2154 # $top: set by the driver that sources us
	vi_list=$(bash "$top/tests/lib/pythons.sh") || vi_list=
	if [ -z "$vi_list" ]; then
		echo "FAIL no interpreter selected" \
			"(PYPROF_TEST_PYTHONS='${PYPROF_TEST_PYTHONS:-all}')" >&2
		return 1
	fi
	while read -r vi_name vi_exe vi_kind; do
		[ -n "$vi_name" ] || continue
		if [ "$vi_kind" = missing ]; then
			echo "FAIL missing interpreter: $vi_name" \
				"(PYPROF_TEST_PYTHONS='${PYPROF_TEST_PYTHONS:-all}')" >&2
			vi_missing=1
		elif [ "$vi_name" = system ]; then
			if vi_full=$("$vi_exe" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])'); then
				echo "$vi_full:$vi_exe $vi_exe"
			else
				echo "FAIL missing interpreter: $vi_exe does not run" >&2
				vi_missing=1
			fi
		else
			echo "$vi_name $vi_exe"
		fi
	done <<EOF
$vi_list
EOF
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
# EXE's interpreter. Prints the include directory on the first line, the
# link flags on the second, and on the third the PYTHONHOME the program
# needs (empty but for a relocated interpreter): pyenv's shared libpython,
# or for an interpreter whose executable has libpython linked in statically
# (Debian's /usr/bin/python3) the static libpython from its LIBPL, the very
# archive that executable is built from. An interpreter unpacked outside its
# configured prefix (Debian sid's, by tools/get-sid-pythons: it needs the
# glibc unpacked beside it) is embedded through the shared libpython of
# the same build, linked against that root's C library and loader, with
# RPATH (not RUNPATH, so that it also covers libpython's own needs) and
# PYTHONHOME pointing into the root.
versions_embed_flags() {
	"$1" -c '
import os, sys, sysconfig
g = sysconfig.get_config_var
maps = open("/proc/self/maps").read()
inc = g("INCLUDEPY")
alt = sysconfig.get_paths()["include"]
if not os.path.exists(os.path.join(inc, "Python.h")) and os.path.exists(os.path.join(alt, "Python.h")):
    lib = os.path.join(sys.prefix, "lib", "x86_64-linux-gnu")
    print(alt)
    print("-isystem %s %s/libpython%s.so.1.0 %s/libc.so.6 %s/ld-linux-x86-64.so.2 "
          "-Wl,--dynamic-linker=%s/ld-linux-x86-64.so.2 -Wl,--disable-new-dtags -Wl,-rpath,%s"
          % (os.path.dirname(alt), lib, g("VERSION"), lib, lib, lib, lib))
    print(sys.prefix)
elif "libpython" in maps:
    print(inc)
    d = g("LIBDIR")
    print("-L%s -lpython%s%s -Wl,-rpath,%s %s %s" % (d, g("VERSION"), g("ABIFLAGS") or "",
          d, g("LIBS") or "", g("SYSLIBS") or ""))
else:
    # A static libpython is not position-independent.
    # Extension modules in lib-dynload resolve CPython symbols from the
    # executable: LINKFORSHARED exports them.
    print(inc)
    print("-no-pie %s %s %s %s %s" % (os.path.join(g("LIBPL"), g("LIBRARY")), g("LIBS") or "",
          g("SYSLIBS") or "", g("MODLIBS") or "", g("LINKFORSHARED") or ""))
'
}
