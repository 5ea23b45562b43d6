# stats_shares.py - four functions with shares of the work set by
# construction, for the calibration of `pyprof top --intervals` and
# `pyprof diff --test` (tests/e2e/stats.bats, tests/lib/stats_calib.py).
#
# Usage: python stats_shares.py GROW SECONDS THREADS SEED TRUTH
#   GROW     the share of the work done by grow(): 0.10, 0.15...; a, b and
#            c do the rest in the ratio 4:3:2 of what a GROW of 0.10
#            leaves them (so raising GROW adds work to grow() alone: "one
#            function grew from 10% to 15% of the work")
#   SECONDS  CPU seconds of work per thread (roughly)
#   THREADS  threads doing it (1: the main thread itself)
#   SEED     the random order of the calls within each round
#   TRUTH    where to write {"shares": {name: fraction}}: each function's
#            CPU time, measured around every call with this thread's CPU
#            clock, over the CPU time of all the threads at the end (the
#            interpreter's start-up included: a profile's total has it)
#
# The four loops have one body. Each round calls them once each in a
# random order, with sizes of a few milliseconds, so that no call pattern
# lines up with the sampling period.
import json
import random
import sys
import threading
import time

# Iterations of the loop per unit of work (~30 us): a's calls last about
# a millisecond, longer than the sampling period at 1 kHz, so that the
# samples of one call are not independent; grow's are a few times
# shorter. Calls this long also keep the cost of timing them (charged to
# the function here, to work() in a profile) under 0.1 point of share.
UNIT = 1000
LOCK = threading.Lock()


def grow(n):
    s = 0
    for i in range(n):
        s += i
    return s


def a(n):
    s = 0
    for i in range(n):
        s += i
    return s


def b(n):
    s = 0
    for i in range(n):
        s += i
    return s


def c(n):
    s = 0
    for i in range(n):
        s += i
    return s


def work(sizes, seconds, seed, spent, ends):
    rng = random.Random(seed)
    funcs = list(sizes)
    mine = dict.fromkeys(sizes, 0)
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        rng.shuffle(funcs)
        for f in funcs:
            t0 = time.thread_time_ns()
            f(sizes[f])
            mine[f] += time.thread_time_ns() - t0
    with LOCK:
        for f, ns in mine.items():
            spent[f.__name__] = spent.get(f.__name__, 0) + ns
        ends.append(time.thread_time_ns())


def main():
    share, seconds, threads, seed = (float(sys.argv[1]), float(sys.argv[2]),
                                     int(sys.argv[3]), int(sys.argv[4]))
    # a, b and c: 90 units between them, as 4:3:2; grow: share of it all.
    rest = {a: 40, b: 30, c: 20}
    units = dict(rest)
    units[grow] = 90 * share / (1 - share)
    sizes = {f: int(u * UNIT) for f, u in units.items()}
    spent, ends = {}, []
    if threads == 1:
        work(sizes, seconds, seed, spent, ends)
    else:
        ts = [threading.Thread(target=work,
                               args=(sizes, seconds, seed * 100 + i, spent,
                                     ends)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        ends.append(time.thread_time_ns())
    total = sum(ends)
    with open(sys.argv[5], "w") as out:
        json.dump({"shares": {k: v / total for k, v in spent.items()}}, out)


if __name__ == "__main__":
    main()
