# fork_named.py - a single-threaded parent that forks a child, which starts
# a named thread; all three burn CPU for SECONDS. Prints "parent PID" and
# "child PID" (the child's line first), for tests/e2e/threads.bats: every
# sample must carry its thread's name, MainThread in both processes'
# main threads.
#
# Usage: python fork_named.py [SECONDS]   (default 0.5)
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import sys
import threading
import time


def spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


secs = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
pid = os.fork()
if pid == 0:
    print("child", os.getpid())
    sys.stdout.flush()
    t = threading.Thread(target=spin, args=(secs,), name="worker-in-child")
    t.start()
    spin(secs)
    t.join()
    os._exit(0)
spin(secs)
os.waitpid(pid, 0)
print("parent", os.getpid())
