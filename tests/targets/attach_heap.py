"""attach_heap.py - memory held and freed on both sides of an attach
(attach.bats).

    python attach_heap.py GO_FILE END_FILE

  before_small, before_big  allocated before the attach and kept; half of
                            each freed after it (free_half)
  after_small               200,000 small objects (str) and their list,
                            allocated after the attach, kept
  after_big                 400 bytearrays of 50,000 bytes, kept
  churn                     small objects made and dropped after it
Prints "ready" once the blocks from before are held, waits for GO_FILE
(the test makes it once the attach's window is open), does the rest and
prints one JSON line: what each kept set holds by the program's own
measure (sys.getsizeof: what CPython asked its allocators for). Then
waits for END_FILE and prints "done". 3.x.
"""
import json
import os
import sys
import time


def before_small():
    return [str(i) * 2 for i in range(200000)]


def before_big():
    return [bytearray(50000) for _ in range(400)]


def after_small():
    return [str(i) * 2 for i in range(200000)]


def after_big():
    return [bytearray(50000) for _ in range(400)]


def churn():
    n = 0
    for _ in range(20):
        junk = [str(i) for i in range(20000)]
        n += len(junk)
    return n


def free_half(kept):
    del kept[::2]


def held(objs):
    return sum(sys.getsizeof(o) for o in objs) + sys.getsizeof(objs)


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.02)


def main():
    go, end = sys.argv[1], sys.argv[2]
    old_small, old_big = before_small(), before_big()
    print("ready", flush=True)
    wait_file(go)
    free_half(old_small)
    free_half(old_big)
    small, big = after_small(), after_big()
    n_churn = churn()
    out = {"after_small": held(small), "after_big": held(big),
           "churn": n_churn, "before_left": len(old_small) + len(old_big)}
    print(json.dumps(out, sort_keys=True), flush=True)
    wait_file(end)
    print("done", flush=True)


main()
