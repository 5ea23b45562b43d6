"""selfview.py - what a program sees of itself: after about SECONDS of
CPU (so that a profiler has connected and opened what it keeps), prints
every open descriptor as "fd NUMBER CLOEXEC TARGET" and every thread as
"thread TID MAIN|- NAME" (from /proc/self), then "done". unseen.bats
compares a profiled run with a plain one.

    selfview.py [SECONDS]
"""
import fcntl
import os
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5


def busy(until):
    x = 0
    while time.time() < until:
        for i in range(2000):
            x += i
    return x


def main():
    busy(time.time() + SECONDS)
    fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    for fd in fds:
        try:  # the listing's own descriptor is closed by now
            target = os.readlink("/proc/self/fd/%d" % fd)
            flags = fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            continue
        print("fd %d %d %s" % (fd, 1 if flags & fcntl.FD_CLOEXEC else 0,
                               target))
    pid = os.getpid()
    for tid in sorted(int(t) for t in os.listdir("/proc/self/task")):
        try:
            with open("/proc/self/task/%d/comm" % tid) as f:
                name = f.read().strip()
        except OSError:
            continue
        print("thread %d %s %s" % (tid, "MAIN" if tid == pid else "-", name))
    print("done")


if __name__ == "__main__":
    main()
