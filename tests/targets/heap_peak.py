"""heap_peak.py - a heap whose high-water mark is not its end (heap.bats).

    python heap_peak.py [--slow]

  temporaries   makes about 50 MiB (bytes objects of 1 to 4 KiB) that the
                program keeps while hold runs, then drops
  hold          keeps about 150 MiB (bytes objects of 40 to 160 KiB) for
                0.3 s beside them; then they are dropped too
  third         keeps about 100 MiB (bytes objects of 100 KiB) to the end

So the heap is highest (hold's and temporaries' 200 MiB) in the middle,
and at the end only third's 100 MiB are in use: third is in use at the
end and absent from the peak; hold and temporaries the other way round.
(hold grows last: the peak's copy is within 1/64 of the high, docs/heap.md,
and what it can miss is the last to grow; 2% of hold's, 6% of
temporaries' had they grown last.)

--slow: 2.2 s between the drop and third, and after third (a collector's
--period 1 windows: one with the high, one after it with third's only).

Prints one JSON line: each function's bytes as the program counts them
(sys.getsizeof of each object it made, the lists' own arrays aside), and
its own clocks (time.time()): start, peak_from (hold's all made) and
peak_to (just before they and the temporaries are dropped).
Runs on 3.6+.
"""
import json
import sys
import time

MIB = 1 << 20


def temporaries():
    tmp = []
    total = 0
    i = 0
    while total < 50 * MIB:
        b = bytes(1024 + (i * 613) % 3072)  # @temporaries
        tmp.append(b)
        total += sys.getsizeof(b)
        i += 1
    return tmp, total


def hold(clock):
    out = []
    total = 0
    i = 0
    while total < 150 * MIB:
        b = bytes(40960 + (i * 7919) % 122880)  # @hold
        out.append(b)
        total += sys.getsizeof(b)
        i += 1
    clock["peak_from"] = time.time()
    time.sleep(0.3)
    clock["peak_to"] = time.time()
    return out, total


def third():
    out = [bytes(102400) for _ in range(1024)]  # @third
    return out, sum(sys.getsizeof(b) for b in out)


def main():
    clock = {"start": time.time()}
    tmp, n_tmp = temporaries()
    kept, n_hold = hold(clock)
    del tmp, kept
    slow = "--slow" in sys.argv
    if slow:
        time.sleep(2.2)
    last, n_third = third()
    time.sleep(2.2 if slow else 0.2)
    out = {"hold": n_hold, "temporaries": n_tmp, "third": n_third}
    out.update(clock)
    print(json.dumps(out, sort_keys=True))
    sys.stdout.flush()
    return last


if __name__ == "__main__":
    KEPT = main()  # third's, in use when the program ends
