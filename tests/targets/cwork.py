# cwork.py - time spent inside C code, called from known Python lines.
#
# Used by tests/e2e/truth.bats: the samples taken while hashlib, sorted()
# and zlib run must be charged to the Python function and line that made
# the call. Each call sits alone on a line tagged "# @name"; the test finds
# the line number by that tag, so the file can be edited freely.
#
# Usage: python cwork.py [SECONDS]   (CPU seconds, default 3)
# Prints one JSON line with the CPU time each function took.
#
# Runs on Python 2.7 and 3.6+. The inputs are made up front (in prepare),
# at C speed, so that almost all the time inside the three functions is
# spent in C.
from __future__ import print_function

import array
import hashlib
import json
import os
import sys
import time
import zlib

try:
    cpu_clock = time.thread_time
except AttributeError:
    try:
        cpu_clock = time.process_time
    except AttributeError:
        cpu_clock = time.clock


def prepare():
    blob = os.urandom(8 << 20)
    # Half random, half repetitive, so zlib has real work on both.
    packed = blob[: 1 << 20] + b"pyprof cwork " * 80000
    ints = array.array("l", os.urandom(8 * 100000)).tolist()
    return blob, packed, ints


def hash_sha256(blob):
    digest = hashlib.sha256(blob).hexdigest()  # @sha256
    return digest


def sort_list(ints):
    result = sorted(ints)  # @sorted
    return result


def compress_zlib(packed):
    result = zlib.compress(packed, 6)  # @zlib
    return len(result)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    blob, packed, ints = prepare()
    work = [(hash_sha256, blob), (sort_list, ints), (compress_zlib, packed)]
    spent = dict((f.__name__, 0.0) for f, _ in work)
    start = cpu_clock()
    while cpu_clock() - start < seconds:
        # The function that has had the least CPU so far goes next, so
        # the three get about a third each whatever their speed on this
        # interpreter (sha256 is 30 times faster with SHA-NI).
        f, arg = min(work, key=lambda w: spent[w[0].__name__])
        t0 = cpu_clock()
        f(arg)
        spent[f.__name__] += cpu_clock() - t0
    print(json.dumps({"seconds": spent}, sort_keys=True))


if __name__ == "__main__":
    main()
