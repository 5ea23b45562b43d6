# scrape_worker.py - a busy process that keeps its own CPU clock, for
# tests/e2e/scrape.bats: profiles scraped over HTTP are compared with
# what the process measured itself.
#
# Usage: python scrape_worker.py NAME SECONDS LOGFILE
# Burns CPU in <NAME>_work() for SECONDS of wall time. Every ~5 ms it
# notes (wall time, CPU time): time.time() and os.times() user + system,
# the process's whole CPU since it started. At the end it writes LOGFILE
# (atomically): one "WALL CPU" line per note, the last taken just before
# it exits. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import sys
import time


def cpu():
    t = os.times()
    return t[0] + t[1]


def burn(end, notes):
    x = 0
    next_note = 0
    while True:
        now = time.time()
        if now >= next_note:
            notes.append((now, cpu()))
            next_note = now + 0.005
        if now >= end:
            break
        for i in range(500):
            x = (x * 31 + i) % 1000003
    return x


def main():
    name, seconds, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    notes = []
    work = globals().get(name + "_work", burn)
    work(time.time() + seconds, notes)
    notes.append((time.time(), cpu()))
    with open(log + ".tmp", "w") as f:
        for wall, c in notes:
            f.write("%.6f %.6f\n" % (wall, c))
    os.rename(log + ".tmp", log)


def steady_work(end, notes):
    return burn(end, notes)


def early_work(end, notes):
    return burn(end, notes)


def late_work(end, notes):
    return burn(end, notes)


def billing_work(end, notes):
    return burn(end, notes)


def search_work(end, notes):
    return burn(end, notes)


if __name__ == "__main__":
    main()
