# prethreads.py SECONDS - three worker threads, started before anything
# attaches, each spinning in worker_spin for SECONDS, beside the main
# thread in main_spin (tests/e2e/attach.bats: attach --native unwinds
# threads that ran before the library arrived). Prints "ready" once the
# workers run, "done" at the end.
import sys
import threading
import time


def worker_spin(end):
    x = 0
    while time.time() < end:
        for i in range(2000):
            x += i
    return x


def main_spin(end):
    return worker_spin(end)


def main():
    end = time.time() + float(sys.argv[1])
    workers = [threading.Thread(target=worker_spin, args=(end,),
                                name="worker-%d" % i) for i in range(3)]
    for w in workers:
        w.start()
    print("ready", flush=True)
    main_spin(end)
    for w in workers:
        w.join()
    print("done", flush=True)


main()
