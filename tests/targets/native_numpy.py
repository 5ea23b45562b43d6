# native_numpy.py - time in numpy's C code: matrix products (BLAS) and
# sorts, each called from its own Python line, timed by the program itself.
#
# Used by tests/e2e/native.bats (Debian's python3 with python3-numpy) and
# the benchmark: with PYPROF_NATIVE the merged stacks must show the Python
# caller, then numpy's C frames, then the BLAS or sort routine, and each
# kind's share of the samples must match the share of CPU time measured
# here. Each call sits alone on a line tagged "# @name".
#
# Usage: python3 native_numpy.py [SECONDS]   (CPU seconds, default 4)
# Prints one JSON line: {"seconds": {"matmul": s, "sort": s, "other": s},
# "shares": {...}} (shares of the whole run's CPU time).
import json
import sys
import time

import numpy as np

cpu_clock = time.thread_time


def matmul(a, b):
    c = a @ b  # @matmul
    return c


def sort(v):
    s = np.sort(v, kind="quicksort")  # @sort
    return s


def other(n):
    # plain Python, so that not everything is numpy
    total = 0
    for i in range(n):  # @other
        total += i * i
    return total


def main():
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    rng = np.random.default_rng(1)
    a = rng.random((300, 300))
    b = rng.random((300, 300))
    v = rng.random(100000)
    spent = {"matmul": 0.0, "sort": 0.0, "other": 0.0}
    start = cpu_clock()
    while cpu_clock() - start < budget:
        for name, fn, arg in (("matmul", matmul, (a, b)),
                              ("sort", sort, (v,)),
                              ("other", other, (60000,))):
            t0 = cpu_clock()
            fn(*arg)
            spent[name] += cpu_clock() - t0
    total = cpu_clock() - start
    print(json.dumps({"seconds": spent,
                      "shares": {k: v / total for k, v in spent.items()},
                      "total": total}))


main()
