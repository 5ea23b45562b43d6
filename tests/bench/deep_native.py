"""Spins for a given time under a given number of Python levels, each
called from the one above through C (list(map(...))), so that the native
stack grows with the Python one: the handler's cost with PYPROF_NATIVE
against the depth it unwinds. The innermost level calls a C function in a
loop too (sorted of a small list), so that samples land in C and in the
eval loop both.

Usage: python deep_native.py LEVELS SECONDS
"""
import sys
import time

sys.setrecursionlimit(100000)
SMALL = list(range(50, 0, -1))


def level(n, t):
    if n <= 0:
        end = time.time() + t
        while time.time() < end:
            sorted(SMALL)
        return 0
    return list(map(lambda k: level(k, t), [n - 1]))[0]


level(int(sys.argv[1]), float(sys.argv[2]))
