"""dump_outside.py STOPFILE [STATUS] - a process for `pyprof dump` read
from outside (dump_outside.bats), on every version from 2.7: three named
threads (their OS names set with prctl, as 3.14 does for threading's
names), each in a known function on a marked line: one asleep in a loop,
one at the bottom of an 800-deep recursion, one inside a generator.
Prints "ready" once all three are in place, then waits for STOPFILE to
exist, stops the threads, prints "done" and exits with STATUS (default
3): the test checks that the dump changed nothing of that."""

import ctypes
import os
import sys
import threading
import time

STOP = sys.argv[1]
STATUS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
DEPTH = 800
stop = threading.Event()
placed = []
sys.setrecursionlimit(10000)


def os_name(name):
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)
    except Exception:
        pass


def in_alpha():
    placed.append("alpha")
    while not stop.is_set():
        time.sleep(0.01)  # @alpha


def deep(n):
    if n == 0:
        return deep_bottom()
    return deep(n - 1)  # @deep


def deep_bottom():
    placed.append("deep")
    while not stop.is_set():
        time.sleep(0.01)  # @bottom


def gen_sleeper():
    placed.append("gen")
    while not stop.is_set():
        time.sleep(0.01)  # @gen
        yield 1


def consume():
    for _ in gen_sleeper():  # @consume
        pass


def run(name, fn):
    os_name(name)
    fn()


threads = [threading.Thread(target=run, args=(n, f), name=n)
           for n, f in (("worker-alpha", in_alpha),
                        ("worker-deep", lambda: deep(DEPTH)),
                        ("worker-gen", consume))]
for t in threads:
    t.start()
while len(placed) < 3:
    time.sleep(0.01)
sys.stdout.write("ready\n")
sys.stdout.flush()
while not os.path.exists(STOP):
    time.sleep(0.02)  # @main
stop.set()
for t in threads:
    t.join()
sys.stdout.write("done\n")
sys.stdout.flush()
sys.exit(STATUS)
