# asyncio_churn.py - tasks made and finished as fast as asyncio can, while
# the wall sampler reads them (tests/e2e/asyncio.bats): short tasks that
# await short tasks through gather, wait_for and shield, cancelled tasks,
# tasks renamed while they run. Prints a checksum of the results, the same
# with or without the profiler.
# Usage: python asyncio_churn.py [SECONDS] [--py]
#   --py: asyncio in pure Python (the _asyncio extension blocked), so the
#   tasks are asyncio.tasks._PyTask, whose fields the sampler reads from
#   instance dictionaries that change while it reads them. (Only that
#   setup is whole on 3.14+, whose C current_task() does not see a
#   _PyTask put in place of the C Task: wait_for fails there.)
import sys

if "--py" in sys.argv:
    sys.modules["_asyncio"] = None

import asyncio
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
SECONDS = float(args[0]) if args else 2.0


async def leaf(i):
    await asyncio.sleep(0)
    if hasattr(asyncio.current_task(), "set_name"):
        asyncio.current_task().set_name("leaf-%d-\u00e9\u4e2d" % i)
    await asyncio.sleep(0.0001 * (i % 3))
    return i


async def middle(i):
    a, b = await asyncio.gather(leaf(i), leaf(i + 1))
    c = await asyncio.wait_for(leaf(i + 2), 5)
    d = await asyncio.shield(asyncio.ensure_future(leaf(i + 3)))
    return a + b + c + d


async def doomed():
    await asyncio.sleep(10)


async def main():
    total, n = 0, 0
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        victims = [asyncio.ensure_future(doomed()) for _ in range(5)]
        results = await asyncio.gather(*(middle(n + k) for k in range(20)))
        for v in victims:
            v.cancel()
        await asyncio.gather(*victims, return_exceptions=True)
        total += sum(results)
        n += 20
    # the count varies with the machine's speed; the checksum's rule not
    print("ok", total == sum(4 * i + 6 for i in range(n)))


asyncio.run(main())
