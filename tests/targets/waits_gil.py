# waits_gil.py - a thread that sleeps 1 ms at a time (nap), by turns alone
# and beside a pure-Python loop (spin, paused on an Event in between):
# beside it, each nap also waits for the GIL, up to the switch interval
# (set to 10 ms, so that a GIL wait is much longer than the scheduling
# noise of a busy machine). Turns of 10 naps alternate, so that a change
# of the machine's load affects both sides alike.
#
# Used by tests/e2e/waits.bats. Prints one JSON line: alone, beside (mean
# seconds each sleep took beyond 1 ms, measured with time.perf_counter),
# n (sleeps beside the loop) and gil, the waiting for the GIL the program
# infers from its own clock: n * (beside - alone).
# Usage: python waits_gil.py [N]   (sleeps on each side, default 40)
import json
import sys
import threading
import time

go = threading.Event()
stop = False


def spin():
    x = 0
    while not stop:
        if not go.is_set():
            go.wait()
        for i in range(200):
            x = (x * 31 + i) % 1000003


def nap(n):
    clock = time.perf_counter
    over = 0.0
    for _ in range(n):
        t0 = clock()
        time.sleep(0.001)
        over += clock() - t0 - 0.001
    return over


def main():
    global stop
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    sys.setswitchinterval(0.01)
    t = threading.Thread(target=spin)
    t.start()
    alone = beside = 0.0
    for k in range(0, n, 10):
        m = min(10, n - k)
        alone += nap(m)
        go.set()
        time.sleep(0.02)
        beside += nap(m)
        go.clear()
        time.sleep(0.02)
    stop = True
    go.set()
    t.join()
    print(json.dumps({"alone": alone / n, "beside": beside / n, "n": n,
                      "gil": beside - alone}))


main()
