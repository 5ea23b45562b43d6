# toggle.py - PYPROF_TOGGLE_SIGNAL=SIGUSR2 from inside the program, for
# tests/e2e/ctl.bats. The process signals itself, so it knows exactly when
# sampling was asked to start and stop:
#   before()  CPU work, dormant (PYPROF_START=off)
#   SIGUSR2   -> sampling on
#   during()  CPU work
#   SIGUSR2   -> sampling off
#   after()   CPU work
#   signal.signal(SIGUSR2, mine): the program takes the signal for itself;
#   SIGUSR2   -> mine() runs (the program keeps its handler), no toggle
#   late()    CPU work, still not sampled
# Prints one JSON line: what signal.getsignal said before (must be SIG_DFL,
# as without pyprof) and how many times mine() ran (must be 1).
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import os
import signal
import sys
import time

calls = [0]


def mine(sig, frame):
    calls[0] += 1


def burn(seconds):
    # CPU seconds of this process (os.times: user + system)
    t = os.times()
    end = t[0] + t[1] + seconds
    x = 0
    while True:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
        t = os.times()
        if t[0] + t[1] >= end:
            return x


def before():
    return burn(0.1)


def during():
    return burn(0.3)


def after():
    return burn(0.1)


def late():
    return burn(0.1)


def main():
    was_default = signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL
    before()
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.4)  # the agent switches sampling on at its next tick
    during()
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.05)
    after()
    signal.signal(signal.SIGUSR2, mine)
    os.kill(os.getpid(), signal.SIGUSR2)
    time.sleep(0.05)
    late()
    time.sleep(0.4)  # the agent says why the toggle is gone
    print(json.dumps({"was_default": was_default, "mine": calls[0]}))


main()
