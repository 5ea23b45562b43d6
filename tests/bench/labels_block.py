"""tests/bench/labels_block.py - the cost of a pyprof.labels block.

Prints one line per case: the case's name and the nanoseconds one
enter+exit costs, the loop's own cost subtracted (an empty `with` of a
trivial context manager measured in the same run). Median of ROUNDS
repetitions of N blocks each, timed with the process's CPU clock.

Cases: a block with the same labels every time (the encoding cached),
one block object made once and entered each time (reused), a nested
block inside an outer one, a block whose value is new every time (a
trace id: nothing cached), and the floor: a minimal pure-Python keyword
context manager around a ContextVar set and reset (3.7+), which no
labels block can beat.
Usage: labels_block.py [N] [ROUNDS]
"""
import sys
import time

import pyprof

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
clock = getattr(time, "process_time", None) or time.clock  # 2.7: clock


try:
    import contextvars
    _floor_var = contextvars.ContextVar("floor")
except ImportError:
    _floor_var = None


class Floor(object):
    __slots__ = ("items", "token")

    def __init__(self, **kw):
        self.items = tuple(kw.items())

    def __enter__(self):
        self.token = _floor_var.set(self.items)
        return self

    def __exit__(self, *exc):
        _floor_var.reset(self.token)
        return False


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


def reused(n):
    block = pyprof.labels(endpoint="/api/users", tenant="acme")
    for _ in range(n):
        with block:
            pass


def floor(n):
    """A minimal kwargs context manager around a ContextVar set and reset:
    what any pure-Python labels block costs at least (3.7+)."""
    for _ in range(n):
        with Floor(endpoint="/api/users", tenant="acme"):
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
cases = [("same", same), ("reused", reused), ("nested", nested),
         ("fresh", fresh)]
if _floor_var is not None:
    cases.append(("floor", floor))
for name, fn in cases:
    print("%s %.0f" % (name, cost(fn) - base))
