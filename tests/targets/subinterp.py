"""subinterp.py SECONDS - CPU work in subinterpreters (3.12+), for
chains.bats: about a third of SECONDS of CPU in main_work on the main
thread, then two thirds in work, called in subinterpreters from two
threads of the main interpreter: 3.14+ through
concurrent.futures.InterpreterPoolExecutor, 3.12 and 3.13 through the
private _xxsubinterpreters / _interpreters module (one interpreter per
thread). Every call times itself by its thread's clocks
(subinterp_work.py). Prints one JSON line: {"shares": {"main_work": CPU
s, "work": CPU s}, "work_wall": wall s of the work calls, "worker_life":
wall s that no worker thread outlives (from before the first starts to
after the last ends), "names": the worker threads' names}."""
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import subinterp_work  # noqa: E402

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
CALL = 200000  # loop turns per call: about 10-20 ms
WORKERS = 2


def turns_per_second():
    c, _ = subinterp_work.main_work(CALL)
    return CALL / max(c, 1e-4)


def by_pool(n_calls):
    from concurrent.futures import InterpreterPoolExecutor
    names = set()

    def named():
        names.add(threading.current_thread().name)
    with InterpreterPoolExecutor(max_workers=WORKERS) as ex:
        times = list(ex.map(subinterp_work.work, [CALL] * n_calls))
        for t in threading.enumerate():
            if t is not threading.main_thread():
                names.add(t.name)
    return times, sorted(names)


def by_module(n_calls):
    try:
        import _interpreters as interps  # 3.13
        run = interps.exec
    except ImportError:
        import _xxsubinterpreters as interps  # 3.12
        run = interps.run_string
    times = []
    lock = threading.Lock()
    src = ("import sys, os\n"
           "sys.path.insert(0, %r)\n"
           "import subinterp_work\n"
           "t = subinterp_work.work(%d)\n"
           "os.write(%%d, repr(t).encode())\n" % (HERE, CALL))

    def worker(k):
        interp = interps.create()
        try:
            for _ in range(k):
                r, w = os.pipe()
                run(interp, src % w)
                os.close(w)
                t = eval(os.read(r, 200))
                os.close(r)
                with lock:
                    times.append(t)
        finally:
            interps.destroy(interp)
    threads = [threading.Thread(target=worker, args=(n_calls // WORKERS,),
                                name="subinterp-%d" % i)
               for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, [t.name for t in threads]


def main():
    per_call = CALL / turns_per_second()
    main_cpu = 0.0
    while main_cpu < SECONDS / 3:
        main_cpu += subinterp_work.main_work(CALL)[0]
    n_calls = max(WORKERS, int(2 * SECONDS / 3 / per_call))
    t0 = time.perf_counter()
    if sys.version_info >= (3, 14):
        times, names = by_pool(n_calls)
    else:
        times, names = by_module(n_calls)
    life = time.perf_counter() - t0
    print(json.dumps({
        "shares": {"main_work": main_cpu,
                   "work": sum(t[0] for t in times)},
        "work_wall": sum(t[1] for t in times),
        "worker_life": life,
        "names": names}))


main()
