# blocked.py - threads blocked in system calls that report EINTR instead
# of retrying, and a thread measuring how accurately time.sleep wakes up.
#
# Used by tests/e2e/threads.bats: run without the library and in wall
# mode, it must count the same EINTRs (none) and wake from time.sleep as
# accurately. --control N proves that the counting works: the program
# then interrupts each blocked thread N times itself (pthread_kill with
# SIGUSR1, for which it installs a Python handler) and must count N EINTRs
# per thread.
#
# Usage: python blocked.py [SECONDS] [--control N]   (default 1.0)
# Prints one JSON line: {"eintr": {call: count}, "sleep": {"n", "median_ms",
# "p90_ms", "max_ms" (oversleep of time.sleep(0.01))}, ...}.
#
# The calls go straight to libc through ctypes (the GIL is released), so
# that no Python-level retry (PEP 475) hides an EINTR: read() on a pipe
# (restarted by the kernel only under SA_RESTART), and nanosleep() and
# poll() (never restarted: any handled signal makes them fail with EINTR).
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import ctypes
import errno
import json
import os
import signal
import sys
import threading
import time

from tclock import libc

libc = libc()
libc.pthread_kill.argtypes = [ctypes.c_ulong, ctypes.c_int]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short),
                ("revents", ctypes.c_short)]


eintr = {"read": 0, "nanosleep": 0, "poll": 0}
other_errors = []
stop = threading.Event()
calls = {"read": 0, "nanosleep": 0, "poll": 0}


def failed(call):
    e = ctypes.get_errno()
    if e == errno.EINTR:
        eintr[call] += 1
    else:
        other_errors.append("%s: %s" % (call, os.strerror(e)))


def blocked_read(fd):
    buf = ctypes.create_string_buffer(1)
    while True:
        calls["read"] += 1
        n = libc.read(fd, buf, 1)
        if n >= 0:
            return
        failed("read")


def blocked_nanosleep():
    while not stop.is_set():
        calls["nanosleep"] += 1
        ts = Timespec(0, 50 * 1000000)
        rem = Timespec(0, 0)
        if libc.nanosleep(ctypes.byref(ts), ctypes.byref(rem)) != 0:
            failed("nanosleep")


def blocked_poll(fd):
    pfd = PollFd(fd, 1, 0)  # POLLIN, never ready
    while not stop.is_set():
        calls["poll"] += 1
        if libc.poll(ctypes.byref(pfd), 1, 50) < 0:
            failed("poll")


def on_usr1(sig, frame):
    pass


def main():
    args = sys.argv[1:]
    control = 0
    if "--control" in args:
        i = args.index("--control")
        control = int(args[i + 1])
        del args[i:i + 2]
    seconds = float(args[0]) if args else 1.0
    signal.signal(signal.SIGUSR1, on_usr1)
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    threads = [threading.Thread(target=blocked_read, args=(r1,),
                                name="blocked-read"),
               threading.Thread(target=blocked_nanosleep,
                                name="blocked-nanosleep"),
               threading.Thread(target=blocked_poll, args=(r2,),
                                name="blocked-poll")]
    for t in threads:
        t.start()
    time.sleep(0.1)
    for _ in range(control):
        for t in threads:
            libc.pthread_kill(t.ident, signal.SIGUSR1)
        time.sleep(0.02)
    over = []
    end = time.time() + seconds
    while time.time() < end:
        t0 = time.time()
        time.sleep(0.01)
        over.append((time.time() - t0 - 0.01) * 1000.0)
    stop.set()
    os.write(w1, b"x")
    for t in threads:
        t.join()
    over.sort()
    print(json.dumps({
        "eintr": eintr,
        "other_errors": other_errors,
        "calls": calls,
        "sleep": {"n": len(over), "median_ms": over[len(over) // 2],
                  "p90_ms": over[len(over) * 9 // 10], "max_ms": over[-1]},
    }, sort_keys=True))


if __name__ == "__main__":
    main()
