"""One busy thread (the main one, running cpu_mix.py's work) and N - 1
idle threads blocked on a queue, as in a pool of workers waiting for
requests. Prints the wall seconds the busy work took (time.perf_counter
around it, after every thread has started), so that a benchmark compares
the work alone, with whatever a profiler's sampler costs it.

Usage: python threads_idle.py N [SCALE]   (threads in all, default 1;
cpu_mix.py's scale, default 1). Runs on Python 3.3+."""
import os
import queue
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_mix import work  # noqa: E402


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    q = queue.Queue()
    idle = [threading.Thread(target=q.get, name="idle-%d" % i)
            for i in range(n - 1)]
    for t in idle:
        t.start()
    t0 = time.perf_counter()
    work(scale)
    elapsed = time.perf_counter() - t0
    for _ in idle:
        q.put(None)
    for t in idle:
        t.join()
    print("%.6f" % elapsed)


if __name__ == "__main__":
    main()
