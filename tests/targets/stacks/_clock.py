# _clock.py - what every program in tests/targets/stacks/ shares: a CPU
# clock and the deadline its hot spot runs until.
#
# Usage of a program: python PROGRAM.py [SECONDS]  (CPU seconds, default 1)
# Runs on Python 2.7 and 3.6+. Imported, never run; its name starts with
# "_" so that it is not taken for a program.
import sys
import time

try:
    cpu_clock = time.thread_time  # 3.7+
except AttributeError:
    try:
        cpu_clock = time.process_time  # 3.3+
    except AttributeError:
        cpu_clock = time.clock  # 2.7: the process's CPU time on Unix


def seconds():
    """CPU seconds the program runs for: its first argument, or 1."""
    return float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def deadline(share=1.0):
    """The CPU time at which the hot spot stops, SHARE of seconds() from
    now."""
    return cpu_clock() + share * seconds()
