# _clock.py - what every program in tests/targets/stacks/ shares: a CPU
# clock and the deadline its hot spot runs until.
#
# Usage of a program: python PROGRAM.py [SECONDS]  (CPU seconds, default 1)
# Runs on Python 2.7 and 3.6+. Imported, never run; its name starts with
# "_" so that it is not taken for a program.
import sys
import time

try:
    _thread_cpu = time.thread_time  # 3.7+
except AttributeError:
    try:
        _thread_cpu = time.process_time  # 3.3+
    except AttributeError:
        _thread_cpu = time.clock  # 2.7: the process's CPU time on Unix

_last = [0.0, 0.0]  # wall time of the last read, the CPU time it read


def cpu_clock():
    """The thread's CPU time, read at most every 5 ms of wall time.

    Reading one's own CPU clock is a system call that brings the thread's
    run time up to date in the kernel, which then often preempts the
    thread right there on a busy machine; a profiler that reads stacks
    from outside finds it stopped at that line (docs/design.md, "Past the
    tick"). A hot loop that read it every millisecond drew a third of its
    samples to the clock read; time.time() is not a system call."""
    now = time.time()
    if now - _last[0] >= 0.005:
        _last[0] = now
        _last[1] = _thread_cpu()
    return _last[1]


def seconds():
    """CPU seconds the program runs for: its first argument, or 1."""
    return float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def deadline(share=1.0):
    """The CPU time at which the hot spot stops, SHARE of seconds() from
    now."""
    return cpu_clock() + share * seconds()
