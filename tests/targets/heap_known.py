"""heap_known.py - known amounts of memory from known functions (heap.bats).

    python heap_known.py [--numpy] [--truth]

  small_objects  a million small objects (str of up to 6 digits), kept
                 in a list to the end
  big_buffer     a 100 MiB bytearray, freed before the end
  churn          200,000 small objects made and dropped
  numpy_array    (--numpy) a 200 MiB numpy array, kept
(each allocating line carries a marker comment for heap.bats)

Prints one JSON line: what the program computed, among it the bytes the
small objects and their list hold (sys.getsizeof), the same under the
profiler or not (heap.bats compares them). With --truth (Python 3, run
without the profiler) a second line, a second opinion: each function's
memory in use after it returned, from tracemalloc's traced memory before
and after the call, as {"inuse": {...}}.
Runs on 2.7 and 3.6+.
"""
import json
import sys

N_SMALL = 1000000
BIG = 100 << 20


def small_objects():
    return [str(i % 1000000) for i in range(N_SMALL)]  # @small


def big_buffer():
    return bytearray(BIG)  # @big


def churn():
    junk = [str(i) for i in range(200000)]  # @churn
    return len(junk)


def numpy_array():
    return numpy.ones(25 << 20)  # @numpy: 200 MiB of float64


KEPT = []  # what the program still holds when it ends
if "--numpy" in sys.argv:
    import numpy  # here: its import's own memory is not numpy_array's


def main():
    use_numpy = "--numpy" in sys.argv
    truth = "--truth" in sys.argv
    inuse = {}
    if truth:
        import tracemalloc
        tracemalloc.start(1)

    def call(name, fn):
        before = tracemalloc.get_traced_memory()[0] if truth else 0
        r = fn()
        if truth:
            inuse[name] = tracemalloc.get_traced_memory()[0] - before
        return r

    keep = call("small_objects", small_objects)
    buf = call("big_buffer", big_buffer)
    n_churn = call("churn", churn)
    arr = call("numpy_array", numpy_array) if use_numpy else None
    # what small_objects holds, by the program's own measure: each
    # object's size and the list's (sys.getsizeof is what CPython asked
    # its allocator for here: it agrees with tracemalloc to the byte on
    # 3.6-3.13, and --truth shows it)
    small_bytes = sum(sys.getsizeof(s) for s in keep) + sys.getsizeof(keep)
    out = {"small": len(keep), "small_bytes": small_bytes,
           "big": len(buf), "churn": n_churn}
    if arr is not None:
        out["numpy"] = int(arr.nbytes)
    KEPT.extend([keep, arr])
    del buf  # freed before the end: alloc'd, not in use
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    if truth:
        sys.stdout.write(json.dumps({"inuse": inuse}, sort_keys=True) + "\n")


main()
