# attach_waits.py - one threading.Lock for `pyprof attach --waits`
# (tests/e2e/attach.bats): hold_long holds it 8 ms at a time, hold_short
# 2 ms, wait_a and wait_b only take it, each pausing between turns; the
# main thread runs Python code (a sleep loop: PEP 768's safe point) and
# prints "ready" once the threads run, then "done" when STOPFILE exists
# (or after 20 s) and the threads have ended. Started without pyprof: the
# attach brings the library, and the waits are seen only if its wrappers
# get the calls CPython made through its own GOT.
# Usage: python attach_waits.py STOPFILE
import os
import sys
import threading
import time

lock = threading.Lock()
stop = threading.Event()


def run(hold, pause):
    while not stop.is_set():
        with lock:
            if hold:
                time.sleep(hold)
        time.sleep(pause)


def hold_long():
    run(0.008, 0.002)


def hold_short():
    run(0.002, 0.002)


def wait_a():
    run(0, 0.001)


def wait_b():
    run(0, 0.001)


def main():
    threads = [threading.Thread(target=f)
               for f in (hold_long, hold_short, wait_a, wait_b)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    end = time.monotonic() + 20
    while not os.path.exists(sys.argv[1]) and time.monotonic() < end:
        time.sleep(0.02)
    stop.set()
    for t in threads:
        t.join()
    print("done")


main()
