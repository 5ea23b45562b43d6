# asyncio_shapes.py - tasks waiting for tasks in each way asyncio offers,
# for the asyncio view's await chains (tests/e2e/asyncio.bats).
#
# Usage: python asyncio_shapes.py [SECONDS]
#   main() starts one parent task per shape; each parent waits for a child
#   task that sleeps (asyncio.sleep) until the end:
#     by_await      await child_await()'s task directly
#     by_gather     asyncio.gather(child_gather())
#     by_shield     asyncio.shield(a task of child_shield())
#     by_wait_for   asyncio.wait_for(child_wait_for(), timeout)
#     by_group      async with asyncio.TaskGroup(): child_group()  (3.11+)
# A sample of a waiting child should read, leaf first: sleep, child_X,
# then by_X (its waiter), then main (waiting for the parents), then the
# event loop. Prints the shapes it ran, one per line.
import asyncio
import sys

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
STOP = []


async def nap():
    while not STOP:
        await asyncio.sleep(0.05)


async def child_await():
    await nap()


async def child_gather():
    await nap()


async def child_shield():
    await nap()


async def child_wait_for():
    await nap()


async def child_group():
    await nap()


async def by_await():
    await asyncio.ensure_future(child_await())


async def by_gather():
    await asyncio.gather(child_gather())


async def by_shield():
    await asyncio.shield(asyncio.ensure_future(child_shield()))


async def by_wait_for():
    await asyncio.wait_for(child_wait_for(), SECONDS * 10)


async def by_group():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(child_group())


async def main():
    shapes = [by_await, by_gather, by_shield, by_wait_for]
    if sys.version_info >= (3, 11):
        shapes.append(by_group)
    parents = [asyncio.ensure_future(s()) for s in shapes]
    await asyncio.sleep(SECONDS)
    STOP.append(1)
    await asyncio.gather(*parents)
    for s in shapes:
        print(s.__name__[3:])


asyncio.run(main())
