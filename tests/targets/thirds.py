# thirds.py - one thread that sleeps a third of the time, waits on a
# socket a third, and computes a third, measuring the wall time of each.
#
# Used by tests/e2e/threads.bats: in wall mode each function's share of the
# samples must be within 5 points of its share of the wall time measured
# here, with sleep_third and socket_third off CPU and compute_third on it;
# in CPU mode only compute_third may show.
#
# Usage: python thirds.py [SECONDS]   (wall seconds, default 3)
# Prints one JSON line: {"shares": {func: fraction}, "seconds": {...},
# "compute_cpu_ratio": the CPU time compute_third got over its wall time
# (below 1 when the machine is busy: then it was not always on CPU),
# "rounds": how many times each function ran}.
#
# Each round gives each function the same duration, drawn at random
# (seeded) between 30 and 90 ms, so that the rounds cannot line up with the
# sampler's ticks. socket_third blocks in recv() on one end of a socket
# pair whose other end never writes, until its timeout (CPython waits in
# poll() for it). Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import json
import random
import socket
import sys
import time

from tclock import thread_cpu

try:
    wall_clock = time.perf_counter
except AttributeError:
    wall_clock = time.time


def sleep_third(d):
    time.sleep(d)


def socket_third(sock, d):
    sock.settimeout(d)
    try:
        sock.recv(1)
    except socket.timeout:
        pass


def compute_third(d):
    end = wall_clock() + d
    x = 0
    while wall_clock() < end:
        for i in range(200):
            x = (x * 31 + i) % 1000003
    return x


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    rng = random.Random(4321)
    a, b = socket.socketpair()
    spent = {"sleep_third": 0.0, "socket_third": 0.0, "compute_third": 0.0}
    compute_cpu = 0.0
    rounds = 0
    start = wall_clock()
    while wall_clock() - start < seconds:
        d = 0.03 + 0.06 * rng.random()
        t0 = wall_clock()
        sleep_third(d)
        t1 = wall_clock()
        socket_third(a, d)
        t2 = wall_clock()
        c0 = thread_cpu()
        compute_third(d)
        compute_cpu += thread_cpu() - c0
        t3 = wall_clock()
        spent["sleep_third"] += t1 - t0
        spent["socket_third"] += t2 - t1
        spent["compute_third"] += t3 - t2
        rounds += 1
    a.close()
    b.close()
    total = sum(spent.values())
    print(json.dumps({
        "shares": dict((k, v / total) for k, v in spent.items()),
        "seconds": spent,
        "compute_cpu": compute_cpu,
        "compute_cpu_ratio": compute_cpu / spent["compute_third"],
        "rounds": rounds,
    }, sort_keys=True))


if __name__ == "__main__":
    main()
