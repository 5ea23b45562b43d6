# spin.py - burns CPU in spin() until killed or SECONDS of wall time pass,
# for tests/e2e/record.bats (Ctrl-C while recording must still write the
# profile).
#
# Usage: python spin.py [SECONDS]   (wall seconds, default 30)
# Prints "spinning" once it has started, then "done" if never interrupted.
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import sys
import time


def spin(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003  # @spin_body
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    print("spinning")
    sys.stdout.flush()
    spin(seconds)
    print("done")


if __name__ == "__main__":
    main()
