# segv.py - a program that dies by SIGSEGV, for tests/e2e/behaviour.bats:
# with libpyprof.so preloaded it must still die by SIGSEGV, and Python's
# faulthandler (-X faulthandler, PYTHONFAULTHANDLER=1) must still print its
# "Fatal Python error: Segmentation fault" report.
#
# Usage: python segv.py MODE [SECONDS]
#   MODE ctypes  reads address 0 with ctypes.string_at (a real fault)
#   MODE kill    os.kill(os.getpid(), signal.SIGSEGV) (a sent signal)
#   MODE subprocess  runs a child with subprocess first (Python 3.10+
#                execs it from a vfork child, which resets every handled
#                signal to SIG_DFL while sharing the parent's memory),
#                then as ctypes
#   SECONDS      CPU seconds of work first (default 0.3), so that the
#                profiler is sampling when the crash comes
# Runs on Python 2.7 and 3.6+ (2.7 has no faulthandler).
from __future__ import print_function

import os
import signal
import sys
import time

try:
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock


def burn(seconds):
    end = cpu_clock() + seconds
    x = 0
    while cpu_clock() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


def crash(mode):
    if mode == "ctypes":
        import ctypes
        ctypes.string_at(0)  # @crash_ctypes
    else:
        os.kill(os.getpid(), signal.SIGSEGV)  # @crash_kill
        time.sleep(5)  # delivery is immediate; never reached


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ctypes"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    print("before the crash")
    sys.stdout.flush()
    burn(seconds)
    if mode == "subprocess":
        import subprocess
        subprocess.call([sys.executable, "-c", "pass"])
        mode = "ctypes"
    crash(mode)
    print("after the crash: not reached")


if __name__ == "__main__":
    main()
