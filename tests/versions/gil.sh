#!/bin/sh
# gil.sh - pyabi_gil_holder against every interpreter, from a thread
# without the GIL.
#
# For each interpreter (tests/versions/interpreters.sh; a missing one is a
# failure), gil_embed.c is compiled against its headers and linked with its
# libpython (Debian's /usr/bin/python3: the static libpython it is built
# from, as pyabi.sh does). It runs gil_threads.py: one Python thread spins
# holding the GIL while another sleeps in time.sleep, then both sleep; a
# plain C thread asks pyabi_gil_holder, with memcpy reads, who holds the
# GIL every ~200 us. The answer must be the spinning thread most of the
# time and never the sleeping one, and "free" at every sample while all
# Python threads sleep. See gil_embed.c for every check.
#
# Prints `ok VERSION: N checks; ...` per interpreter with the share of
# samples that named the spinning thread; exits 1 on any failure.
# About 3 s per interpreter. SANITIZE=address builds with ASan.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/versions/interpreters.sh"
out=${BUILD:-$top/build}/versions
mkdir -p "$out" || exit 1

list=$(versions_interpreters)
status=$?
rm -f "$out/gil-failed"
echo "$list" | while read -r version exe; do
	[ -n "$version" ] || continue
	tag=$(echo "$version" | tr ':/' '__')
	flags=$(versions_embed_flags "$exe") || { echo "FAIL $version: cannot query"; touch "$out/gil-failed"; continue; }
	inc=$(echo "$flags" | sed -n 1p)
	libs=$(echo "$flags" | sed -n 2p)
	home=$(echo "$flags" | sed -n 3p)
	bin="$out/gil_embed-$tag"
	# shellcheck disable=SC2046,SC2086
	if ! ${CC:-cc} $(versions_cflags) -Wno-deprecated-declarations \
		-isystem "$inc" -I"$top/include" -I"$top/preload" -I"$top/tests/unit" \
		"$top/tests/versions/gil_embed.c" "$top/preload/cpython/pyabi.c" \
		-o "$bin" $libs -ldl -lpthread >"$out/gil-$tag.build" 2>&1; then
		echo "FAIL $version: gil_embed does not build:"
		sed 's/^/  /' "$out/gil-$tag.build"
		touch "$out/gil-failed"
		continue
	fi
	# The embedded interpreter is never finalized: its memory is not a leak.
	if ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
		env ${home:+PYTHONHOME="$home"} "$bin" "$top/tests/versions/gil_threads.py" >"$out/gil-$tag.log" 2>&1; then
		n=$(sed -n 's/^check: \([0-9]*\) passed.*/\1/p' "$out/gil-$tag.log")
		busy=$(sed -n 's/^gil: busy: .*busy [0-9]* (\([0-9.]*%\)).*/\1/p' "$out/gil-$tag.log")
		echo "ok $version: $n checks; spinning thread named in $busy of samples, idle always free"
	else
		echo "FAIL $version: gil_embed:"
		head -40 "$out/gil-$tag.log" | sed 's/^/  /'
		touch "$out/gil-failed"
	fi
done
if [ -e "$out/gil-failed" ]; then
	status=1
fi
exit $status
