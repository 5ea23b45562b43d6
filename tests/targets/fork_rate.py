# fork_rate.py - computes, forks a child that exits at once, computes on.
#
# Used by tests/e2e/threads.bats: the parent's samples must go on after
# the fork(): the samples under after_fork() must number the rate times
# the CPU time it took, within 10%.
#
# Usage: python fork_rate.py [SECONDS]   (seconds of the thread's CPU
# after the fork, default 0.6; 0.2 of the wall before it)
# Prints one JSON line: {"cpu": CPU seconds spent in after_fork()}.
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import os
import sys
import time

from tclock import thread_cpu


def compute(seconds, clock=time.time):
    end = clock() + seconds
    x = 0
    while clock() < end:
        for i in range(500):
            x = (x * 31 + i) % 1000003
    return x


def before_fork(seconds):
    compute(seconds)


def after_fork(seconds):
    # seconds of the thread's CPU, not of the wall: on a busy machine a
    # wall half-second was 0.1 s of CPU, ten samples at 100 Hz, where one
    # sample is 10%
    compute(seconds, thread_cpu)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6
    before_fork(0.2)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    t0 = thread_cpu()
    after_fork(seconds)
    print(json.dumps({"cpu": thread_cpu() - t0}, sort_keys=True))


if __name__ == "__main__":
    main()
