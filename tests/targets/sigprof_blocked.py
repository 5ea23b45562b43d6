# sigprof_blocked.py - burns CPU for SECONDS with SIGPROF blocked in its
# one thread, then as long again with it unblocked, for
# tests/e2e/threads.bats: the timer's expiries while blocked come as one
# signal with overruns, whose sample must weigh them all, and the rate
# achieved must not look low for it. Prints its CPU time in ms.
#
# Usage: python sigprof_blocked.py [SECONDS]   (default 0.6). Python 3.3+.
import signal
import sys
import time


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


secs = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6
t0 = time.process_time()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
spin(secs)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGPROF})
spin(secs)
print(int((time.process_time() - t0) * 1000))
