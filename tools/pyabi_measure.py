"""pyabi_measure.py - the struct pyabi fields no header holds, measured in a
live object of the interpreter that runs this script (tools/gen-pyabi runs
it with each interpreter it probes; it prints initializer lines that go
into that version's row of preload/cpython/pyabi_table.h).

asyncio's C task (TaskObj, 3.7-3.13) is private to
Modules/_asynciomodule.c, so tools/pyabi_probe.c cannot offsetof it.
Here a task is made with a known loop, coroutine and name, run one step
so that it waits on a known future, and each field's offset is where the
task's memory holds that object's address, exactly once (its context:
the one contextvars.Context among what the task's traverse visits).
3.14+ describe their tasks in _Py_AsyncioModuleDebugOffsets, read at run
time: NONE here, as before 3.7 (no asyncio view). Runs on 2.7 too.
A module's md_dict is measured the same way (module_dict below).
"""
import sys

FIELDS = ("task_loop", "task_fut_waiter", "task_coro", "task_name",
          "task_context")
WHY = {
    "task_loop": "TaskObj fut_loop, measured in a live task",
    "task_fut_waiter": "TaskObj task_fut_waiter, measured in a live task",
    "task_coro": "TaskObj task_coro, measured in a live task",
    "task_name": "TaskObj task_name, measured in a live task",
    "task_context": "TaskObj task_context, measured in a live task",
}


def line(name, value, why):
    lhs = ".%s = %s," % (name, value)
    sys.stdout.write("\t\t%-34s /* %s */\n" % (lhs, why))


def none(why):
    for f in FIELDS:
        line(f, "PYABI_NONE", why)


def measure():
    import asyncio
    import contextvars
    import ctypes
    import gc
    import _asyncio

    v = sys.version_info
    loop = asyncio.new_event_loop()
    fut = loop.create_future()

    scope = {"fut": fut}
    exec("async def body():\n    await fut\n", scope)  # 2.7 must parse this file
    coro = scope["body"]()
    kw = {"loop": loop}
    if v >= (3, 8):
        kw["name"] = "pyabi-measure"
    task = _asyncio.Task(coro, **kw)
    loop.call_soon(loop.stop)
    loop.run_forever()  # one step: the task now waits on fut
    size = type(task).__basicsize__
    raw = ctypes.string_at(id(task), size)
    words = [int.from_bytes(raw[i:i + 8], sys.byteorder)
             for i in range(0, size - 7, 8)]

    def at(obj, what):
        hits = [8 * i for i, w in enumerate(words) if w == id(obj)]
        if len(hits) != 1:
            sys.exit("pyabi_measure: %s found %d times in a task of %d "
                     "bytes" % (what, len(hits), size))
        return hits[0]

    ctx = [o for o in gc.get_referents(task)
           if type(o) is contextvars.Context]
    if len(ctx) != 1:
        sys.exit("pyabi_measure: %d contexts among the task's referents"
                 % len(ctx))
    got = {
        "task_loop": at(loop, "the loop"),
        "task_fut_waiter": at(fut, "the awaited future"),
        "task_coro": at(coro, "the coroutine"),
        "task_name": at(task.get_name(), "the name") if v >= (3, 8) else None,
        "task_context": at(ctx[0], "the context"),
    }
    fut.set_result(None)
    loop.run_until_complete(task)
    loop.close()
    for f in FIELDS:
        if got[f] is None:
            line(f, "PYABI_NONE", "TaskObj has no name before 3.8")
        else:
            line(f, got[f], WHY[f])


def call_ops():
    """The bitmap of calling opcodes: every opcode byte whose name (as the
    interpreter's code stores it, specialized forms included, the names
    tools/gen-opcodes lists) starts with CALL, PRECALL or
    INSTRUMENTED_CALL."""
    import opcode
    try:
        import dis
        names = list(getattr(dis, "_all_opname", opcode.opname))
    except Exception:
        names = list(opcode.opname)
    table = dict((i, n) for i, n in enumerate(names[:256]))
    for n, i in getattr(opcode, "_specialized_opmap", {}).items():
        if i < 256:
            table[i] = n
    words = [0, 0, 0, 0]
    for i, n in table.items():
        if n.startswith(("CALL", "PRECALL", "INSTRUMENTED_CALL")):
            words[i >> 6] |= 1 << (i & 63)
    line("call_ops", "{ " + ", ".join("0x%016xull" % w for w in words) + " }",
         "CALL*, PRECALL*, INSTRUMENTED_CALL* opcodes (dis, opcode)")


def module_dict():
    """PyModuleObject.md_dict: the struct is private to moduleobject.c
    before 3.10, so it is found in a live module as the one word that
    holds the address of the module's __dict__."""
    import ctypes
    import struct
    import types
    m = types.ModuleType("pyabi_measure")
    size = type(m).__basicsize__
    raw = ctypes.string_at(id(m), size)
    hits = [i for i in range(0, size - 7, 8)
            if struct.unpack_from("P", raw, i)[0] == id(m.__dict__)]
    if len(hits) != 1:
        sys.exit("pyabi_measure: a module's dict found %d times in its "
                 "%d bytes" % (len(hits), size))
    line("module_dict", hits[0], "PyModuleObject.md_dict, measured in a live module")


def main():
    v = sys.version_info
    if v[0] < 3 or v[:2] < (3, 7):
        none("no asyncio view before 3.7")
    elif v[:2] >= (3, 14):
        none("3.14+: _Py_AsyncioModuleDebugOffsets")
    else:
        measure()
    call_ops()
    module_dict()


main()
