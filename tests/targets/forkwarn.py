"""forkwarn.py - a single-threaded program whose main thread forks, as
daemons and pre-fork servers do, between two stretches of CPU: CPython
3.12+ warns on stderr after os.fork() when the process has more than one
thread. Each child exits at once. Prints "forked N" at the end, then the
thread CPU time (time.thread_time) each phase took: "before_fork S" and
"after_fork S" (all of them).

    forkwarn.py [FORKS]
"""
import os
import sys
import time

FORKS = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def busy(secs):
    end = time.time() + secs
    x = 0
    while time.time() < end:
        for i in range(2000):
            x += i
    return x


def before_fork():
    busy(0.3)


def after_fork():
    busy(0.2)


def main():
    t0 = time.thread_time()
    before_fork()
    t1 = time.thread_time()
    after = 0.0
    for _ in range(FORKS):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        t = time.thread_time()
        after_fork()
        after += time.thread_time() - t
    print("forked %d" % FORKS)
    print("before_fork %.4f" % (t1 - t0))
    print("after_fork %.4f" % after)


if __name__ == "__main__":
    main()
