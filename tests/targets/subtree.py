# subtree.py - a caller whose time is spread over ten leaves, beside two
# functions that do their own work, for tests/e2e/views.bats: between
# runs with different seconds the caller's cumulative share moves a lot
# while each leaf's flat share moves little.
#
# Usage: python subtree.py SPREAD_SECONDS SOLO_SECONDS  (CPU seconds:
# spread() for the first, solo_a() and solo_b() each for the second)
# Runs on Python 2.7 and 3.6+.
import sys
import time

try:
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock


# Each function runs its own loop (no shared helper): its flat time is
# its own.
def leaf0():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf1():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf2():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf3():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf4():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf5():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf6():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf7():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf8():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


def leaf9():
    x = 0
    for i in range(2000):
        x = (x * 31 + i) % 1000003
    return x


LEAVES = (leaf0, leaf1, leaf2, leaf3, leaf4, leaf5, leaf6, leaf7, leaf8,
          leaf9)


def spread(seconds):
    end = cpu_clock() + seconds
    while cpu_clock() < end:
        for f in LEAVES:
            f()


def solo_a(seconds):
    end = cpu_clock() + seconds
    x = 0
    while cpu_clock() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def solo_b(seconds):
    end = cpu_clock() + seconds
    x = 0
    while cpu_clock() < end:
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


if __name__ == "__main__":
    spread(float(sys.argv[1]))
    solo_a(float(sys.argv[2]))
    solo_b(float(sys.argv[2]))
