"""A fixed amount of CPU-bound work (recursion, float loops, json, regex,
object churn), timed by the program itself with a CPU clock. Prints the
seconds the work took, so that a benchmark compares the work alone, not
interpreter start-up. With --threads (3.7+), prints two numbers: the
work's CPU on its own thread (time.thread_time) and the whole process's
meanwhile (time.process_time: a profiler's own threads included). Runs on
Python 2.7 and 3.x."""
import json
import re
import sys
import time

clock = getattr(time, "process_time", None) or time.clock


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def floats(n):
    x = 0.0
    for i in range(n):
        x += (i * 0.5) ** 0.5
    return x


def jsons(n):
    doc = {"a": list(range(50)), "b": {"c": "d" * 20, "e": [1.5, 2.5]}}
    for _ in range(n):
        json.loads(json.dumps(doc))


def regexes(n):
    pat = re.compile(r"(\w+)@(\w+)\.com")
    text = "mail bob@example.com and alice@test.com now " * 20
    for _ in range(n):
        pat.findall(text)


class Node(object):
    def __init__(self, v, nxt):
        self.v = v
        self.nxt = nxt


def churn(n):
    head = None
    for i in range(n):
        head = Node(i, head if i % 100 else None)


def work(scale):
    fib(int(24 + (scale > 2)))
    floats(int(600000 * scale))
    jsons(int(6000 * scale))
    regexes(int(3000 * scale))
    churn(int(600000 * scale))


def main():
    args = [a for a in sys.argv[1:] if a != "--threads"]
    scale = float(args[0]) if args else 1.0
    if "--threads" in sys.argv:
        t0, p0 = time.thread_time(), time.process_time()
        work(scale)
        print("%.6f %.6f" % (time.thread_time() - t0,
                             time.process_time() - p0))
        return
    t0 = clock()
    work(scale)
    print("%.6f" % (clock() - t0))


if __name__ == "__main__":
    main()
