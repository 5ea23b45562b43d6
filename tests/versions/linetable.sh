#!/bin/sh
# linetable.sh - pycode_addr2line() against every interpreter's own answers.
#
# For each interpreter (tests/versions/interpreters.sh; a missing one is a
# failure), dump_lines.py writes the line table and the interpreter's line
# of every instruction offset of argparse, typing, pydoc, tarfile, inspect,
# collections and a synthetic module (plus 200 random tables), and
# linetable_check compares pycode_addr2line() with each answer.
#
# Prints `ok VERSION: N offsets checked` per interpreter; exits 1 if any
# interpreter is missing or any offset disagrees. SANITIZE=address builds
# the checker with ASan (it also decodes truncated copies of every table).
# Artifacts: $BUILD/versions (BUILD defaults to build).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/versions/interpreters.sh"
out=${BUILD:-$top/build}/versions
mkdir -p "$out" || exit 1

# shellcheck disable=SC2046
${CC:-cc} $(versions_cflags) -I"$top/include" -I"$top/preload" \
	"$top/tests/versions/linetable_check.c" "$top/preload/cpython/pycode.c" \
	"$top/preload/cpython/pyabi.c" -o "$out/linetable_check" || exit 1

list=$(versions_interpreters)
status=$?
echo "$list" | while read -r version exe; do
	[ -n "$version" ] || continue
	tag=$(echo "$version" | tr ':/' '__')
	if ! "$exe" "$top/tests/versions/dump_lines.py" >"$out/lines-$tag.txt" \
		2>"$out/lines-$tag.err"; then
		echo "FAIL $version: dump_lines.py failed:"
		sed 's/^/  /' "$out/lines-$tag.err"
		echo x >>"$out/failed.$$"
		continue
	fi
	if res=$("$out/linetable_check" "$out/lines-$tag.txt"); then
		echo "ok $version: ${res%% in *}"
	else
		echo "FAIL $version: pycode_addr2line disagrees (see above)"
		echo x >>"$out/failed.$$"
	fi
done
if [ -e "$out/failed.$$" ]; then
	rm -f "$out/failed.$$"
	status=1
fi
exit $status
