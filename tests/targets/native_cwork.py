# native_cwork.py - Python calling into C, and C calling back into Python,
# for the merged native stacks of tests/e2e/native.bats (every interpreter).
#
# Four kinds of work, each called from its own line tagged "# @name":
#   sha256   hashlib (OpenSSL's or CPython's own SHA-256 in C)
#   zlib     zlib.compress (libz's deflate)
#   regex    the re module's C matcher (_sre) on a long text
#   keysort  sorted() with a Python key function: C calling back into
#            Python, so a stack has two eval-loop calls with C between them
# plus pure Python recursion (deep), so that stacks are several Python
# frames deep on every version.
#
# Usage: python native_cwork.py [SECONDS]   (CPU seconds, default 3)
# Prints one JSON line with the CPU time each kind took.
#
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import hashlib
import json
import re
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

BLOB = bytes(bytearray((i * 7 + (i >> 5)) & 0xFF for i in range(1 << 20)))
# made once: `BLOB * 4` on the hashing line copied 4 MiB into fresh pages
# at every call, a fifth of that line's samples with no hash function
# under them (native.bats wants 80% with one: 79 of 99 failed it)
BLOB4 = BLOB * 4
TEXT = ("lorem ipsum dolor sit amet " * 8000) + "needle"
PATTERN = re.compile(r"(a|b|c)+d?[xyz]{2,}needle")
KEYS = list(range(20000, 0, -1))


def sha256():
    return hashlib.sha256(BLOB4).hexdigest()  # @sha256


def compress():
    return zlib.compress(BLOB, 9)  # @zlib


def regex():
    return PATTERN.search(TEXT)  # @regex


def key(x):
    return (x * 2654435761) % 1000003  # @key


def keysort():
    return sorted(KEYS, key=key)  # @keysort


def deep(n, fn):
    if n == 0:
        return fn()
    return deep(n - 1, fn)  # @deep


def main():
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    spent = {"sha256": 0.0, "zlib": 0.0, "regex": 0.0, "keysort": 0.0}
    work = (("sha256", sha256), ("zlib", compress), ("regex", regex),
            ("keysort", keysort))
    start = cpu_clock()
    while cpu_clock() - start < budget:
        for name, fn in work:
            t0 = cpu_clock()
            deep(5, fn)
            spent[name] += cpu_clock() - t0
    print(json.dumps({"seconds": spent}))


main()
