# attach_rate.py - a CPU-bound loop that measures its own speed, for
# `make bench` section 14 (attach).
#
# Usage: python attach_rate.py SECONDS OUT_JSON
# Prints "ready", then runs SECONDS; writes [[monotonic_start,
# iterations_per_cpu_second], ...], one per 0.25 s slice, so that the
# slices inside an attach's window (ctl's since_mono_ns) can be compared
# with those outside it.
import json
import sys
import time


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    print("ready", flush=True)
    end = time.monotonic() + seconds
    slices = []
    while time.monotonic() < end:
        t0, c0, n = time.monotonic(), time.thread_time(), 0
        while time.monotonic() - t0 < 0.25:
            for _ in range(1000):
                pass
            n += 1
        slices.append([t0, n / max(time.thread_time() - c0, 1e-9)])
    with open(out, "w") as f:
        json.dump(slices, f)


if __name__ == "__main__":
    main()
