# http_worker.py - a busy process with a function named after its role,
# for tests/e2e/http.bats and the HTTP bench: several of them stream into
# one collector, and each one's functions must show up (or not) in the
# profiles served over HTTP.
#
# Usage: python http_worker.py alpha|beta|gamma|delta SECONDS [CPUFILE]
# Burns CPU in <role>_work() for SECONDS of wall time, printing "ready"
# once it runs. With CPUFILE, its own CPU time so far (user + system
# seconds, os.times()) is written there about every 50 ms (replaced
# atomically), so a test can compare a profile's CPU with what the
# process measured over the same stretch. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import os
import sys
import time

CPUFILE = sys.argv[3] if len(sys.argv) > 3 else None


def report():
    t = os.times()
    with open(CPUFILE + ".tmp", "w") as f:
        f.write("%.4f\n" % (t[0] + t[1]))
    os.rename(CPUFILE + ".tmp", CPUFILE)


def burn(end):
    x = 0
    next_report = 0
    while True:
        now = time.time()
        if CPUFILE and now >= next_report:
            report()
            next_report = now + 0.05
        if now >= end:
            break
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return x


def alpha_work(end):
    return burn(end)


def beta_work(end):
    return burn(end)


def gamma_work(end):
    return burn(end)


def delta_work(end):
    return burn(end)


def main():
    role, seconds = sys.argv[1], float(sys.argv[2])
    work = globals()[role + "_work"]
    print("ready")
    sys.stdout.flush()
    work(time.time() + seconds)


if __name__ == "__main__":
    main()
