# native_fork.py - threads in C (zlib) while the main thread forks again
# and again: with PYPROF_NATIVE a child must never inherit a lock that a
# sampled thread or the library's own thread held at the fork (the
# loader's, which dl_iterate_phdr takes, or libunwind's), or it hangs.
#
# Usage: python native_fork.py [FORKS]   (default 30)
# Prints "forks N" when every child has exited.
from __future__ import print_function

import os
import sys
import threading
import time
import zlib

DATA = bytes(bytearray((i * 31 + (i >> 7)) & 0xFF for i in range(1 << 18)))
stop = []


def spin():
    while not stop:
        zlib.compress(DATA, 6)


def main():
    forks = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    threads = [threading.Thread(target=spin) for _ in range(2)]
    for t in threads:
        t.start()
    for _ in range(forks):
        pid = os.fork()
        if pid == 0:
            t = time.time()
            while time.time() - t < 0.05:
                zlib.compress(DATA, 1)
            os._exit(0)
        os.waitpid(pid, 0)
        zlib.compress(DATA, 6)
    stop.append(1)
    for t in threads:
        t.join()
    print("forks", forks)


main()
