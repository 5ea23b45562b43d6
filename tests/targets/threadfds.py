# threadfds.py - threads that start, burn a little CPU and end, while
# another thread lists /proc/self/fd as fast as it can: prints every
# descriptor that appeared at some moment and that the program did not
# open (tests/e2e/unseen.bats), then "done".
#
# Usage: python threadfds.py ROUNDS
import os
import sys
import threading


def listing():
    return set(int(n) for n in os.listdir("/proc/self/fd"))


def work():
    x = 0
    for i in range(20000):
        x += i * i
    return x


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    base = listing()
    seen = {}
    stop = []

    def watch():
        while not stop:
            for fd in listing() - base:
                if fd not in seen:
                    try:
                        seen[fd] = os.readlink("/proc/self/fd/%d" % fd)
                    except OSError:
                        seen[fd] = "(gone)"

    w = threading.Thread(target=watch)
    w.start()
    for _ in range(rounds):
        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    stop.append(1)
    w.join()
    for fd in sorted(seen):
        print("extra %d %s" % (fd, seen[fd]))
    print("done")


main()
