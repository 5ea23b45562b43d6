# outside_kids.py - a parent and its Python children, each busy in a
# function of its own, for `pyprof record --pid PARENT --subprocesses`
# (tests/e2e/outside.bats), on 2.7 and 3.6+.
#
# Usage: python outside_kids.py GO_FILE
# Starts one Python child (kid_early_busy) and a `sleep` (not Python),
# prints "ready" and waits (sleeping) until GO_FILE exists: the profiler
# starts meanwhile. Then it runs parent_busy, starts a second Python child
# (kid_late_busy) half a second into it, one the profiler must find while
# it records, and spins on until every child has ended. It prints "ROLE
# PID" for itself and each child (parent, early, late, sleep) and exits:
# its end ends the recording.
#
# A child: python outside_kids.py kid early|late GO_FILE ("": at once),
# then 2.5 s in its function.
from __future__ import print_function

import os
import subprocess
import sys
import time


def spin(seconds):
    x = 0
    end = time.time() + seconds
    while time.time() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def kid_early_busy(seconds):
    return spin(seconds)


def kid_late_busy(seconds):
    return spin(seconds)


def parent_busy(seconds):
    return spin(seconds)


def kid(role, seconds):
    if role == "early":
        kid_early_busy(seconds)
    else:
        kid_late_busy(seconds)


def start(role, go):
    return subprocess.Popen([sys.executable, __file__, "kid", role, go])


def parent(go):
    sleeper = subprocess.Popen(["sleep", "30"])
    # the early child waits for GO_FILE too (its argument): it spins only
    # while the profiler reads
    early = start("early", go)
    print("ready")
    sys.stdout.flush()
    while not os.path.exists(go):
        time.sleep(0.01)
    parent_busy(0.5)
    late = start("late", "")
    while early.poll() is None or late.poll() is None:
        parent_busy(0.05)
    sleeper.kill()
    sleeper.wait()
    for role, pid in (("parent", os.getpid()), ("early", early.pid),
                      ("late", late.pid), ("sleep", sleeper.pid)):
        print(role, pid)
    sys.stdout.flush()


def main():
    if sys.argv[1] == "kid":
        go = sys.argv[3]
        while go and not os.path.exists(go):
            time.sleep(0.01)
        kid(sys.argv[2], 2.5)
    else:
        parent(sys.argv[1])


if __name__ == "__main__":
    main()
