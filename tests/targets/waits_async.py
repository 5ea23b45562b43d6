# waits_async.py - asyncio tasks that block the event loop on a
# threading.Lock another thread holds: each task serves its own endpoint
# inside pyprof.labels(endpoint=...), so its waits should carry that
# label (the labels of the task whose code waited).
#
# Used by tests/e2e/waits.bats (labels on waits). The holder thread
# holds the lock 4 ms at a time with 1 ms gaps; the tasks /a and /b take
# it 30 times each (pausing 3 and 1.7 ms in between, so that both find
# it held), timing every acquire with time.perf_counter().
# Prints one JSON line: {"/a": seconds waited, "/b": seconds waited}.
# Needs the pyprof module on PYTHONPATH; Python 3.8+.
import asyncio
import json
import threading
import time

import pyprof

lock = threading.Lock()
waited = {"/a": 0.0, "/b": 0.0}


def holder(started, stop):
    while not stop.is_set():
        with lock:
            started.set()
            time.sleep(0.004)
        time.sleep(0.001)


async def serve(endpoint, n, pause):
    with pyprof.labels(endpoint=endpoint):
        for _ in range(n):
            t0 = time.perf_counter()
            lock.acquire()
            waited[endpoint] += time.perf_counter() - t0
            lock.release()
            await asyncio.sleep(pause)


async def main():
    await asyncio.gather(serve("/a", 30, 0.003), serve("/b", 30, 0.0017))


started, stop = threading.Event(), threading.Event()
t = threading.Thread(target=holder, args=(started, stop))
t.start()
started.wait()
asyncio.run(main())
stop.set()
t.join()
print(json.dumps(waited))
