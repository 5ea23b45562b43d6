# threads_cpu.py - four threads burning CPU at once, each in its own
# function, one of them in C with the GIL released; every thread measures
# its own CPU time.
#
# Used by tests/e2e/threads.bats: in CPU mode each function's share of the
# samples must be within 3 points of its thread's share of the CPU time
# measured here, and the profile's CPU total must agree with the kernel's
# count for the process (getrusage, printed at the end).
#
# Usage: python threads_cpu.py [SECONDS]   (wall seconds, default 3)
# Prints one JSON line: {"shares": {func: fraction}, "seconds": {func: CPU
# seconds}, "process_cpu": kernel's user+sys for the process,
# "user_shares" and "user_seconds": the same for user-mode time only, ...}.
#
# The three Python functions share the GIL with different duty cycles
# (busy all the time, 60%, 30%: they sleep the rest), so their shares
# differ; c_nogil spends almost all its time in C with the GIL released
# (hashlib.sha256 or zlib.compress over big buffers, see tclock.py), so it
# runs on a core of its own next to them. Per-thread CPU
# time: time.thread_time on 3.7+, clock_gettime(CLOCK_THREAD_CPUTIME_ID)
# through ctypes before (tclock.py). Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import sys
import threading
import time

from tclock import (THREAD_CLOCK, c_work_nogil, library_cpu, process_cpu,
                    process_user_cpu, thread_cpu, thread_user_cpu)

spent = {}
spent_user = {}


def burn(n):
    x = 0
    i = 0
    while i < n:
        x = (x * 31 + i) % 1000003
        i += 1
    return x


def duty(name, deadline, busy_fraction):
    """Compute for busy_fraction of each 40 ms of wall time, sleep the
    rest, until the deadline; record this thread's CPU time."""
    t0, u0 = thread_cpu(), thread_user_cpu()
    period = 0.04
    while time.time() < deadline:
        start = time.time()
        while time.time() - start < period * busy_fraction:
            burn(300)
        rest = period - (time.time() - start)
        if rest > 0 and busy_fraction < 1.0:
            time.sleep(rest)
    spent[name] = thread_cpu() - t0
    spent_user[name] = thread_user_cpu() - u0


def py_full(deadline):
    duty("py_full", deadline, 1.0)


def py_sixty(deadline):
    duty("py_sixty", deadline, 0.6)


def py_thirty(deadline):
    duty("py_thirty", deadline, 0.3)


C_WHAT, C_WORK = c_work_nogil()


def c_nogil(deadline):
    t0, u0 = thread_cpu(), thread_user_cpu()
    while time.time() < deadline:
        C_WORK()
    spent["c_nogil"] = thread_cpu() - t0
    spent_user["c_nogil"] = thread_user_cpu() - u0


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    deadline = time.time() + seconds
    funcs = [py_full, py_sixty, py_thirty, c_nogil]
    threads = [threading.Thread(target=f, args=(deadline,), name=f.__name__)
               for f in funcs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = sum(spent.values())
    print(json.dumps({
        "shares": dict((k, v / total) for k, v in spent.items()),
        "seconds": spent,
        "process_cpu": process_cpu(),
        "library_cpu": library_cpu(),
        "process_user_cpu": process_user_cpu(),
        "user_shares": dict((k, v / sum(spent_user.values()))
                            for k, v in spent_user.items()),
        "user_seconds": spent_user,
        "thread_clock": THREAD_CLOCK,
        "c_work": C_WHAT,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
