# split.py - functions whose CPU time is of one kind, Python, native or
# system, by construction, and one that mixes two in a known proportion
# (tests/e2e/split.bats, docs/reading.md "Python, native and system
# time").
#
#   py_only       pure Python arithmetic (the interpreter)
#   native_nogil  zlib.compress of prepared data (C, the GIL released)
#   native_gil    sorted() of a prepared list (C, the GIL held)
#   sys_random    reads of /dev/urandom (the kernel's generator)
#   sys_read      os.pread of a 1 MiB file in the page cache (the kernel's
#                 copy)
#   mixed         py_body() then nat_body(): exactly one py_only's and one
#                 native_nogil's work per call, so its Python share is
#                 py_only's time over py_only's and native_nogil's
#
# Each call takes 10 to 25 ms here: the kernel's part of a thread's time
# is placed at a resolution of about a sampling period (1 ms at 1 kHz and
# above: docs/limitations.md), so a call of a few ms right after a
# system-heavy one would show some of that one's system time.
#
# Usage: python split.py SECONDS DATAFILE [SCALE]
# SCALE (default 1) multiplies each call's work: at 100 Hz the kernel's
# time, counted in 10 ms periods, needs calls of 50 ms and more for a
# call's share of a period placed late to stay small.
# The functions take turns, one call each, round and round, for SECONDS
# of wall time; DATAFILE is written first (1 MiB) and read back once so
# that it is in the page cache. Prints "ready" and at the end "calls N".
import os
import random
import sys
import time
import zlib

random.seed(7)
BLOB = bytes(bytearray(random.getrandbits(8) for _ in range(1 << 15))) * 8
LIST = [random.random() for _ in range(60000)]


def py_body():
    # a while loop: 2.7's range() would build a list in C
    x = 0
    i = 0
    while i < 200000:
        x += i % 7
        i += 1
    return x


def nat_body():
    n = 0
    for _ in range(5):
        n += len(zlib.compress(BLOB, 6))
    return n


SCALE = 1


def py_only():
    return sum(py_body() for _ in range(SCALE))


def native_nogil():
    return sum(nat_body() for _ in range(SCALE))


def native_gil():
    n = 0
    for _ in range(3 * SCALE):
        n += len(sorted(LIST))
    return n


RANDOM_FD = None


def sys_random():
    # read(2) of /dev/urandom, not os.urandom: a glibc with the vDSO's
    # getrandom (Debian sid's 3.14 and 3.15) makes those in user space
    n = 0
    for _ in range(400 * SCALE):
        n += len(os.read(RANDOM_FD, 1 << 14))
    return n


def sys_read(fd):
    n = 0
    for _ in range(400 * SCALE):
        if hasattr(os, "pread"):
            n += len(os.pread(fd, 1 << 20, 0))
        else:  # 2.7
            os.lseek(fd, 0, 0)
            n += len(os.read(fd, 1 << 20))
    return n


def mixed():
    n = 0
    for _ in range(SCALE):
        n += py_body() + nat_body()
    return n


def main():
    global SCALE
    seconds, path = float(sys.argv[1]), sys.argv[2]
    if len(sys.argv) > 3:
        SCALE = int(sys.argv[3])
    with open(path, "wb") as f:
        f.write(BLOB * 4)
    global RANDOM_FD
    RANDOM_FD = os.open("/dev/urandom", os.O_RDONLY)
    fd = os.open(path, os.O_RDONLY)
    os.read(fd, 1 << 22)
    print("ready")
    sys.stdout.flush()
    end = time.time() + seconds
    calls = 0
    while time.time() < end:
        py_only()
        native_nogil()
        native_gil()
        sys_random()
        sys_read(fd)
        mixed()
        calls += 1
    os.close(fd)
    print("calls %d" % calls)


if __name__ == "__main__":
    main()
