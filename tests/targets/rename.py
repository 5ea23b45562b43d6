# rename.py - a worker thread computes under one name, is renamed, and
# computes on under the new one.
#
# Used by tests/e2e/threads.bats: the samples of after_rename() must carry
# the new name (thread_name label) and the same thread_id as those of
# before_rename(), which carry the old one.
#
# Usage: python rename.py [SECONDS] [poll|join]   (wall seconds per phase,
# default 1.2; how the main thread waits, default poll)
#   poll  the main thread waits in join(0.05) in a loop, so it runs Python
#         code every 50 ms (and with it the library's pending calls);
#   join  the main thread blocks in one join() until the worker ends, as
#         most threaded programs do.
# Prints one JSON line: {"old": name, "new": name}.
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import sys
import threading
import time

OLD, NEW = "before-rename", "after-rename"


def compute(seconds):
    end = time.time() + seconds
    x = 0
    while time.time() < end:
        for i in range(500):
            x = (x * 31 + i) % 1000003
    return x


def before_rename(seconds):
    compute(seconds)


def after_rename(seconds):
    compute(seconds)


def worker(seconds):
    before_rename(seconds)
    threading.current_thread().name = NEW
    after_rename(seconds)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.2
    how = sys.argv[2] if len(sys.argv) > 2 else "poll"
    t = threading.Thread(target=worker, args=(seconds,), name=OLD)
    t.start()
    if how == "join":
        t.join()
    else:
        while t.is_alive():
            t.join(0.05)
    print(json.dumps({"old": OLD, "new": NEW}, sort_keys=True))


if __name__ == "__main__":
    main()
