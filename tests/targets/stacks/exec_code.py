# exec_code.py - code run through exec(): its own "<module>" frame and
# functions, of file "<string>", at the lines of the exec'd source (line k
# of SRC is k lines below the line tagged @src).
#
# Two strings are exec'd one after the other, as programs that run
# generated code do: first SRC with two blank lines in front (a quarter of
# the time), then SRC itself. CPython gives both "<module>" code objects the
# same name and file objects and first line 1, and the second one often
# reuses the memory of the first, freed when its exec returned: the second
# must still be named with its own lines.
#
# @expect <module> @module_exec
# @expect <module> in <string> @src_call-@src
# @expect spin in <string> @src_hot-@src
from _clock import cpu_clock, deadline

SRC = (  # @src
    "def spin(limit):\n"
    "    x = 0\n"
    "    while cpu_clock() < limit:\n"
    "        for i in range(20000): x = (x * 31 + i) % 1000003\n"  # @src_hot
    "    return x\n"
    "spin(limit)\n"  # @src_call
)

exec("\n\n" + SRC, {"cpu_clock": cpu_clock, "limit": deadline(0.25)})
exec(SRC, {"cpu_clock": cpu_clock, "limit": deadline(0.75)})  # @module_exec
