# fork_toggle.py - forked children follow their parent's own sampling
# state (PYPROF_TOGGLE_SIGNAL): for tests/e2e/ctl.bats. Under
# PYPROF_START=off and PYPROF_TOGGLE_SIGNAL=SIGUSR2, the program
#   toggles sampling on, forks child A, which runs child_on(),
#   toggles it off, forks child B, which runs child_off().
# A must be sampled from its start, B not at all. Prints "A PID" and
# "B PID". Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import signal
import sys
import time


def burn(seconds):
    t = os.times()
    end = t[0] + t[1] + seconds
    x = 0
    while True:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
        t = os.times()
        if t[0] + t[1] >= end:
            return x


def child_on():
    return burn(0.3)


def child_off():
    return burn(0.3)


def child(name, fn):
    pid = os.fork()
    if pid == 0:
        fn()
        os._exit(0)
    print(name, pid)
    sys.stdout.flush()
    os.waitpid(pid, 0)


# the agent takes a toggle at its next tick: 250 ms at most while
# dormant, 20 ms while sampling
os.kill(os.getpid(), signal.SIGUSR2)
time.sleep(0.4)
child("A", child_on)
os.kill(os.getpid(), signal.SIGUSR2)
time.sleep(0.1)
child("B", child_off)
