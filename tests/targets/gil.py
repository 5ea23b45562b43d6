# gil.py - three threads: one computing in Python (holds the GIL), one
# working in C with the GIL released (tclock.c_work_nogil: hashlib.sha256
# or zlib.compress over big buffers), one sleeping.
#
# Used by tests/e2e/threads.bats: in wall mode the samples of gil_compute
# must be labelled gil=held, those of gil_c and gil_sleep gil=released.
#
# Usage: python gil.py [SECONDS]   (wall seconds, default 1.5)
# Prints one JSON line with the CPU time of each thread (tclock.py).
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import sys
import threading
import time

from tclock import c_work_nogil, thread_cpu

spent = {}


def gil_compute(deadline):
    t0 = thread_cpu()
    x = 0
    while time.time() < deadline:
        for i in range(300):
            x = (x * 31 + i) % 1000003
    spent["gil_compute"] = thread_cpu() - t0


C_WHAT, C_WORK = c_work_nogil()


def gil_c(deadline):
    t0 = thread_cpu()
    while time.time() < deadline:
        C_WORK()
    spent["gil_c"] = thread_cpu() - t0


def gil_sleep(deadline):
    t0 = thread_cpu()
    while time.time() < deadline:
        time.sleep(0.02)
    spent["gil_sleep"] = thread_cpu() - t0


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    deadline = time.time() + seconds
    threads = [threading.Thread(target=f, args=(deadline,), name=f.__name__)
               for f in (gil_compute, gil_c, gil_sleep)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.05)
    print(json.dumps({"cpu": spent, "c_work": C_WHAT}, sort_keys=True))


if __name__ == "__main__":
    main()
