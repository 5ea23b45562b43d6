# named_idle.py - ten idle threads with custom names and a busy main
# thread.
#
# Used by tests/e2e/threads.bats: in wall mode the profile must show eleven
# threads (thread_id labels), each with exactly the name given here
# (thread_name labels).
#
# Usage: python named_idle.py [SECONDS]   (wall seconds, default 1.5)
# Prints one JSON line: {"names": [the eleven names], "tids": {name: OS
# thread id or null}}. OS thread ids come from threading.get_native_id
# (3.8+) or gettid through ctypes (older versions).
#
# The idle threads wait in different ways (an Event, time.sleep, a queue,
# a socket, select) until the main thread, which computes meanwhile, tells
# them to stop. One name has spaces and parentheses, one non-ASCII letters
# (UTF-8). Runs on Python 2.7 and 3.6+.
# -*- coding: utf-8 -*-
from __future__ import print_function

import ctypes
import json
import select
import socket
import sys
import threading
import time

try:
    import queue
except ImportError:
    import Queue as queue

NAMES = [
    "idle-event", "idle-sleep", "idle-queue", "idle-socket", "idle-select",
    "idle worker (5)", "idle-6", "idle-7", "idle-8",
    u"idle-\u00fcn\u00efcode-\u540d",
]
if sys.version_info[0] == 2:
    NAMES = [n.encode("utf-8") for n in NAMES]

tids = {}
stop = threading.Event()
q = queue.Queue()
a, b = socket.socketpair()


def gettid():
    try:
        return threading.get_native_id()
    except AttributeError:
        return ctypes.CDLL(None, use_errno=True).syscall(186)  # x86-64


def idle(kind):
    tids[threading.current_thread().name] = gettid()
    if kind == 0:
        stop.wait()
    elif kind == 1:
        while not stop.is_set():
            time.sleep(0.05)
    elif kind == 2:
        q.get()
    elif kind == 3:
        a.recv(1)
    elif kind == 4:
        r, w = socket.socketpair()
        while not stop.is_set():
            select.select([r], [], [], 0.05)
    else:
        stop.wait()


def busy(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(300):
            x = (x * 31 + i) % 1000003
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    threads = [threading.Thread(target=idle, args=(i,), name=n)
               for i, n in enumerate(NAMES)]
    for t in threads:
        t.start()
    tids[threading.current_thread().name] = gettid()
    busy(seconds)
    stop.set()
    q.put(None)
    b.send(b"x")
    for t in threads:
        t.join()
    names = [threading.current_thread().name] + NAMES
    if sys.version_info[0] == 2:
        names = [n.decode("utf-8") for n in names]
        ids = dict((k.decode("utf-8"), v) for k, v in tids.items())
    else:
        ids = tids
    print(json.dumps({"names": names, "tids": ids}, sort_keys=True))


if __name__ == "__main__":
    main()
