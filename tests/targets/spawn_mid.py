# spawn_mid.py - CPU work, a subprocess, more CPU work: sampling must go on
# in the parent after the child execs (3.10+ spawns with vfork, whose
# child shares the parent's memory until it execs). For
# tests/e2e/ctl.bats. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import subprocess


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


def first():
    return burn(0.15)


def second():
    return burn(0.3)


first()
print(subprocess.call(["true"]))
second()
