"""A fixed amount of numpy work (matrix products through BLAS, sorts, a
little plain Python), for the overhead of PYPROF_NATIVE at 100 Hz: prints
the CPU seconds the work took (its own thread's clock).

Usage: python3 numpy_work.py [ROUNDS]   (default 40)
"""
import sys
import time

import numpy as np

rng = np.random.default_rng(1)
a = rng.random((300, 300))
b = rng.random((300, 300))
v = rng.random(100000)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
t0 = time.thread_time()
for _ in range(rounds):
    c = a @ b
    s = np.sort(v, kind="quicksort")
    total = 0
    for i in range(60000):
        total += i * i
print("%.4f" % (time.thread_time() - t0))
