"""tests/bench/labels_block.py - the cost of a pyprof.labels block.

Prints one line per case: the case's name and the nanoseconds one
enter+exit costs, the loop's own cost subtracted (an empty `with` of a
trivial context manager measured in the same run). Median of ROUNDS
repetitions of N blocks each, timed with the process's CPU clock.

Cases: a block with the same labels every time (the encoding cached),
a nested block inside an outer one, and a block whose value is new every
time (a trace id: nothing cached).
Usage: labels_block.py [N] [ROUNDS]
"""
import sys
import time

import pyprof

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
clock = getattr(time, "process_time", None) or time.clock  # 2.7: clock


class Nothing(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def empty(n):
    cm = Nothing()
    for _ in range(n):
        with cm:
            pass


def same(n):
    for _ in range(n):
        with pyprof.labels(endpoint="/api/users", tenant="acme"):
            pass


def nested(n):
    with pyprof.labels(endpoint="/api/users"):
        for _ in range(n):
            with pyprof.labels(tenant="acme"):
                pass


def fresh(n):
    ids = ["%032x" % i for i in range(n)]
    for t in ids:
        with pyprof.labels(trace_id=t):
            pass


def median(xs):
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else (xs[k // 2 - 1] + xs[k // 2]) / 2.0


def cost(fn):
    out = []
    for _ in range(ROUNDS):
        t0 = clock()
        fn(N)
        out.append((clock() - t0) * 1e9 / N)
    return median(out)


base = cost(empty)
print("empty-with %.0f" % base)
for name, fn in (("same", same), ("nested", nested), ("fresh", fresh)):
    print("%s %.0f" % (name, cost(fn) - base))
