"""tests/bench/async_waiting.py - an asyncio service with many waiting
tasks, for the cost of the asyncio view in wall mode (tests/bench/run).

TASKS tasks each loop on handler -> query -> asyncio.sleep (1 to 20 ms,
seeded), three coroutines deep, all gathered by main; one more task
computes in 2 ms slices between `await asyncio.sleep(0)` until it has done
WORK slices. Prints two numbers: the CPU seconds of the main thread (the
program's own: time.thread_time) and of the whole process
(time.process_time, which includes the library's threads: the wall
sampler reading the tasks).
Usage: async_waiting.py [TASKS] [WORK] [--py]
  --py: the tasks are pure-Python ones (asyncio.tasks._PyTask), whose
  fields the view reads from their instance dictionaries.
"""
import asyncio
import random
import sys
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
TASKS = int(args[0]) if len(args) > 0 else 200
WORK = int(args[1]) if len(args) > 1 else 600
if "--py" in sys.argv:
    asyncio.tasks.Task = asyncio.Task = asyncio.tasks._PyTask
DONE = []


async def query(rng):
    await asyncio.sleep(rng.uniform(0.001, 0.02))


async def handler(rng):
    await query(rng)


async def waiter(seed):
    rng = random.Random(seed)
    while not DONE:
        await handler(rng)


def slice_2ms():
    t0 = time.perf_counter()
    x = 0
    while time.perf_counter() - t0 < 0.002:
        x += sum(range(100))
    return x


async def worker():
    for _ in range(WORK):
        slice_2ms()
        await asyncio.sleep(0)
    DONE.append(1)


async def main():
    await asyncio.gather(worker(), *(waiter(i) for i in range(TASKS)))


t0, p0 = time.thread_time(), time.process_time()
asyncio.run(main())
print("%.4f %.4f" % (time.thread_time() - t0, time.process_time() - p0))
