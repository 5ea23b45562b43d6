# early_names.py - named threads whose first samples are taken at their
# very start, just before a window of a collector's --period 1 ends: each
# round starts THREADS threads at 0.96 s past a second, each waits for a
# lock the main thread holds for 5 ms, then sleeps (no sample) until past
# the next second and ends. Their first samples reach the collector
# before the library's names thread has looked at them, and the window
# is cut before any later sample of theirs.
#
# Used by tests/e2e/waits.bats: every sample of these threads must carry
# its thread's name, in every window. Usage:
#   python early_names.py [THREADS [ROUNDS]]   (default 4 threads, 3 rounds)
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
lock = threading.Lock()


def early_wait(until):
    lock.acquire()
    lock.release()
    time.sleep(max(0.0, until - time.time()))  # alive, without a sample


def one_round(r):
    now = time.time()
    start = int(now) + 0.96
    if start - now < 0.1:
        start += 1
    time.sleep(start - now)
    until = int(start) + 1.15
    ts = [threading.Thread(target=early_wait, args=(until,),
                           name="early-%d-%d" % (r, i)) for i in range(N)]
    lock.acquire()
    for t in ts:
        t.start()
    time.sleep(0.005)  # every thread is waiting
    lock.release()
    for t in ts:
        t.join()


for r in range(ROUNDS):
    one_round(r)
print("done")
