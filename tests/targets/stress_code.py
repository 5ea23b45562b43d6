# stress_code.py - code objects that change and die under the sampler.
#
# For tests/e2e/stress.bats: a stress program that replaces functions'
# __code__ objects, creates and drops code objects in a loop, and raises
# and catches exceptions, while being sampled at the highest rate, must
# not crash and must not be attributed to a wrong name. For SECONDS of wall time, at
# once:
#   - the main thread swaps victim.__code__ between swap_alpha's and
#     swap_beta's code while two caller threads call victim(): their
#     frames run one code or the other, and must be named by it;
#   - a generator thread compiles fresh source for gen_N (N = 0, 1, ...,
#     each in its own pseudo-file "<stress_gen_N>", preceded by N % 5 blank
#     lines so that every N has its own line numbers), runs it through exec
#     (its "<module>"), calls gen_N, does the same for a lambda in
#     "<stress_lambda_N>", puts gen_N's code into victim2.__code__ and
#     calls that (the previous one dies then), and drops everything; gc
#     runs every 64 N;
#   - an exception thread raises and catches in a loop: plain, chained,
#     through a generator's throw(), and through a finally.
# Every loop does CPU work in its own lines, so that samples land there.
#
# Usage: python stress_code.py [SECONDS [NAMES_JSON]]   (default 3)
# Prints the same lines on every run (no counts): a self-check of each
# activity; exits 0, or 1 if a self-check failed. With NAMES_JSON, writes
# what a profile of this run may name (tests/lib/stress_names.py reads it):
#   {"file": this file's path,
#    "defined": {name: [lines]} for every code object in this file (its
#                qualified name where the interpreter has one, 3.11+),
#    "generated": the number of gen_N/lambda pairs made,
#    "pad_mod": 5,
#    "generated_lines": {"gen", "gen_module", "lambda", "lambda_module":
#                a list, by N % 5, of the lines of that code},
#    "stdlib": the standard library's directory}
# Lines are the interpreter's own: dis.findlinestarts and co_firstlineno
# (3.11+ puts a module's first instruction at line 0).
# Runs on Python 2.7 and 3.6+.
from __future__ import print_function

import dis
import gc
import json
import os
import sys
import threading
import time

PAD_MOD = 5
# gen_N's source, after N % PAD_MOD blank lines: line 1 is the def.
GEN_SOURCE = (
    "def gen_%d(n):\n"
    "    acc = %d\n"
    "    for i in range(n):\n"
    "        acc = (acc * 31 + i) %% 65521\n"
    "    return acc\n"
)
# No comprehension: before 3.12 it would be a code object of its own.
LAMBDA_SOURCE = "lambda n: sum(range(n + %d %% 7))\n"

stop = threading.Event()
failures = []  # (activity, what)
lock = threading.Lock()
ACTIVITIES = ("swap", "generate", "exceptions")


def failed(activity, what):
    with lock:
        failures.append((activity, what))


def swap_alpha():
    total = 0
    for i in range(300):
        total += i * 3
    return ("alpha", total)


def swap_beta():
    acc = 1
    for j in range(300):
        acc = (acc * 7 + j) % 1000003
    return ("beta", acc)


def victim():
    return ("victim", 0)


def victim2(n):
    return n


ALPHA = swap_alpha()
BETA = swap_beta()
CODES = (swap_alpha.__code__, swap_beta.__code__)


def caller():
    calls = 0
    while not stop.is_set():
        r = victim()
        if r != ALPHA and r != BETA:
            failed("swap", "victim() returned %r" % (r,))
            return
        calls += 1
    if not calls:
        failed("swap", "a caller never ran")


def swapper(end):
    k = 0
    while time.time() < end and not failures:
        victim.__code__ = CODES[k & 1]
        k += 1
        spin_swapper(50)
    victim.__code__ = CODES[0]


def spin_swapper(n):
    x = 0
    for i in range(n):
        x ^= i
    return x


def expected_gen(n, arg):
    acc = n
    for i in range(arg):
        acc = (acc * 31 + i) % 65521
    return acc


def generator():
    n = 0
    while not stop.is_set():
        pad = "\n" * (n % PAD_MOD)
        code = compile(pad + GEN_SOURCE % (n, n), "<stress_gen_%d>" % n,
                       "exec")
        ns = {}
        exec(code, ns)
        fn = ns["gen_%d" % n]
        for arg in (200, 400):
            if fn(arg) != expected_gen(n, arg):
                failed("generate", "gen_%d(%d) returned %r"
                       % (n, arg, fn(arg)))
        victim2.__code__ = fn.__code__
        if victim2(300) != expected_gen(n, 300):
            failed("generate", "victim2 running gen_%d's code" % n)
        lam = eval(compile(pad + LAMBDA_SOURCE % n, "<stress_lambda_%d>" % n,
                           "eval"))
        if lam(100) != sum(range(100 + n % 7)):
            failed("generate", "lambda %d" % n)
        del code, ns, fn, lam
        n += 1
        if n % 64 == 0:
            gc.collect()
    victim2.__code__ = generator_done.__code__
    generated[0] = n


def generator_done(n):
    return n


generated = [0]


class StressError(Exception):
    pass


def raiser(n):
    if n % 3 == 0:
        raise StressError(n)
    try:
        raise ValueError(n)
    except ValueError as e:
        raise StressError(e)


def thrown_into():
    while True:
        try:
            yield 1
        except StressError:
            yield 2


def with_finally(n):
    try:
        raiser(n)
    finally:
        spin_swapper(10)


def exceptions():
    raised = caught = 0
    gen = thrown_into()
    next(gen)
    while not stop.is_set():
        for n in range(20):
            raised += 1
            try:
                raiser(n)
            except StressError:
                caught += 1
            raised += 1
            try:
                with_finally(n)
            except StressError:
                caught += 1
            if gen.throw(StressError(n)) != 2:
                failed("exceptions", "generator throw")
            next(gen)
    if raised != caught or not raised:
        failed("exceptions", "raised %d, caught %d" % (raised, caught))


def code_lines(code):
    lines = set([code.co_firstlineno])
    for _, line in dis.findlinestarts(code):
        if line is not None:
            lines.add(line)
    return lines


def defined_names():
    """Every code object of this file: {name: sorted lines}."""
    out = {}
    with open(__file__) as f:
        top = compile(f.read(), __file__, "exec")
    todo = [top]
    while todo:
        code = todo.pop()
        name = getattr(code, "co_qualname", code.co_name)
        out.setdefault(name, set()).update(code_lines(code))
        for c in code.co_consts:
            if hasattr(c, "co_code"):
                todo.append(c)
    return dict((k, sorted(v)) for k, v in out.items())


def generated_lines():
    """The line numbers the interpreter gives gen_N and lambda code, and
    their <module> code, for each padding (they do not depend on N)."""
    out = {"gen": [], "gen_module": [], "lambda": [], "lambda_module": []}
    for pad in range(PAD_MOD):
        top = compile("\n" * pad + GEN_SOURCE % (0, 0), "<g>", "exec")
        fn = [c for c in top.co_consts if hasattr(c, "co_code")][0]
        out["gen"].append(sorted(code_lines(fn)))
        out["gen_module"].append(sorted(code_lines(top)))
        top = compile("\n" * pad + LAMBDA_SOURCE % 0, "<l>", "eval")
        fn = [c for c in top.co_consts if hasattr(c, "co_code")][0]
        out["lambda"].append(sorted(code_lines(fn)))
        out["lambda_module"].append(sorted(code_lines(top)))
    return out


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    victim.__code__ = CODES[0]  # before any caller runs
    threads = [threading.Thread(target=caller, name="caller-1"),
               threading.Thread(target=caller, name="caller-2"),
               threading.Thread(target=generator, name="generator"),
               threading.Thread(target=exceptions, name="exceptions")]
    for t in threads:
        t.start()
    swapper(time.time() + seconds)  # the main thread's share
    stop.set()
    for t in threads:
        t.join()
    for activity in ACTIVITIES:
        bad = [w for a, w in failures if a == activity]
        print("%s: %s" % (activity, "BAD " + bad[0] if bad else "ok"))
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            json.dump({"file": __file__, "defined": defined_names(),
                       "generated": generated[0], "pad_mod": PAD_MOD,
                       "generated_lines": generated_lines(),
                       "stdlib": os.path.dirname(os.__file__)},
                      f, sort_keys=True, indent=1)
    if failures:
        for a, w in failures:
            print("FAILED: %s: %s" % (a, w), file=sys.stderr)
        sys.exit(1)
    print("done")


if __name__ == "__main__":
    main()
