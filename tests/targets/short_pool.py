# short_pool.py - a multiprocessing pool of 3 workers with the start method
# METHOD ("default": the interpreter's own, forkserver from 3.14 on
# Linux), 12 tasks of 20 ms, closed and joined; for tests/e2e/short.bats
# (multiprocessing's helpers, the forkserver and the resource tracker,
# end just after the main process: no daemon warning, every worker in
# the summary).
#
# Usage: python short_pool.py METHOD
# Prints "method NAME" and "workers PID PID PID" (every worker started).
# Runs on Python 2.7 ("default" only) and 3.6+.
from __future__ import print_function

import multiprocessing as mp
import os
import sys
import time


def work(i):
    end = time.time() + 0.02
    while time.time() < end:
        pass
    return os.getpid()


if __name__ == "__main__":
    method = sys.argv[1]
    if method == "default":
        ctx = mp
        name = mp.get_start_method() if hasattr(mp, "get_start_method") \
            else "fork"
    else:
        ctx = mp.get_context(method)
        name = method
    print("method %s" % name)
    pool = ctx.Pool(3)
    workers = [w.pid for w in pool._pool]
    pool.map(work, range(12))
    pool.close()
    pool.join()
    print("workers %s" % " ".join(str(p) for p in workers))
    sys.stdout.flush()
