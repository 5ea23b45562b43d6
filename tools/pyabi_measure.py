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
A module's md_dict is measured the same way (module_dict below), and so
are functools.partial's args, 3.6-3.10's dict keys object (the thread
names read ordinary dicts on every version) and the HAMT's nodes.
"""
import sys

FIELDS = ("task_loop", "task_fut_waiter", "task_coro", "task_name",
          "task_context", "task_callback0")
WHY = {
    "task_loop": "TaskObj fut_loop, measured in a live task",
    "task_fut_waiter": "TaskObj task_fut_waiter, measured in a live task",
    "task_coro": "TaskObj task_coro, measured in a live task",
    "task_name": "TaskObj task_name, measured in a live task",
    "task_context": "TaskObj task_context, measured in a live task",
    "task_callback0": "TaskObj fut_callback0, measured in a live task",
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
    # The first done-callback has a slot of its own (fut_callback0), the
    # others a list; measured after the context above, since a callback
    # brings a context of its own.
    def first_callback(t):
        pass
    task.add_done_callback(first_callback)
    raw = ctypes.string_at(id(task), size)
    words = [int.from_bytes(raw[i:i + 8], sys.byteorder)
             for i in range(0, size - 7, 8)]
    got["task_callback0"] = at(first_callback, "the first done-callback")
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


def words_at(addr, size):
    import ctypes
    raw = ctypes.string_at(addr, size)
    return [int.from_bytes(raw[i:i + 8], sys.byteorder)
            for i in range(0, size - 7, 8)]


def only(words, value, what, start=0):
    """The byte offset of the one word equal to value."""
    hits = [8 * i for i, w in enumerate(words) if w == value and 8 * i >= start]
    if len(hits) != 1:
        sys.exit("pyabi_measure: %s found %d times" % (what, len(hits)))
    return hits[0]


def partial_args():
    """functools.partial's args, private to Modules/_functoolsmodule.c."""
    import functools
    p = functools.partial(len, "pyabi-measure")
    got = only(words_at(id(p), type(p).__basicsize__), id(p.args),
               "partial's args")
    line("partial_args", got, "partialobject.args, measured in a live partial")


class Split(object):
    def __init__(self):
        self.first = 1
        self.second = 2


KEYS_OBJECT = ("dk_size", "dk_nentries", "dk_indices")
OLD_KEYS = KEYS_OBJECT + ("dict_entry_size", "dict_entry_hash",
                          "dict_entry_key", "dict_entry_value")


def old_dict_keys():
    """3.6-3.10's PyDictKeysObject (Objects/dict-common.h, not installed):
    ma_keys is the one word two instance dictionaries of a class share
    (their keys object), and in a combined table of 11 entries (dk_size
    32, one byte an index) the keys object holds 32, 11 and each entry's
    hash, key and value exactly once."""
    a, b = Split(), Split()
    da, db = a.__dict__, b.__dict__
    wa = words_at(id(da), type(da).__basicsize__)
    wb = words_at(id(db), type(db).__basicsize__)
    shared = [8 * i for i, (x, y) in enumerate(zip(wa, wb))
              if x == y and x > 65536 and x != id(dict)]
    if len(shared) != 1:
        sys.exit("pyabi_measure: %d words shared by two instance dicts"
                 % len(shared))
    keys_at = shared[0]
    names = ["pyabi-key-%d" % i for i in range(11)]
    values = [object() for _ in names]
    d = dict(zip(names, values))
    keys = words_at(id(d) + keys_at, 8)[0]
    head = words_at(keys, 64)
    size = only(head, 32, "dk_size 32")
    nentries = only(head, 11, "dk_nentries 11")
    body = words_at(keys, 64 + 32 + 11 * 24)
    key0 = only(body, id(names[0]), "the first key")
    key1 = only(body, id(names[1]), "the second key")
    value0 = only(body, id(values[0]), "the first value")
    hash0 = only(body, hash(names[0]) & (2 ** 64 - 1), "the first hash")
    start = min(key0, value0, hash0)
    got = {"dk_size": size, "dk_nentries": nentries,
           "dk_indices": start - 32, "dict_entry_size": key1 - key0,
           "dict_entry_hash": hash0 - start,
           "dict_entry_key": key0 - start, "dict_entry_value": value0 - start}
    for f in OLD_KEYS:
        line(f, got[f], "3.6-3.10 keys object, measured in a live dict")


HAMT = ("hamt_bitmap_bits", "hamt_bitmap_array", "hamt_array_items",
        "hamt_collision_array")


def fold(h):
    """The HAMT's 32-bit hash of a 64-bit hash (Python/hamt.c)."""
    h &= 2 ** 64 - 1
    return (h & 0xffffffff) ^ (h >> 32)


def hamt_node(parent, name):
    nodes = [o for o in gc_referents(parent) if type(o).__name__ == name]
    if len(nodes) != 1:
        sys.exit("pyabi_measure: %d %s found" % (len(nodes), name))
    return nodes[0]


def gc_referents(obj):
    import gc
    return gc.get_referents(obj)


def hamt_layout():
    """The HAMT's nodes (private to Python/hamt.c), from the node's
    start: a context with one variable has a bitmap node for root, its
    bitmap and its one key found in it; with 40 an array node, a child
    node at the slot its keys' hashes pick; with two variables of one
    32-bit hash, found among many, a collision node holding both."""
    import contextvars
    import struct

    def root_of(ctx):
        return [o for o in gc_referents(hamt_node(ctx, "hamt"))
                if type(o).__name__.startswith("hamt_")][0]

    def context(variables):
        ctx = contextvars.Context()
        for v in variables:
            ctx.run(v.set, 1)
        return ctx

    cv = contextvars.ContextVar("pyabi-measure")
    root = root_of(context([cv]))
    got = {"hamt_bitmap_array": only(words_at(id(root), 64), id(cv),
                                     "a bitmap node's key")}
    # The bitmap is the one 32-bit word equal to 1 << slot in the nodes
    # of contexts of one variable each, of slots 2 and up (1 and 2 are
    # also a reference count's, a size's): three of them agree on one.
    found, tries = None, 0
    for i in range(256):
        v = contextvars.ContextVar("pyabi-bits-%d" % i)
        slot = fold(hash(v)) & 31
        if slot < 2:
            continue
        node = root_of(context([v]))
        raw = words_at(id(node), got["hamt_bitmap_array"])
        halves = struct.unpack("<%dI" % (2 * len(raw)),
                               struct.pack("<%dQ" % len(raw), *raw))
        at = set(4 * j for j, x in enumerate(halves) if x == 1 << slot)
        found = at if found is None else found & at
        tries += 1
        if tries >= 3:
            break
    if not found or len(found) != 1:
        sys.exit("pyabi_measure: a bitmap node's bitmap found at %r"
                 % (sorted(found or ()),))
    got["hamt_bitmap_bits"] = found.pop()
    many = [contextvars.ContextVar("pyabi-%d" % i) for i in range(40)]
    root = root_of(context(many))
    # a child holding a variable itself (not only deeper nodes)
    child, key = [(c, k) for c in gc_referents(root)
                  if type(c).__name__.startswith("hamt_")
                  for k in gc_referents(c)
                  if type(k) is contextvars.ContextVar][0]
    at = only(words_at(id(root), type(root).__basicsize__), id(child),
              "an array node's child")
    got["hamt_array_items"] = at - 8 * (fold(hash(key)) & 31)
    seen, pair = {}, None
    keep = []
    for i in range(1 << 20):
        v = contextvars.ContextVar("pyabi-%d" % i)
        keep.append(v)
        other = seen.setdefault(fold(hash(v)), v)
        if other is not v:
            pair = (other, v)
            break
    if pair is None:
        sys.exit("pyabi_measure: no two variables of one hash")
    coll = hamt_node(root_of(context(pair)), "hamt_collision_node")
    words = words_at(id(coll), 64)
    got["hamt_collision_array"] = min(only(words, id(pair[0]), "a key"),
                                      only(words, id(pair[1]), "a key"))
    for f in HAMT:
        line(f, got[f], "Python/hamt.c's node, measured in a live context")


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
    # The objects the asyncio view reads, by name (a block of its own).
    if v[0] < 3 or v[:2] < (3, 7):
        line("partial_args", "PYABI_NONE", "no asyncio view before 3.7")
    else:
        partial_args()
    # The keys object, 3.6+ (the thread names read ordinary dicts on
    # every version); 2.7's dict has none, its entries are in the headers
    # (tools/pyabi_probe.c), as 3.11+'s keys object is.
    if v[0] < 3:
        for f in KEYS_OBJECT:
            line(f, "PYABI_NONE", "2.7: no keys object (dict27_table)")
    elif v[:2] < (3, 11):
        old_dict_keys()
    if v[0] < 3 or v[:2] < (3, 7):
        for f in HAMT:
            line(f, "PYABI_NONE", "no contextvars before 3.7")
    else:
        hamt_layout()
    asyncio_facts()


def asyncio_facts():
    """How asyncio names and registers its tasks, asked of asyncio."""
    v = sys.version_info
    names = eager = 0
    if v[0] >= 3 and v[:2] >= (3, 7):
        import asyncio.tasks
        names = int(hasattr(asyncio.Task, "get_name"))
        eager = int(hasattr(asyncio.tasks, "_eager_tasks") and
                    hasattr(asyncio.tasks, "_scheduled_tasks"))
    line("asyncio_task_names", names, "Task.get_name: tasks have names")
    line("asyncio_eager_tasks", eager,
         "asyncio.tasks._scheduled_tasks and _eager_tasks")


main()
