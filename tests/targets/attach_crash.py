# attach_crash.py - runs a while, then crashes on a NULL read, for
# tests/e2e/attach.bats: run with -X faulthandler, a crash after an attach
# must be reported and end the process exactly as without one.
#
# Usage: python -X faulthandler attach_crash.py SECONDS
import ctypes
import sys
import time


def work(seconds):
    end = time.time() + seconds
    while time.time() < end:
        sum(range(1000))


print("ready", flush=True)
work(float(sys.argv[1]))
ctypes.string_at(0)
