# labels_shares.py - work done under labels in known shares, measured by
# the program itself, to compare with the shares of a profile's samples
# by label (tests/e2e/labels.bats, pprof_shares.py label-shares).
#
# Usage: python labels_shares.py MODE [SECONDS]
#   cpu    one thread: calls of 5 to 45 ms of CPU drawn at random (seeded)
#          under endpoint=/a, endpoint=/b or no label, in the ratio 5:3:2;
#          each call's thread CPU time counted to its label.
#   wall   one thread: under endpoint=/sleep it sleeps, under
#          endpoint=/spin it computes, 3:2, and with no label it sleeps
#          (1 part); each call's wall time counted to its label.
#   async  (3.7+) an asyncio service: a task per endpoint, /compute and
#          /mixed, each request in its own pyprof.labels block with a
#          tenant; /compute computes in slices of 2 to 10 ms between
#          `await asyncio.sleep(0)`, /mixed computes 1 to 4 ms then waits
#          on a 1 ms "database" (asyncio.sleep); CPU time counted to the
#          task whose slice it was.
#   heap   allocates 24 MB under endpoint=/big and 8 MB under
#          endpoint=/small (and 4 MB with no label), and keeps it all to
#          the end (the in-use profile written at exit sees it); shares by
#          bytes kept.
#   trace  like cpu with two labels, trace_id and span_id, new for every
#          call (as an OpenTelemetry span would give them): prints the
#          number of calls and the ids used, one per line, after the JSON.
# Prints one JSON line {"shares": {value: fraction}, "seconds": {...}}
# (value "" for the work done without a label).
# Runs on Python 2.7 and 3.6+ (async: 3.7+).
from __future__ import print_function

import json
import random
import sys
import time

import pyprof

try:
    cpu_clock = time.thread_time  # 3.7+: this thread's CPU time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock  # 2.7: the process's (one thread here)

MODE = sys.argv[1]
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
if MODE == "async":
    # imported now, so that its CPU (compiling it, where no .pyc can be
    # written) counts with the start-up's, before the work
    import asyncio  # noqa: F401
rng = random.Random(4321)
spent = {}


def burn(seconds, clock=cpu_clock):
    """Computes for `seconds` of the clock; returns what it took."""
    t0 = clock()
    x = 0
    while clock() - t0 < seconds:
        for i in range(200):
            x = (x * 31 + i) % 1000003
    return clock() - t0


def count(label, dt):
    spent[label] = spent.get(label, 0.0) + dt


def pick(choices):
    total = sum(w for _, w in choices)
    r = rng.uniform(0, total)
    for v, w in choices:
        r -= w
        if r <= 0:
            return v
    return choices[-1][0]


def cpu():
    while sum(spent.values()) < SECONDS:
        ep = pick([("/a", 5), ("/b", 3), ("", 2)])
        d = rng.uniform(0.005, 0.045)
        if ep:
            with pyprof.labels(endpoint=ep):
                count(ep, burn(d))
        else:
            count(ep, burn(d))


def wall():
    while sum(spent.values()) < SECONDS:
        ep = pick([("/sleep", 3), ("/spin", 2), ("", 1)])
        d = rng.uniform(0.005, 0.045)
        t0 = time.time()
        if ep == "/spin":
            with pyprof.labels(endpoint=ep):
                burn(d, time.time)
        elif ep:
            with pyprof.labels(endpoint=ep):
                time.sleep(d)
        else:
            time.sleep(d)
        count(ep, time.time() - t0)


ASYNC = '''
import asyncio

async def compute(r):
    with pyprof.labels(endpoint="/compute", tenant="t%d" % (r % 3)):
        for _ in range(3):
            count("/compute", burn(rng.uniform(0.002, 0.010)))
            await asyncio.sleep(0)

async def query():
    await asyncio.sleep(0.001)

async def mixed(r):
    with pyprof.labels(endpoint="/mixed", tenant="t%d" % (r % 3)):
        count("/mixed", burn(rng.uniform(0.001, 0.004)))
        await query()

async def serve(handler):
    r = 0
    while sum(spent.values()) < SECONDS:
        await handler(r)
        r += 1

async def main():
    await asyncio.gather(serve(compute), serve(mixed))

loop = asyncio.new_event_loop()
loop.run_until_complete(main())
loop.close()
'''


KEPT = []


def heap():
    kept = KEPT
    for ep, mb in (("/big", 24), ("/small", 8), ("", 4)):
        def alloc():
            for _ in range(mb * 16):
                kept.append(bytearray(65536))
        if ep:
            with pyprof.labels(endpoint=ep):
                alloc()
        else:
            alloc()
        count(ep, float(mb))
    return None


def trace():
    ids = []
    while sum(spent.values()) < SECONDS:
        tid = "%032x" % rng.getrandbits(128)
        sid = "%016x" % rng.getrandbits(64)
        with pyprof.labels(trace_id=tid, span_id=sid):
            count(tid, burn(rng.uniform(0.02, 0.06)))
        ids.append((tid, sid))
    return ids


def main():
    extra = None
    if MODE in ("cpu", "async", "trace"):
        # the CPU this thread used before the work (start-up, imports):
        # samples without labels too
        count("", cpu_clock())
    if MODE == "cpu":
        cpu()
    elif MODE == "wall":
        wall()
    elif MODE == "async":
        exec(ASYNC, globals())
    elif MODE == "heap":
        extra = heap()
    elif MODE == "trace":
        extra = trace()
    else:
        sys.exit("labels_shares.py: unknown mode %r" % MODE)
    total = sum(spent.values())
    print(json.dumps({"shares": dict((k, v / total)
                                     for k, v in spent.items()),
                      "seconds": spent}))
    if MODE == "trace":
        for tid, sid in extra:
            print(tid, sid)
    sys.stdout.flush()


main()
