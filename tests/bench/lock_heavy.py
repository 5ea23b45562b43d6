"""A lock-heavy workload for the waits benchmark (make bench, section 16):
4 threads share one threading.Lock and take it N times in all (default a
million), each doing a little work inside and, one time in 64, sleep(0)
with the lock held, which lets the GIL go: the others then block on
the lock (and the GIL passes between all four). Prints the wall seconds the work took,
timed by the program itself (time.perf_counter)."""
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
lock = threading.Lock()
count = [0]


def work(n):
    c = count
    pause = time.sleep
    for i in range(n):
        with lock:
            c[0] += 1
            if not i & 63:
                pause(0)  # lets the GIL go while holding the lock


def main():
    threads = [threading.Thread(target=work, args=(N // 4,))
               for _ in range(4)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("%.4f" % (time.perf_counter() - t0))


main()
