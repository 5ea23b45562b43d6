"""heap_leak.py - a leak that grows every 0.1 s, beside steady churn
(heap.bats).

    python heap_leak.py SECONDS

leak() keeps a 1 MiB bytearray every 0.1 s in a global list; steady()
makes and drops 1 MiB the same way. Prints the
number of chunks leaked.
"""
import sys
import time

LEAKED = []


def leak():
    LEAKED.append(bytearray(1 << 20))  # @leak


def steady():
    tmp = bytearray(1 << 20)  # @steady
    return len(tmp)


def main():
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        leak()
        steady()
        time.sleep(0.1)
    sys.stdout.write("%d\n" % len(LEAKED))


main()
