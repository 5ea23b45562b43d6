# otlp_work.py - known function names for tests/e2e/otlp.bats: CPU spent
# in otlp_alpha (about two thirds) and otlp_beta (one third), on the main
# thread and on a thread named "otlp-worker", part of it inside
# pyprof.labels(trace_id=..., span_id=..., endpoint=...) as docs/labels.md
# sets them for OpenTelemetry, and part in zlib.compress (C: native frames
# with `pyprof record --native`).
#
# Usage: python otlp_work.py [SECONDS]   (CPU seconds in all, default 2)
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import sys
import threading
import time
import zlib

import pyprof

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"
DATA = b"pyprof otlp " * 4096

try:
    cpu_clock = time.thread_time
except AttributeError:
    cpu_clock = time.clock if sys.version_info[0] < 3 else time.process_time


def burn(seconds):
    end = cpu_clock() + seconds
    n = 0
    while cpu_clock() < end:
        n += sum(i * i for i in range(200))
        zlib.compress(DATA, 6)
    return n


def otlp_alpha(seconds):
    return burn(seconds)


def otlp_beta(seconds):
    with pyprof.labels(trace_id=TRACE_ID, span_id=SPAN_ID,
                       endpoint="/checkout"):
        return burn(seconds)


def main():
    total = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    t = threading.Thread(target=otlp_beta, args=(total / 3,),
                         name="otlp-worker")
    t.start()
    otlp_alpha(total * 2 / 3)
    t.join()
    print("done")


if __name__ == "__main__":
    main()
