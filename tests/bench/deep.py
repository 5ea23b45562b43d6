"""Spins for a given time at a given Python stack depth, for measuring the
signal handler's cost per sample against the depth it walks."""
import sys
import time

sys.setrecursionlimit(100000)


def rec(d, t):
    if d <= 0:
        end = time.time() + t
        while time.time() < end:
            pass
        return
    rec(d - 1, t)


# The frames below rec's own: <module>, so subtract them from the depth.
rec(int(sys.argv[1]) - 2, float(sys.argv[2]))
