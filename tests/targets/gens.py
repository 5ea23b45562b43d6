"""gens.py SECONDS - a generator- and coroutine-heavy program for the
whole-chain test (frames.bats): nested generators, yield from, async
generators, coroutines driven by asyncio and by send(), each in turn for
about SECONDS of CPU in all. Every sample's stack must end at the root in
this script's <module> frame (or be marked [truncated]). Runs on 2.7 too
(the parts a version lacks are skipped)."""

import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def leaf_gen(k):
    for i in range(k):
        yield spin(20)


def mid_gen(k):
    for v in leaf_gen(k):
        yield v


def nested(deadline):
    while time.time() < deadline:
        for _ in mid_gen(50):
            pass


def drive_send(deadline):
    def acc():
        total = 0
        while True:
            v = yield total
            total += spin(v)
    g = acc()
    next(g)
    while time.time() < deadline:
        for _ in range(50):
            g.send(20)


PARTS = [nested, drive_send]

if sys.version_info >= (3, 3):
    exec(compile('''
def outer_gen(k):
    yield from mid_gen(k)
    return 0


def yield_from(deadline):
    while time.time() < deadline:
        for _ in outer_gen(50):
            pass
''', __file__, 'exec'))
    PARTS.append(yield_from)

if sys.version_info >= (3, 7):
    exec(compile('''
import asyncio


async def co_leaf(n):
    return spin(n)


async def agen(k):
    for i in range(k):
        yield await co_leaf(20)


async def co_main(deadline):
    while time.time() < deadline:
        async for _ in agen(50):
            pass
        await asyncio.sleep(0)


def by_asyncio(deadline):
    asyncio.run(co_main(deadline))


def by_send(deadline):
    while time.time() < deadline:
        c = co_leaf(200)
        try:
            c.send(None)
        except StopIteration:
            pass
''', __file__, 'exec'))
    PARTS += [by_asyncio, by_send]


def main():
    share = SECONDS / len(PARTS)
    for part in PARTS:
        part(time.time() + share)


main()
