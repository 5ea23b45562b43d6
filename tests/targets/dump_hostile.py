"""dump_hostile.py MODE - a process that sabotages its own memory for
`pyprof dump` read from outside (dump_outside.bats), 2.7 to 3.15.
Prints "ready" once in place, then sleeps until killed (exit: exits).
  sizes  a running function whose name claims 2**50 characters and whose
         line table claims 2**40 bytes (ctypes writes the sizes);
  loop   the outermost of three running frames linked back to the
         innermost (its f_back / previous), a chain without end;
  exit   three threads 200 calls deep, then the process exits after a
         few tenths of a second, while it is being read;
  names  two threads whose threading names are no names: one claims
         2**50 characters, the other is an int."""

import ctypes
import os
import random
import sys
import threading
import time

MODE = sys.argv[1]
held = []


def ptr(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def readable():
    spans = []
    with open("/proc/self/maps") as f:
        for line in f:
            part = line.split()
            if part[1].startswith("r"):
                lo, hi = (int(x, 16) for x in part[0].split("-"))
                spans.append((lo, hi))
    return spans


def can_read(spans, addr, n):
    return any(lo <= addr and addr + n <= hi for lo, hi in spans)


def absurd_named_function_q():
    held.append(sys._getframe())
    while True:
        time.sleep(0.05)


def sized_caller():
    absurd_named_function_q()


def ring_a():
    ring_b()


def ring_b():
    ring_c()


def ring_c():
    held.append(sys._getframe())
    while True:
        time.sleep(0.05)


def nodes(fc):
    """The frames' chain nodes: the frame objects (<= 3.10), or the
    interpreter frames they point to (3.11+, found by their frame_obj
    pointing back)."""
    fb = fc.f_back
    fa = fb.f_back
    held.extend([fb, fa])
    if sys.version_info < (3, 11):
        return [id(fc), id(fb), id(fa)]
    spans = readable()
    out = []
    for fo in (fc, fb, fa):
        for o in range(16, 72, 8):
            p = ptr(id(fo) + o)
            if p > 4096 and p % 8 == 0 and can_read(spans, p, 128) and \
                    any(ptr(p + k) == id(fo) for k in range(0, 128, 8)):
                out.append(p)
                break
        else:
            raise SystemExit("no interpreter frame found")
    return out


def make_loop(fc):
    c, b, a = nodes(fc)
    for o in range(0, 128, 8):
        if ptr(c + o) == b and ptr(b + o) == a:
            ctypes.c_void_p.from_address(a + o).value = c
            return
    raise SystemExit("no link found")


def sleeper():
    held.append(1)
    while True:
        time.sleep(0.05)


def deep(n):
    if n:
        return deep(n - 1)
    while True:
        time.sleep(0.01)


if MODE == "sizes":
    threading.Thread(target=sized_caller).start()
    while not held:
        time.sleep(0.01)
    code = absurd_named_function_q.__code__
    table = getattr(code, "co_linetable", None)
    if table is None or sys.version_info < (3, 10):
        table = code.co_lnotab
    names = [code.co_name] + ([code.co_qualname]
                              if hasattr(code, "co_qualname") else [])
    for s in names:  # PyASCIIObject.length / 2.7 ob_size
        ctypes.c_ssize_t.from_address(id(s) + 16).value = 1 << 50
    ctypes.c_ssize_t.from_address(id(table) + 16).value = 1 << 40
elif MODE == "loop":
    threading.Thread(target=ring_a).start()
    while not held:
        time.sleep(0.01)
    make_loop(held[0])
elif MODE == "exit":
    for _ in range(3):
        t = threading.Thread(target=deep, args=(200,))
        t.daemon = True
        t.start()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    time.sleep(random.uniform(0.1, 0.6))
    os._exit(0)
elif MODE == "names":
    absurd = threading.Thread(target=sleeper, name="hostile-absurd-name")
    not_str = threading.Thread(target=sleeper, name="hostile-not-a-str")
    for t in (absurd, not_str):
        t.daemon = True
        t.start()
    while len(held) < 2:
        time.sleep(0.01)
    # PyASCIIObject.length / 2.7 ob_size
    ctypes.c_ssize_t.from_address(id(absurd.name) + 16).value = 1 << 50
    setattr(not_str, "_Thread__name" if sys.version_info < (3,) else "_name",
            12345)
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    time.sleep(1)
