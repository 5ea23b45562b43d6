"""tests/bench/async_labels.py - an asyncio service's work, labelled or not.

Runs TASKS tasks that each handle REQUESTS "requests": a little CPU work
(building and sorting a list, formatting) and an `await asyncio.sleep(0)`
between steps, as a request handler awaiting I/O would. With argument
`labels` each request runs inside `pyprof.labels(endpoint=..., tenant=...)`
(the endpoint per task, the tenant per request); with `plain` it does not.
Prints the CPU seconds of the work (the process's CPU clock), which the
bench compares between the two under the same profiler.
Usage: async_labels.py plain|labels [SCALE]
"""
import asyncio
import sys
import time

import pyprof

MODE = sys.argv[1]
SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
TASKS = 8
REQUESTS = 300 * SCALE


def work(i):
    xs = [(i * 7919 + k * 104729) % 1009 for k in range(300)]
    xs.sort()
    return ",".join(str(x) for x in xs[:50])


async def handle(endpoint, r):
    for step in range(4):
        work(r + step)
        await asyncio.sleep(0)


async def serve(t):
    endpoint = "/api/%d" % t
    for r in range(REQUESTS):
        if MODE == "labels":
            with pyprof.labels(endpoint=endpoint, tenant="t%d" % (r % 10)):
                await handle(endpoint, r)
        else:
            await handle(endpoint, r)


async def main():
    await asyncio.gather(*(serve(t) for t in range(TASKS)))


t0 = time.process_time()
asyncio.run(main())
print("%.6f" % (time.process_time() - t0))
