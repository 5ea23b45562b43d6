# systime.py - four functions, two of which spend much of their time in the
# kernel, each timed by the program itself with its thread's CPU clock
# (user + system time, what a profiler of CPU time must add up to).
#
# Used by tests/e2e/systime.bats: at 250 Hz, 1 kHz and 4 kHz
# (the CPU-clock sampler) each function's share of the
# samples must be within 1 point of the share measured here, so time in
# system calls and page faults must be counted as it is spent.
#
#   py_loop     pure Python arithmetic
#   c_heavy     sorted() and zlib.compress over prepared data (C, user time)
#   sys_pread   16 KiB os.pread calls on a cached file (system calls)
#   sys_fault   4 MiB copied into a fresh anonymous mapping, then unmapped
#               (pages faulted in and given back: mostly kernel)
#
# With "matrix" (tests/e2e/systime.bats's truth matrix, run pinned to one
# CPU beside a busy load), seven functions, one of each kind of CPU time a
# profiler must place, taken in turns by four threads at once (the main
# thread and three others, each its own seeded random order):
#
#   py_loop     pure Python (as above)
#   c_zlib      zlib.compress (C that releases the GIL on 3.x)
#   c_hash      hashlib.sha256 (OpenSSL's releases the GIL; the builtin
#               one of pyenv's 2.7 and 3.6 keeps it)
#   c_gil       sorted() of a shuffled list (C that keeps the GIL)
#   sys_pread   as above (system calls)
#   sys_fault   as above (page faults)
#   sleeps      1 ms sleeps (off CPU: its share is the little CPU it uses,
#               and the time a thread ran before it must not land in it)
#
# Blocks are BLOCK_PERIODS sampling periods of CPU (PYPROF_HZ, as the
# library reads it) and at least 40 ms: at 100 Hz a block of 40 ms is 4
# samples, and each block boundary moves a sample by up to one, so longer
# blocks keep the test's own noise well under its tolerance; calls are
# of one length for every function (CALL_SECONDS).
#
# Usage: python systime.py SECONDS [threads|matrix]
#   SECONDS of the program's CPU in all; the functions take turns in blocks
#   (as in the matrix: BLOCK_PERIODS periods, calls of CALL_SECONDS; the
#   sampling noise at 250 Hz was 0.31 points with 40 ms blocks of short
#   calls, 0.21 with longer ones), in a seeded random order with sizes drawn
#   at random (so no pattern lines up with the sampling), on the main
#   thread; with "threads", each function runs on a thread of its own
#   (under t_py_loop, t_c_heavy, t_sys_pread, t_sys_fault), all four at
#   once, until each has used SECONDS/4 of CPU in its function; the
#   shares are then the threads' (each thread's whole CPU time, its
#   bookkeeping included: the split between threads).
# Prints one JSON line: {"shares": {name: fraction}, "seconds": {...},
# "system": {name: fraction of its time in the kernel}, ...}.
#
# Runs on Python 2.7 and 3.6+ (tclock.py: the per-thread clocks).
from __future__ import print_function

import json
import mmap
import os
import random
import sys
import tempfile
import threading
import time
import zlib
import hashlib

from tclock import THREAD_CLOCK, thread_cpu, thread_user_cpu

BLOCK = 0.04
DATA = list(range(20000))
random.Random(7).shuffle(DATA)
BLOB = os.urandom(1 << 16) + b"pyprof systime " * 8000
ZEROS = b"\0" * (4 << 20)


def py_loop(n):
    x = 0
    i = 0
    while i < n * 40000:
        x = (x * 31 + i) % 1000003
        i += 1
    return x


def c_heavy(n):
    for _ in range(n):
        sorted(DATA)
        zlib.compress(BLOB, 6)


def c_zlib(n):
    for _ in range(n):
        zlib.compress(BLOB, 6)


HASH_BLOB = os.urandom(1 << 20)


def c_hash(n):
    for _ in range(n * 6):
        hashlib.sha256(HASH_BLOB).digest()


def c_gil(n):
    for _ in range(n * 3):
        sorted(DATA)


def sleeps(n):
    for _ in range(n * 4):
        time.sleep(0.001)


def _pread(fd, off):
    if hasattr(os, "pread"):
        return os.pread(fd, 16384, off)
    os.lseek(fd, off, 0)
    return os.read(fd, 16384)


def sys_pread(n, fd):
    for i in range(n * 2000):
        _pread(fd, (i * 16384) % (1 << 20))


def sys_fault(n):
    for _ in range(n):
        m = mmap.mmap(-1, len(ZEROS))
        m.write(ZEROS)
        m.close()


def make_file():
    f = tempfile.TemporaryFile()
    f.write(os.urandom(1 << 20))
    f.flush()
    return f


class Account(object):
    def __init__(self):
        self.cpu = {}
        self.user = {}
        self.units = {}

    def add(self, name, fn, units, *args):
        """One call of fn (units, args), its CPU and user time added to
        name's."""
        c0, u0 = thread_cpu(), thread_user_cpu()
        fn(units, *args)
        c1, u1 = thread_cpu(), thread_user_cpu()
        self.cpu[name] = self.cpu.get(name, 0.0) + (c1 - c0)
        self.user[name] = self.user.get(name, 0.0) + (u1 - u0)
        self.units[name] = self.units.get(name, 0) + units


def calls(fd):
    return {"py_loop": (py_loop,), "c_heavy": (c_heavy,),
            "sys_pread": (sys_pread, fd), "sys_fault": (sys_fault,)}


def matrix_calls(fd):
    t = calls(fd)
    del t["c_heavy"]
    t.update({"c_zlib": (c_zlib,), "c_hash": (c_hash,), "c_gil": (c_gil,),
              "sleeps": (sleeps,)})
    return t


def block_seconds():
    hz = os.environ.get("PYPROF_HZ", "")
    hz = float(hz) if hz.isdigit() and int(hz) > 0 else 100.0
    return max(BLOCK, BLOCK_PERIODS / hz)


BLOCK_PERIODS = 15
# Calls of about CALL_SECONDS of CPU (0.5 to 1.5 times that, at random),
# the same for every function, in the matrix and the main mode. The
# program's own clock reads around each call are system calls, where a
# thread on a busy CPU is often preempted (the kernel notices a used-up
# time slice there), so a profiler that looks at it from outside while it
# waits for the CPU finds it at the read after a call more often than the
# time spent there would say, carrying up to a period of the call's time
# out of the function (docs/design.md, "Past the tick"). Each call loses
# that once, so calls of different lengths would lose different parts of
# their functions' time: with calls of 4 to 10 units of each function
# (1.4 ms a unit for zlib, 8 ms for sorted) the mean errors over 10 runs
# at 1 kHz on 3.11 were zlib -0.38 and sorted +0.30 points; with twice
# the units, -0.24 and +0.08. Calls of one length make the measurement
# cost every function the same part, which the shares among them cancel.
# A function's units per call come from its CPU per unit so far (its
# first call is one unit: the measure).
CALL_SECONDS = 0.02


def call_units(acct, name, rnd):
    done = acct.units.get(name, 0)
    if not done:
        return 1
    per_unit = acct.cpu[name] / done
    if per_unit <= 0:
        return 1
    want = CALL_SECONDS * rnd.uniform(0.5, 1.5)
    return max(1, int(round(want / per_unit)))


def one_block(acct, name, call, rnd, block=BLOCK, units=(1, 3)):
    """About block seconds of CPU in function name, in calls of a random
    number of units each (20 to 60% of a 40 ms block with the default;
    units=None: calls of about CALL_SECONDS each); sleeps: a few calls."""
    fn, args = call[0], call[1:]
    if fn is sleeps:
        for _ in range(rnd.randint(2, 5)):
            acct.add(name, fn, rnd.randint(1, 3), *args)
        return
    spent = 0.0
    while spent < block * rnd.uniform(0.7, 1.3):
        before = acct.cpu.get(name, 0.0)
        n = call_units(acct, name, rnd) if units is None else rnd.randint(*units)
        acct.add(name, fn, n, *args)
        spent += acct.cpu[name] - before


def run_main(seconds, fd):
    acct = Account()
    rnd = random.Random(1)
    table = calls(fd)
    names = sorted(table)
    block = block_seconds()
    while sum(acct.cpu.values()) < seconds:
        rnd.shuffle(names)
        for name in names:
            one_block(acct, name, table[name], rnd, block, None)
    return acct


def thread_work(name, seconds, fd, out):
    """name's blocks on this thread until it used seconds of CPU; out
    gets the thread's whole CPU time (the blocks and their bookkeeping)."""
    own = Account()
    rnd = random.Random(name)
    t0 = thread_cpu()
    while own.cpu.get(name, 0.0) < seconds:
        one_block(own, name, calls(fd)[name], rnd)
    out["t_" + name] = (thread_cpu() - t0, own.user[name] / own.cpu[name])


# One function per thread, so that a profile tells the threads apart by
# their stacks: the threaded variant checks the split between threads.
def t_py_loop(*a):
    thread_work("py_loop", *a)


def t_c_heavy(*a):
    thread_work("c_heavy", *a)


def t_sys_pread(*a):
    thread_work("sys_pread", *a)


def t_sys_fault(*a):
    thread_work("sys_fault", *a)


def matrix_work(seconds, fd, seed, out):
    """The matrix's blocks in a random order on this thread until it used
    seconds of CPU in them; out[seed] gets its account."""
    acct = Account()
    rnd = random.Random(seed)
    table = matrix_calls(fd)
    names = sorted(table)
    block = block_seconds()
    while sum(acct.cpu.values()) < seconds:
        rnd.shuffle(names)
        for name in names:
            one_block(acct, name, table[name], rnd, block, None)
            if sum(acct.cpu.values()) >= seconds:
                break
    out[seed] = acct


def run_matrix(seconds, fd):
    out = {}
    threads = [threading.Thread(target=matrix_work,
                                args=(seconds / 4.0, fd, i, out),
                                name="matrix-%d" % i) for i in (1, 2, 3)]
    for t in threads:
        t.start()
    matrix_work(seconds / 4.0, fd, 0, out)
    for t in threads:
        t.join()
    acct = Account()
    for one in out.values():
        for k in one.cpu:
            acct.cpu[k] = acct.cpu.get(k, 0.0) + one.cpu[k]
            acct.user[k] = acct.user.get(k, 0.0) + one.user[k]
    return acct


def run_threads(seconds, fd):
    out = {}
    fns = [t_c_heavy, t_py_loop, t_sys_fault, t_sys_pread]
    threads = [threading.Thread(target=f, args=(seconds / 4.0, fd, out),
                                name=f.__name__) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acct = Account()
    for k, (cpu, user_frac) in out.items():
        acct.cpu[k] = cpu
        acct.user[k] = cpu * user_frac
    return acct


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    mode = sys.argv[2] if len(sys.argv) > 2 else "main"
    threaded = mode == "threads"
    f = make_file()
    run = {"main": run_main, "threads": run_threads,
           "matrix": run_matrix}[mode]
    acct = run(seconds, f.fileno())
    total = sum(acct.cpu.values())
    print(json.dumps({
        "shares": dict((k, v / total) for k, v in acct.cpu.items()),
        "seconds": acct.cpu,
        "system": dict((k.replace("t_", "", 1),
                        1.0 - acct.user[k] / v if v else 0.0)
                       for k, v in acct.cpu.items()),
        "thread_clock": THREAD_CLOCK,
        "threads": threaded,
        "mode": mode,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
