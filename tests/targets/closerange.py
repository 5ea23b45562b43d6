"""closerange.py - a daemon's start: CPU before and after closing every
descriptor but the standard three (os.closerange(3, hard limit), as
python-daemon does), then files of its own opened at the freed numbers. Each phase is timed by the
program's own thread CPU clock (printed), so that a profile can be held
to it. unseen.bats uses it.
"""
import os
import resource
import sys
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.6


def spin(until):
    x = 0
    while time.thread_time() < until:
        for i in range(20000):  # user time: a clock read is a system call
            x += i
    return x


def before_close():
    spin(time.thread_time() + SECONDS)


def after_close():
    spin(time.thread_time() + SECONDS)


def main():
    t0 = time.thread_time()
    before_close()
    t1 = time.thread_time()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    os.closerange(3, hard)
    # the program's own files now take the freed numbers
    mine = [os.open(os.devnull, os.O_RDONLY) for _ in range(8)]
    t2 = time.thread_time()
    after_close()
    t3 = time.thread_time()
    for fd in mine:
        os.close(fd)
    print("before_close %.4f" % (t1 - t0))
    print("after_close %.4f" % (t3 - t2))


if __name__ == "__main__":
    main()
