# http_worker.py - a busy process with a function named after its role,
# for tests/e2e/http.bats and the HTTP bench: several of them stream into
# one collector, and each one's functions must show up (or not) in the
# profiles served over HTTP.
#
# Usage: python http_worker.py alpha|beta|gamma|delta SECONDS
# Burns CPU in <role>_work() for SECONDS of wall time, printing "ready"
# once it runs. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import sys
import time


def burn(end):
    x = 0
    while time.time() < end:
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
