# labels_api.py - what the pyprof module promises, checked from inside a
# program: nesting, restoring on exit and on exceptions, decorators, the
# scope of labels (asyncio tasks and threads on 3.7+, threads on 2.7 and
# 3.6), the refusals of bad names, and values that never raise.
#
# Used by tests/e2e/labels.bats, with the library preloaded (labels in
# force are seen by current_labels()) and without it (every block is a
# no-op; the checks of bad input still apply).
#
# Usage: python labels_api.py on|off
# Prints "ok N" (N checks) and exits 0, or prints the failed check and
# exits 1. Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import sys
import threading

import pyprof

ON = sys.argv[1] == "on"
PY2 = sys.version_info[0] == 2
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        print("FAILED: %s" % what)
        sys.exit(1)


def labels_now():
    return pyprof.current_labels()


def want(d):
    """d when the library is there, {} without it."""
    return d if ON else {}


def nesting():
    check(pyprof.enabled() == ON, "enabled() is %s" % ON)
    check(labels_now() == {}, "no labels at the start")
    with pyprof.labels(endpoint="/a", tenant="t1") as block:
        check(labels_now() == want({"endpoint": "/a", "tenant": "t1"}),
              "outer block: %r" % labels_now())
        with pyprof.labels(tenant="t2", job=7):
            check(labels_now() == want({"endpoint": "/a", "tenant": "t2",
                                        "job": "7"}),
                  "inner block overrides and adds, values made str: %r"
                  % labels_now())
        check(labels_now() == want({"endpoint": "/a", "tenant": "t1"}),
              "outer labels back after the inner block: %r" % labels_now())
        check(isinstance(block, pyprof.labels), "with ... as gives the block")
    check(labels_now() == {}, "none after the outer block")
    with pyprof.labels({"http.route": "/u/{id}"}, method="GET"):
        check(labels_now() == want({"http.route": "/u/{id}",
                                    "method": "GET"}),
              "a mapping allows dotted names: %r" % labels_now())
    # the same block object entered twice, nested
    b = pyprof.labels(x="1")
    with b:
        with b:
            check(labels_now() == want({"x": "1"}), "re-entered block")
        check(labels_now() == want({"x": "1"}), "re-entered block, outer")
    check(labels_now() == {}, "none after a re-entered block")


def exceptions():
    try:
        with pyprof.labels(endpoint="/boom"):
            raise KeyError("x")
    except KeyError:
        pass
    check(labels_now() == {}, "labels put back when an exception leaves")

    @pyprof.labels(job="reindex")
    def job(n):
        if n < 0:
            raise ValueError("negative")
        return labels_now(), n * 2

    got, doubled = job(3)
    check(doubled == 6, "a decorated function returns its value")
    check(got == want({"job": "reindex"}), "decorator: %r" % got)
    check(job.__name__ == "job", "decorator keeps the name")
    try:
        job(-1)
    except ValueError:
        pass
    check(labels_now() == {}, "decorator puts labels back on exceptions")


def refused(fn, exc, text):
    try:
        fn()
    except exc as e:
        check(text in str(e), "%s message %r mentions %r" % (exc.__name__,
                                                             str(e), text))
        return
    check(False, "%s not raised (%s)" % (exc.__name__, text))


def never_raises():
    """Values are the program's data (a URL path): they never raise, with
    or without the library; what samples carry is made to fit and
    counted (pyprof.stats())."""
    before = pyprof.stats()
    with pyprof.labels(k="a\0b"):
        check(labels_now() == want({"k": u"a\ufffdb" if not PY2 else
                                     "a\xef\xbf\xbdb"}),
              "a NUL in a value becomes U+FFFD")
    path = "/api/" + "x" * (2 * pyprof.MAX_BYTES)
    with pyprof.labels(endpoint=path, method="GET"):
        check(labels_now() == want({"endpoint": path, "method": "GET"}),
              "a long value is in force as given")
    if not PY2:
        bad = u"/caf\udce9"  # os.fsdecode of a path that is not UTF-8
        with pyprof.labels(endpoint=bad):
            check(labels_now() == want({"endpoint": bad}),
                  "a lone surrogate is in force as given")
    many = dict(("k%d" % i, "v") for i in range(pyprof.MAX_LABELS + 1))
    with pyprof.labels(many):
        check(len(labels_now()) == (len(many) if ON else 0),
              "more than MAX_LABELS labels enter")
    with pyprof.labels({"n" * pyprof.MAX_BYTES: "v"}):
        pass
    check(labels_now() == {}, "nothing left in force after them")
    after = pyprof.stats()
    grew = dict((k, after[k] - before[k]) for k in after)
    if ON:
        check(grew["values_replaced"] >= (1 if PY2 else 2),
              "replacements counted: %r" % grew)
        check(grew["values_cut"] == 1, "one value cut: %r" % grew)
        check(grew["labels_dropped"] == 2, "labels left out: %r" % grew)
    else:
        check(grew["values_cut"] == grew["labels_dropped"] == 0,
              "nothing cut without the library: %r" % grew)


def bad_input():
    refused(lambda: pyprof.labels(pid="1"), ValueError, "reserved")
    refused(lambda: pyprof.labels(thread_name="x"), ValueError, "reserved")
    refused(lambda: pyprof.labels({1: "x"}), TypeError, "must be str")
    refused(lambda: pyprof.labels({"": "x"}), ValueError, "empty")
    refused(lambda: pyprof.labels({"a\0b": "x"}), ValueError, "NUL")
    refused(lambda: pyprof.labels({"a": 1}, {"b": 2}), TypeError,
            "at most one mapping")
    never_raises()


def threads():
    seen = {}

    def worker():
        seen["start"] = labels_now()
        with pyprof.labels(worker="w"):
            seen["inside"] = labels_now()
            ev.set()
            go.wait()

    ev, go = threading.Event(), threading.Event()
    with pyprof.labels(endpoint="/main"):
        t = threading.Thread(target=worker)
        t.start()
        ev.wait()
        check(labels_now() == want({"endpoint": "/main"}),
              "a thread's labels do not leak into the main thread: %r"
              % labels_now())
        go.set()
        t.join()
    check(seen["start"] == {}, "a new thread does not inherit labels: %r"
          % seen["start"])
    check(seen["inside"] == want({"worker": "w"}),
          "a thread's own labels: %r" % seen["inside"])


ASYNC = '''
import asyncio
import contextvars

async def tasks():
    seen = {}

    async def handler(name):
        with pyprof.labels(endpoint=name):
            for step in range(5):
                seen.setdefault(name, []).append(labels_now())
                await asyncio.sleep(0)

    @pyprof.labels(job="coro")
    async def decorated():
        await asyncio.sleep(0)
        return labels_now()

    with pyprof.labels(service="svc"):
        a = asyncio.ensure_future(handler("/a"))
        b = asyncio.ensure_future(handler("/b"))
    await asyncio.gather(a, b)
    for name in ("/a", "/b"):
        for got in seen[name]:
            check(got == want({"service": "svc", "endpoint": name}),
                  "task %s sees its own labels at every step: %r"
                  % (name, got))
    check(labels_now() == {}, "the creating code's block ended")
    got = await decorated()
    check(got == want({"job": "coro"}), "decorated coroutine: %r" % got)
    check(labels_now() == {}, "decorated coroutine put labels back")

    # a copied context carries the labels into a thread
    with pyprof.labels(copied="yes"):
        ctx = contextvars.copy_context()
    out = {}
    t = threading.Thread(target=lambda: out.update(ctx.run(labels_now)))
    t.start()
    t.join()
    check(out == want({"copied": "yes"}), "a copied context: %r" % out)

loop = asyncio.new_event_loop()
loop.run_until_complete(tasks())
loop.close()
'''


def main():
    nesting()
    exceptions()
    bad_input()
    threads()
    if sys.version_info >= (3, 7):
        exec(ASYNC, globals())
    print("ok %d" % checks[0])


main()
