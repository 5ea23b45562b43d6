# coroutine.py - coroutines driven by asyncio's event loop: the loop's own
# frames (asyncio.run, run_until_complete, _run_once, ...), then the task's
# coroutine and the coroutine it awaits. The hot coroutine yields to the
# loop after every chunk, so the loop resumes it again and again.
# Python 3.6 has no asyncio.run: run_until_complete.
#
# @python 3.6-
# @expect[3.7-] <module> @module_run
# @expect[-3.6] <module> @module_run_until_complete
# @expect ...
# @expect main @main_await
# @expect spin @spin_hot
import asyncio

from _clock import cpu_clock, deadline


async def spin(limit):
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * 31 + i) % 1000003  # @spin_hot
        await asyncio.sleep(0)
    return x


async def main(limit):
    return await spin(limit)  # @main_await


if hasattr(asyncio, "run"):
    asyncio.run(main(deadline()))  # @module_run
else:
    loop = asyncio.get_event_loop()
    loop.run_until_complete(main(deadline()))  # @module_run_until_complete
    loop.close()
