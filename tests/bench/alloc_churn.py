"""An allocation-heavy workload for the heap-profiling benchmark (make
bench, section 7): object churn (small objects made and dropped), string
building (joins, concatenation, formatting) and dict growth (dicts built
to thousands of keys, then dropped), SCALE rounds. Timed by the program
itself with a CPU clock; prints the seconds the work took. Runs on 2.7
and 3.x."""
import sys
import time

clock = getattr(time, "process_time", None) or time.clock


class Point(object):
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


def churn(n):
    total = 0
    for i in range(n):
        p = Point(i, i + 1)
        t = (p.x, p.y, [p.x] * 3)
        total += len(t[2])
    return total


def strings(n):
    out = []
    for i in range(n):
        s = "item-%d" % i
        s = s + ":" + s.upper()
        out.append(s)
        if len(out) == 1000:
            "".join(out)
            out = []
    return len(out)


def dicts(n):
    size = 0
    for r in range(n):
        d = {}
        for i in range(5000):
            d["k%d" % i] = [i]
        size += len(d)
    return size


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    t0 = clock()
    for _ in range(scale):
        churn(200000)
        strings(200000)
        dicts(40)
    sys.stdout.write("%.6f\n" % (clock() - t0))


main()
