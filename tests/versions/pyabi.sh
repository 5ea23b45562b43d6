#!/bin/sh
# pyabi.sh - each interpreter's pyabi row, checked from inside it.
#
# For each interpreter (tests/versions/interpreters.sh; a missing one is a
# failure):
#   - pyabi_embed.c is compiled against that interpreter's headers and
#     linked with its libpython: pyenv's shared library, or for an
#     interpreter whose executable has libpython linked in statically
#     (Debian's /usr/bin/python3) the static libpython from its LIBPL,
#     the very archive that executable is built from;
#   - it runs pyabi_frames.py and checks thread states, code objects, live
#     stacks walked through the row against the C API, string decoding of
#     every PEP 393 kind, and on 3.13+ _Py_DebugOffsets.
# Then `tools/gen-pyabi --check` confirms the committed table is what these
# interpreters' headers give today.
#
# Prints `ok VERSION: N checks` per interpreter; exits 1 on any failure.
# SANITIZE=address builds the test programs with ASan (the embedded
# interpreter is then ASan-instrumented only where we compiled it).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/versions/interpreters.sh"
out=${BUILD:-$top/build}/versions
mkdir -p "$out" || exit 1

list=$(versions_interpreters)
status=$?
rm -f "$out/pyabi-failed"
echo "$list" | while read -r version exe; do
	[ -n "$version" ] || continue
	tag=$(echo "$version" | tr ':/' '__')
	flags=$(versions_embed_flags "$exe") || { echo "FAIL $version: cannot query"; touch "$out/pyabi-failed"; continue; }
	inc=$(echo "$flags" | sed -n 1p)
	libs=$(echo "$flags" | sed -n 2p)
	home=$(echo "$flags" | sed -n 3p)
	bin="$out/pyabi_embed-$tag"
	# shellcheck disable=SC2046,SC2086
	if ! ${CC:-cc} $(versions_cflags) -Wno-deprecated-declarations \
		-isystem "$inc" -I"$top/include" -I"$top/preload" -I"$top/tests/unit" \
		"$top/tests/versions/pyabi_embed.c" "$top/preload/cpython/pycode.c" \
		"$top/preload/cpython/pyabi.c" "$top/preload/cpython/pydict.c" \
		"$top/preload/signal/sig_pydict.c" -o "$bin" $libs -lpthread \
		>"$out/pyabi-$tag.build" 2>&1; then
		echo "FAIL $version: pyabi_embed does not build:"
		sed 's/^/  /' "$out/pyabi-$tag.build"
		touch "$out/pyabi-failed"
		continue
	fi
	# The embedded interpreter is never finalized: its memory is not a leak.
	if ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
		env ${home:+PYTHONHOME="$home"} "$bin" "$top/tests/versions/pyabi_frames.py" >"$out/pyabi-$tag.log" 2>&1; then
		n=$(sed -n 's/^check: \([0-9]*\) passed.*/\1/p' "$out/pyabi-$tag.log")
		echo "ok $version: $n checks"
	else
		echo "FAIL $version: pyabi_embed:"
		grep -v '^frames:' "$out/pyabi-$tag.log" | head -40 | sed 's/^/  /'
		touch "$out/pyabi-failed"
	fi
done
if [ -e "$out/pyabi-failed" ]; then
	status=1
fi
if ! "$top/tools/gen-pyabi" --check >"$out/gen-pyabi.diff" 2>&1; then
	echo "FAIL preload/cpython/pyabi_table.h is not what tools/gen-pyabi gives here:"
	sed 's/^/  /' "$out/gen-pyabi.diff" | head -40
	status=1
else
	echo "ok preload/cpython/pyabi_table.h matches tools/gen-pyabi"
fi
exit $status
