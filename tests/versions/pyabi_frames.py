# pyabi_frames.py - live stacks for pyabi_embed.c to walk (2.7 to 3.13).
#
# pyabi_embed runs this file inside the embedded interpreter, with a C
# function walk(tag) in the globals. walk() walks the calling thread's stack
# twice: once with nothing but the pyabi row, pycode_read_str and
# pycode_addr2line (the way the sampler does), once through CPython's own API
# (PyEval_GetFrame, f_back, PyFrame_GetLineNumber), and checks that both
# give the same (name, file, line) list. It returns how many frames it
# compared. Each case below builds a stack with one awkward feature.
#
# Calls are spread over two lines on purpose: a call's line is the line of
# `f(`, and the line after it holds the arguments, so a walker that reads
# 3.13's instr_ptr as "next instruction" (and steps back one unit), or 3.11's
# prev_instr as anything but "the last instruction started", lands on the
# wrong line in the caller frames and the comparison fails.
import sys
import threading

V = sys.version_info[:2]
counts = {}


def record(tag, n):
    counts[tag] = n
    if n < 1:
        raise SystemExit("walk(%s) compared no frame" % tag)


def leaf(tag):
    return walk(
        tag)


def middle(tag):
    return leaf(
        tag)


def top(tag):
    return middle(
        tag)


record("plain", top("plain"))


def recurse(n, tag):
    if n == 0:
        return walk(tag)
    return recurse(
        n - 1, tag)


record("recursion", recurse(100, "recursion"))


def gen(tag):
    yield walk(
        tag)


def gen_outer(tag):
    for x in gen(
            tag):
        return x


record("generator", gen_outer("generator"))


class K(object):
    def method(self, tag):
        return walk(tag)

    @classmethod
    def cm(cls, tag):
        return cls().method(
            tag)

    @staticmethod
    def sm(tag):
        return K.cm(tag)


record("methods", K.sm("methods"))


def closure(tag):
    def inner():
        return walk(
            tag)
    return inner()


record("closure", closure("closure"))
record("lambda", (lambda t: walk(t))("lambda"))
record("listcomp", [walk("listcomp") for _ in (1,)][0])
# Through C: map() calls back into Python (3.11 entry frame, 3.12+ shim).
record("through-c", list(map(lambda t: leaf(t), ["through-c"]))[0])
keyed = []
sorted([1, 2], key=lambda x: (keyed.append(walk("sorted-key")), x)[1])
record("sorted-key", keyed[0])
exec("record('exec', middle('exec'))")


def in_thread(tag):
    out = []
    t = threading.Thread(target=lambda: out.append(top(tag)))
    t.start()
    t.join()
    return out[0] if out else 0


record("thread", in_thread("thread"))

if V >= (3, 0):
    # Non-ASCII function and file names: UCS1, UCS2 and UCS4 characters.
    src = (
        "def caf\u00e9(tag):\n"
        "    return \u0436\u0443\u043a(\n"
        "        tag)\n"
        "def \u0436\u0443\u043a(tag):\n"
        "    return walk(tag)\n"
        "record('unicode', caf\u00e9('unicode'))\n"
    )
    exec(compile(src, "f\u00efl\u00e9_\u0416_\U0001F600.py", "exec"), globals())
else:
    exec(compile("record('bytes-file', middle('bytes-file'))\n",
                 "f\xc3\xafl\xc3\xa9.py", "exec"), globals())

if V >= (3, 5):
    exec('''
def sub_gen(tag):
    yield walk(tag)

def delegating(tag):
    yield from sub_gen(
        tag)

record("yield-from", next(delegating("yield-from")))

async def inner_coro(tag):
    return walk(
        tag)

async def outer_coro(tag):
    return await inner_coro(
        tag)

def drive(coro):
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value

record("coroutine", drive(outer_coro("coroutine")))
''')

if V >= (3, 7):
    exec('''
import asyncio

async def sleeper(tag):
    await asyncio.sleep(0)
    return walk(
        tag)

record("asyncio", asyncio.run(sleeper("asyncio")) if hasattr(asyncio, "run")
       else asyncio.get_event_loop().run_until_complete(sleeper("asyncio")))
''')

sys.stdout.write("frames: %s\n" % " ".join(
    "%s=%d" % (k, counts[k]) for k in sorted(counts)))
