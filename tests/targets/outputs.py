# outputs.py - a program whose only observable behaviour is its output and
# exit status, for tests/e2e/behaviour.bats and robust.bats: run with and
# without libpyprof.so preloaded, both must be byte-identical.
#
# Usage: python outputs.py MODE [SECONDS]
#   MODE ok      lines on stdout and stderr, exit 0
#   MODE exit3   the same, then sys.exit(3)
#   MODE raise   the same, then an uncaught exception (traceback, exit 1)
#   SECONDS      CPU seconds of work between the lines (default 0.5), so
#                that the profiler is sampling while the program runs
# Runs on Python 2.7 and 3.6+. Output does not depend on timing.
from __future__ import print_function

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


def fail(depth):
    if depth == 0:
        raise ValueError("outputs.py: the expected failure")
    fail(depth - 1)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    for step in range(5):
        print("stdout line %d" % step)
        sys.stdout.flush()
        print("stderr line %d" % step, file=sys.stderr)
        sys.stderr.flush()
        burn(seconds / 5)
    print("done: %s" % mode)
    sys.stdout.flush()
    if mode == "exit3":
        sys.exit(3)
    if mode == "raise":
        fail(3)


if __name__ == "__main__":
    main()
