# waits_locks.py - one threading.Lock, two holders of different lengths
# (hold_long 8 ms, hold_short 2 ms) and two waiters that hold it for
# microseconds (wait_a, wait_b), every thread timing its own waits with
# time.perf_counter() around each acquire.
#
# Used by tests/e2e/waits.bats (block and mutex profiles). Prints one JSON
# line computed from the program's own log:
#   block      per function, the seconds its acquires took
#   mutex      per function, the seconds other threads waited while it
#              held the lock (each wait's overlap with each hold)
#   releaser   per function, Go's charge: each wait's whole length to the
#              function whose release let it in (the last release before
#              the acquire), for docs/waits.md's comparison
# With LOG, writes the log itself there as JSON instead, for a check over a
# part of the run (an HTTP window): {"offset": time.time() less
# time.perf_counter(), "log": [[function, start, acquired, released],
# ...]} (perf_counter is CLOCK_MONOTONIC on Linux).
# Usage: python waits_locks.py [SECONDS [LOG | labels]]   (default 1.0)
#   labels: each thread runs inside pyprof.labels(role=<its function>)
#   (the pyprof module on PYTHONPATH), for the labels carried on waits;
#   the truth is printed as without it.
import json
import sys
import threading
import time

lock = threading.Lock()
log = []  # (function, start, acquired, released)


def run(name, hold, pause, deadline):
    clock = time.perf_counter
    mine = []
    while clock() < deadline:
        t0 = clock()
        lock.acquire()
        t1 = clock()
        if hold:
            time.sleep(hold)
        t2 = clock()
        lock.release()
        mine.append((name, t0, t1, t2))
        time.sleep(pause)
    log.extend(mine)


def hold_long(deadline):
    run("hold_long", 0.008, 0.002, deadline)


def hold_short(deadline):
    run("hold_short", 0.002, 0.002, deadline)


def wait_a(deadline):
    run("wait_a", 0, 0.001, deadline)


def wait_b(deadline):
    run("wait_b", 0, 0.001, deadline)


def truth():
    names = ["hold_long", "hold_short", "wait_a", "wait_b"]
    block = dict.fromkeys(names, 0.0)
    mutex = dict.fromkeys(names, 0.0)
    releaser = dict.fromkeys(names, 0.0)
    holds = sorted(log, key=lambda e: e[2])
    for name, t0, t1, _ in log:
        block[name] += t1 - t0
    for hname, _, a, r in holds:
        for name, t0, t1, _ in log:
            if name != hname:
                mutex[hname] += max(0.0, min(r, t1) - max(a, t0))
    releases = sorted((e[3], e[0]) for e in log)
    k = 0
    for name, t0, t1, _ in sorted(log, key=lambda e: e[2]):
        while k + 1 < len(releases) and releases[k + 1][0] <= t1:
            k += 1
        if releases and releases[k][0] <= t1 and t1 - t0 > 0:
            releaser[releases[k][1]] += t1 - t0
    return {"block": block, "mutex": mutex, "releaser": releaser}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    deadline = time.perf_counter() + seconds
    fns = (hold_long, hold_short, wait_a, wait_b)
    if sys.argv[2:3] == ["labels"]:
        import pyprof

        def labelled(f):
            def body(deadline):
                with pyprof.labels(role=f.__name__):
                    f(deadline)
            return body
        fns = [labelled(f) for f in fns]
    threads = [threading.Thread(target=f, args=(deadline,)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(sys.argv) <= 2 or sys.argv[2] == "labels":
        print(json.dumps(truth()))
    else:
        # the pair read closest together of a few
        pairs = []
        for _ in range(5):
            a = time.perf_counter()
            w = time.time()
            b = time.perf_counter()
            pairs.append((b - a, w - (a + b) / 2))
        with open(sys.argv[2], "w") as f:
            json.dump({"offset": min(pairs)[1], "log": log}, f)


main()
