# asyncio_tasks.py - an asyncio service whose tasks' wall time the
# program measures itself, for the asyncio view of wall mode
# (tests/e2e/asyncio.bats, docs/asyncio.md).
#
# Usage: python asyncio_tasks.py [SECONDS] [--labels] [--tasks=KIND]
#   Two endpoints, a task each, both awaited by main() through
#   asyncio.gather:
#     slow     handler() -> query() -> asyncio.sleep(0.05), in a loop: a
#              request waiting on a slow "database";
#     compute  computes for 20 ms, then waits 30 ms (asyncio.sleep), in a
#              loop.
#   --labels: each request runs in a pyprof.labels(endpoint=...) block.
#   --tasks=KIND: which Task class the tasks are (asyncio's C Task by
#     default):
#       py        the pure-Python one, asyncio.tasks._PyTask, put in
#                 place of asyncio.Task before any task is made; slow's
#                 instance dict is made (vars()), compute's given 40 more
#                 attributes (a combined table) and keys that are not the
#                 interned names;
#       factory   _PyTask from a task factory (loop.set_task_factory);
#                 main() itself, made by asyncio.run, stays a C task;
#       noext     the pure-Python one because the _asyncio extension is
#                 missing (blocked in sys.modules before asyncio loads);
#       subclass  a subclass of the C Task written in Python (as
#                 libraries do), from a task factory.
#     The JSON line's "class" says which it was: "python Task", "c MyTask".
#
# The rule the view follows: while a task runs, the thread's time is that
# task's; while the event loop waits, the time is split equally among the
# tasks that wait on no other task (here slow and compute; main waits on
# them). So compute's share is (busy + idle / 2) / T and slow's is
# idle / 2 / T, where busy is compute's own measured computing time and
# idle the rest of the run.
#
# Prints one JSON line {"shares": {"compute": f, "slow": f}, "seconds":
# {...}}. Tasks are named on 3.8+; on 3.7 (no task names) the view names
# them by their coroutine's function, so the names here are those too.

import sys

TASKS = "c"
for a in sys.argv[1:]:
    if a.startswith("--tasks="):
        TASKS = a.split("=", 1)[1]
if TASKS == "noext":
    sys.modules["_asyncio"] = None  # import _asyncio fails: pure Python

import asyncio
import json
import time

if TASKS == "py":
    asyncio.tasks.Task = asyncio.Task = asyncio.tasks._PyTask
elif TASKS == "subclass":
    class MyTask(asyncio.Task):
        pass

DEADLINE = [0.0]
KIND = [""]
BUSY = [0.0]
LABELS = "--labels" in sys.argv
args = [a for a in sys.argv[1:] if not a.startswith("--")]
SECONDS = float(args[0]) if args else 3.0

if LABELS:
    import pyprof

    def block(name):
        return pyprof.labels(endpoint="/" + name)
else:
    class block(object):
        def __init__(self, name):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


def spin(seconds):
    t0 = time.perf_counter()
    x = 0
    while time.perf_counter() - t0 < seconds:
        for i in range(200):
            x += i * i
    return x


async def query():
    await asyncio.sleep(0.05)


async def handler():
    await query()


async def slow():
    while time.perf_counter() < DEADLINE[0]:
        with block("slow"):
            await handler()


async def compute():
    while time.perf_counter() < DEADLINE[0]:
        with block("compute"):
            t0 = time.perf_counter()
            spin(0.02)
            BUSY[0] += time.perf_counter() - t0
            await asyncio.sleep(0.03)


def start(loop, coro, name):
    if sys.version_info >= (3, 8):
        return loop.create_task(coro, name=name)
    return loop.create_task(coro)


def factory(loop, coro, **kw):
    cls = MyTask if TASKS == "subclass" else asyncio.tasks._PyTask
    return cls(coro, loop=loop, **kw)


async def main():
    loop = asyncio.get_event_loop()
    if TASKS in ("factory", "subclass"):
        loop.set_task_factory(factory)
    t0 = time.perf_counter()
    DEADLINE[0] = t0 + SECONDS
    tasks = [start(loop, slow(), "slow"), start(loop, compute(), "compute")]
    KIND[0] = ("python " if isinstance(tasks[0], asyncio.tasks._PyTask)
               else "c ") + type(tasks[0]).__name__
    if TASKS == "py":
        # the instance dictionaries in their other shapes: slow's made
        # (3.11+ keep attributes without one until asked), compute's
        # with more attributes than a class shares keys for (combined),
        # its keys new strings, not the interned names (the profiler
        # then knows them by their text)
        vars(tasks[0])
        for i in range(40):
            setattr(tasks[1], "extra_%d" % i, i)
        tasks[1].__dict__ = {k[:1] + k[1:]: v
                             for k, v in vars(tasks[1]).items()}
    await asyncio.gather(*tasks)
    return time.perf_counter() - t0


total = asyncio.run(main())
idle = max(total - BUSY[0], 0.0)
shares = {"compute": (BUSY[0] + idle / 2) / total, "slow": idle / 2 / total}
print(json.dumps({"shares": shares,
                  "seconds": {"total": total, "busy": BUSY[0]},
                  "class": KIND[0]}))
