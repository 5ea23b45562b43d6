# attach_blocked.py - programs that wait, for tests/e2e/attach.bats.
#
# Usage: python attach_blocked.py KIND SECONDS
#   sleep    the main thread sleeps in time.sleep(0.2) calls, SECONDS long
#   accept   the main thread blocks in socket.accept() until a client
#            connects to the port it prints ("port N"), then it goes on
#   ten      10 threads, sleeper-0 .. sleeper-9, each in time.sleep in its
#            own function sleeper_0 .. sleeper_9; the main thread joins
#            them
#   native   10 threads: sleeper-0 .. sleeper-6 in time.sleep in
#            sleeper_0 .. sleeper_6 (sleeper-6 in libc's nanosleep called
#            with ctypes, which says "short" on an EINTR), "sorter" in
#            libc's qsort (ctypes) whose comparison, cmp_slow, sleeps, "locker" blocked in a lock's
#            acquire() (in locked_out), "zipper" compressing with zlib
#            (in squeeze) until the end; each checks on its own clock that
#            its waits lasted as asked, and says "short" otherwise
#   threads  50 threads, each in its own function: busy_0 .. busy_49
#            working 1 ms, pausing 50 ms; the main thread joins them with
#            a time-out
#   main-join, main-lock, main-accept, main-sleep
#            the main thread blocked in one call for SECONDS: join()
#            without a time-out, a lock's acquire(), socket.accept(),
#            time.sleep(SECONDS); one thread, "worker", runs Python code
#            meanwhile (in work_loop: 1 ms of work, 10 ms of sleep) and
#            ends the wait at the end (it ends, releases the lock,
#            connects)
# Prints "ready" (after "port N" for accept) and "done" at the end; the
# output does not depend on whether pyprof was attached.
import socket
import sys
import threading
import time


def nap(seconds):
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.2)


def accept_once(seconds):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    print("port %d" % srv.getsockname()[1])
    print("ready", flush=True)
    conn, _ = srv.accept()
    conn.close()
    srv.close()
    nap(seconds)


GO = threading.Event()
END = []


def spin(seconds):
    # all start together, once all 50 exist (starting a thread while
    # others spin takes a while: the GIL), and end together
    GO.wait()
    x = 0
    while time.time() < END[0]:
        # 1 ms of work, then a wait: about one CPU for the 50 of them.
        # Spinning without a pause would starve the main thread of the
        # GIL for seconds, and the attach script runs in the main thread
        t = time.time() + 0.001
        while time.time() < t:
            x += 1
        time.sleep(0.05)
    return x


def fifty(seconds):
    threads = []
    for i in range(50):
        # a function of its own per thread: busy_0 .. busy_49
        ns = {"spin": spin}
        exec("def busy_%d(s):\n    return spin(s)\n" % i, ns)
        t = threading.Thread(target=ns["busy_%d" % i], args=(seconds,),
                             name="worker-%d" % i)
        t.start()
        threads.append(t)
    END.append(time.time() + seconds)
    GO.set()
    print("ready", flush=True)
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.05)


def ten(seconds):
    threads = []
    for i in range(10):
        ns = {"time": time}
        exec("def sleeper_%d(s):\n    time.sleep(s)\n" % i, ns)
        t = threading.Thread(target=ns["sleeper_%d" % i], args=(seconds,),
                             name="sleeper-%d" % i)
        t.start()
        threads.append(t)
    print("ready", flush=True)
    for t in threads:
        t.join()


def native(seconds):
    import ctypes
    import zlib
    lock = threading.Lock()
    lock.acquire()
    stop = threading.Event()
    bad = []
    # each thread says so just before its call; "ready" after all ten
    arrived = threading.Semaphore(0)
    here = arrived.release

    def locked_out():
        t0 = time.monotonic()
        here()
        lock.acquire()
        if time.monotonic() - t0 < seconds:
            bad.append("locker")

    def squeeze():
        data = bytes(range(256)) * 4096
        here()
        while not stop.is_set():
            zlib.compress(data, 9)

    # sleeper-6 sleeps in libc's nanosleep itself (ctypes): time.sleep
    # would hide an EINTR (it sleeps again, PEP 475), this one says it
    libc = ctypes.CDLL(None, use_errno=True)

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    def c_sleep(s):
        ts = Timespec(int(s), int((s % 1) * 1e9))
        if libc.nanosleep(ctypes.byref(ts), None) != 0:
            bad.append("nanosleep errno %d" % ctypes.get_errno())

    cmp_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                ctypes.POINTER(ctypes.c_int))

    def cmp_slow(a, b):
        t0 = time.monotonic()
        here()
        time.sleep(seconds)
        if time.monotonic() - t0 < seconds:
            bad.append("sorter")
        return a[0] - b[0]

    def sorter():
        # C calls back into Python: qsort between two Python frames
        arr = (ctypes.c_int * 2)(2, 1)
        libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cmp_type(cmp_slow))

    threads = []
    for i in range(7):
        ns = {"time": time, "bad": bad, "c_sleep": c_sleep, "here": here}
        exec("def sleeper_%d(s):\n"
             "    t0 = time.monotonic(); here()\n"
             "    %s(s)\n"
             "    if time.monotonic() - t0 < s:\n"
             "        bad.append(%d)\n"
             % (i, "c_sleep" if i == 6 else "time.sleep", i), ns)
        threads.append(threading.Thread(target=ns["sleeper_%d" % i],
                                        args=(seconds,),
                                        name="sleeper-%d" % i))
    threads.append(threading.Thread(target=locked_out, name="locker"))
    threads.append(threading.Thread(target=sorter, name="sorter"))
    zipper = threading.Thread(target=squeeze, name="zipper")
    for t in threads + [zipper]:
        t.start()
    for t in threads + [zipper]:
        arrived.acquire()
    print("ready", flush=True)
    time.sleep(seconds)
    lock.release()
    for t in threads:
        t.join()
    stop.set()
    zipper.join()
    if bad:
        print("short", bad)


def work_loop(end):
    x = 0
    while time.time() < end:
        t = time.time() + 0.001
        while time.time() < t:
            x += 1
        time.sleep(0.01)
    return x


def blocked_main(how, seconds):
    end = time.time() + seconds
    lock = threading.Lock()
    lock.acquire()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def worker():
        work_loop(end)
        if how == "lock":
            lock.release()
        elif how == "accept":
            socket.create_connection(srv.getsockname()).close()

    th = threading.Thread(target=worker, name="worker")
    th.start()
    print("ready", flush=True)
    if how == "join":
        th.join()
    elif how == "lock":
        lock.acquire()
    elif how == "accept":
        conn, _ = srv.accept()
        conn.close()
    elif how == "sleep":
        time.sleep(seconds)
    th.join()
    srv.close()


def main():
    kind, seconds = sys.argv[1], float(sys.argv[2])
    if kind == "sleep":
        print("ready", flush=True)
        nap(seconds)
    elif kind == "accept":
        accept_once(seconds)
    elif kind == "threads":
        fifty(seconds)
    elif kind == "ten":
        ten(seconds)
    elif kind == "native":
        native(seconds)
    elif kind.startswith("main-"):
        blocked_main(kind[5:], seconds)
    print("done")


if __name__ == "__main__":
    main()
