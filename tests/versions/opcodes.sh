#!/bin/bash
# tests/versions/opcodes.sh - the committed opcode names
# (collector/symbols/opcodes_table.h) are what every interpreter on this machine
# says today: `tools/gen-opcodes --check` asks each one (pyenv's and
# Debian's python3) for its opcode table, checks every number against its
# own opcode header, and compares with the file. Then, per interpreter, the
# opcode that the interpreter itself names for `a + b` (dis, on a compiled
# function) has that name in the table for its version.
#
# Prints `ok ...` lines; exits 1 on any failure.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/pythons.sh"
status=0
out=${BUILD:-$top/build}/versions
mkdir -p "$out" || exit 1

if "$top/tools/gen-opcodes" --check >"$out/gen-opcodes.diff" 2>"$out/gen-opcodes.err"; then
	echo "ok collector/symbols/opcodes_table.h matches tools/gen-opcodes"
else
	echo "FAIL collector/symbols/opcodes_table.h is not what tools/gen-opcodes gives here:"
	sed 's/^/  /' "$out/gen-opcodes.diff" "$out/gen-opcodes.err" | head -40
	status=1
fi

# The add instruction's number and name, as each interpreter's dis sees
# them, must be in the table for its version.
while read -r name exe kind; do
	[[ $kind == missing ]] && { echo "FAIL $name: interpreter missing"; status=1; continue; }
	line=$(PYPROF_DISABLE=1 "$exe" -c '
import dis, sys
def f(a, b):
    return a + b
try:
    ins = [i for i in dis.get_instructions(f) if i.opname.startswith("BINARY_")][0]
    op, name = ins.opcode, ins.opname
except AttributeError:  # 2.7: no get_instructions; find the byte
    op, name = dis.opmap["BINARY_ADD"], "BINARY_ADD"
    assert op in bytearray(f.__code__.co_code)
print("%d.%d %d %s" % (sys.version_info[0], sys.version_info[1], op, name))
' 2>&1)
	read -r ver op opname <<<"$line"
	if grep -qE "^/\* Python $ver, " "$top/collector/symbols/opcodes_table.h" &&
		awk -v v="$ver" -v op="$op" -v n="$opname" '
			$0 ~ "^/\\* Python " v ", " { on = 1; next }
			on && /^};/ { exit }
			on && $1 == "[" op "]" && $3 == "\"" n "\"," { found = 1 }
			END { exit !found }' "$top/collector/symbols/opcodes_table.h"; then
		echo "ok $name: $opname is opcode $op in the $ver table"
	else
		echo "FAIL $name: '$line' not in collector/symbols/opcodes_table.h"
		status=1
	fi
done < <(PYPROF_TEST_PYTHONS=${PYPROF_TEST_PYTHONS:-all} pyprof_pythons)
exit $status
