# bursts.py - CPU in short bursts between waits, the shape of servers,
# with a truth known by construction (tests/e2e/bursts.bats).
#
# Usage: python bursts.py SHAPE SECONDS [UNIT_ITERS]
#
# Three handlers run the same loop body, spin(), for 5, 3 and 2 units:
# h5, h3 and h2. Jobs name a handler, each with the same probability,
# so the handlers' CPU is 5:3:2 and their shares of it 50, 30 and 20%,
# on any machine; nothing in a handler reads a clock. A unit is
# UNIT_ITERS turns of the loop (default: what takes about 0.25 ms of CPU
# here, measured once at the start), so a job takes 0.5 to 1.25 ms. SHAPE:
#   sleep     one thread: a job, then time.sleep of 0.5 to 3 ms
#   pool4     4 worker threads taking jobs from a queue.Queue (pool2,
#             pool16: 2 and 16); the main thread feeds them, pausing
#             0.5 to 2 ms between jobs
#   thread    a new thread per job (started and joined by the main
#             thread, which pauses between jobs)
#   fork      a forked child per job, which runs it and exits
#   locks     3 threads, each waiting on a lock, an event or a condition
#             that the main thread hands on between jobs
#   asyncio   3 tasks, each awaiting asyncio.sleep between jobs
#   loop      one thread, jobs back to back (no wait at all)
#   httpserver  a threaded HTTP server (a thread per request, as
#             http.server.ThreadingHTTPServer) on 127.0.0.1, driven by
#             four client threads of a load generator (a request, then
#             0.5 to 2 ms of pause): GET /h5, /h3 or /h2
#   asyncserver an asyncio server (asyncio.start_server, 3.x) on
#             127.0.0.1, four clients on connections of their own, a
#             line per request naming the handler
#   clockread one thread, jobs back to back, reading its own CPU clock
#             after each (a benchmark's or a timing decorator's shape:
#             on a busy CPU the read is where a preempted thread stops)
# Prints "ready" when it starts the jobs, then after SECONDS of wall
# time the truth as JSON: {"shares": {"h5": 0.5, ...}, "jobs": N,
# "cpu": the process's CPU seconds (and its children's, for fork), from
# getrusage,
# "lib_cpu": the part of them a profiler's own threads (named pyprof-*)
# used, "children": the children's part}.
import json
import os
import random
import sys
import threading
import time

from tclock import library_cpu, thread_cpu

try:
    import queue
except ImportError:  # 2.7
    import Queue as queue


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


UNIT = 0


def h5():
    return spin(5 * UNIT)


def h3():
    return spin(3 * UNIT)


def h2():
    return spin(2 * UNIT)


HANDLERS = (h5, h3, h2)


def calibrate():
    # by the thread's CPU clock, not the wall's: on a busy machine the
    # wall counts the time others ran too, and the jobs came out a third
    # shorter than meant (too few samples for the test to judge)
    n = 20000
    while True:
        t = thread_cpu()
        spin(n)
        dt = thread_cpu() - t
        if dt > 0.05:
            return max(1, int(n * 0.00025 / dt))
        n *= 2


def pause(lo, hi):
    time.sleep(random.uniform(lo, hi) / 1000.0)


def shape_sleep(end):
    jobs = 0
    while time.time() < end:
        random.choice(HANDLERS)()
        jobs += 1
        pause(0.5, 3)
    return jobs


def shape_loop(end):
    jobs = 0
    while time.time() < end:
        for _ in range(50):
            random.choice(HANDLERS)()
            jobs += 1
    return jobs


def shape_clockread(end):
    jobs = 0
    spent = 0.0
    while time.time() < end:
        for _ in range(50):
            t0 = thread_cpu()
            random.choice(HANDLERS)()
            spent += thread_cpu() - t0
            jobs += 1
    return jobs


def shape_pool(end, n):
    q = queue.Queue()

    def worker():
        while True:
            job = q.get()
            if job is None:
                return
            job()

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    jobs = 0
    while time.time() < end:
        q.put(random.choice(HANDLERS))
        jobs += 1
        pause(0.5, 2)
    for t in threads:
        q.put(None)
    for t in threads:
        t.join()
    return jobs


def shape_thread(end):
    jobs = 0
    while time.time() < end:
        t = threading.Thread(target=random.choice(HANDLERS))
        t.start()
        t.join()
        jobs += 1
        pause(0.5, 2)
    return jobs


def shape_fork(end):
    jobs = 0
    while time.time() < end:
        h = random.choice(HANDLERS)
        pid = os.fork()
        if pid == 0:
            h()
            os._exit(0)
        os.waitpid(pid, 0)
        jobs += 1
        pause(0.5, 2)
    return jobs


def shape_locks(end):
    lock = threading.Lock()
    event = threading.Event()
    cond = threading.Condition()
    state = {"stop": False, "cond": 0}
    done = threading.Semaphore(0)
    lock.acquire()

    def by_lock():
        while True:
            lock.acquire()
            if state["stop"]:
                return
            state["job"]()
            done.release()

    def by_event():
        while True:
            event.wait()
            event.clear()
            if state["stop"]:
                return
            state["job"]()
            done.release()

    def by_cond():
        seen = 0
        while True:
            with cond:
                while state["cond"] == seen:
                    cond.wait()
                seen = state["cond"]
            if state["stop"]:
                return
            state["job"]()
            done.release()

    threads = [threading.Thread(target=f) for f in (by_lock, by_event, by_cond)]
    for t in threads:
        t.start()
    jobs = 0
    while time.time() < end:
        state["job"] = random.choice(HANDLERS)
        k = jobs % 3
        if k == 0:
            lock.release()
        elif k == 1:
            event.set()
        else:
            with cond:
                state["cond"] += 1
                cond.notify()
        done.acquire()
        jobs += 1
        pause(0.5, 2)
    state["stop"] = True
    lock.release()
    event.set()
    with cond:
        state["cond"] += 1
        cond.notify()
    for t in threads:
        t.join()
    return jobs


HANDLER_BY_NAME = dict((h.__name__, h) for h in HANDLERS)


def load_generator(end, request):
    """Four client threads, each request(handler name) then a pause,
    until end; returns the number of requests answered."""
    counts = [0] * 4

    def client(k):
        while time.time() < end:
            request(random.choice(HANDLERS).__name__, k)
            counts[k] += 1
            pause(0.5, 2)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts)


def shape_httpserver(end):
    try:
        from http.server import BaseHTTPRequestHandler, HTTPServer
        from socketserver import ThreadingMixIn
        import http.client as httpclient
    except ImportError:  # 2.7
        from BaseHTTPServer import BaseHTTPRequestHandler, HTTPServer
        from SocketServer import ThreadingMixIn
        import httplib as httpclient

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            HANDLER_BY_NAME[self.path[1:]]()
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    class Server(ThreadingMixIn, HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    serving = threading.Thread(target=server.serve_forever, args=(0.05,))
    serving.start()

    def request(name, k):
        c = httpclient.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/" + name)
        c.getresponse().read()
        c.close()

    jobs = load_generator(end, request)
    server.shutdown()
    serving.join()
    server.server_close()
    return jobs


ASYNC_SERVER = """
async def serve_client(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        HANDLER_BY_NAME[line.decode().strip()]()
        writer.write(b"ok\\n")
        await writer.drain()
    writer.close()


async def close_server(server):
    server.close()
    await server.wait_closed()
"""


def shape_asyncserver(end):
    import asyncio
    import socket

    scope = dict(globals(), asyncio=asyncio)
    exec(ASYNC_SERVER, scope)  # 2.7 must parse this file
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(
        scope["serve_client"], "127.0.0.1", 0))
    port = server.sockets[0].getsockname()[1]
    serving = threading.Thread(target=loop.run_forever)
    serving.start()
    conns = []
    for _ in range(4):
        c = socket.create_connection(("127.0.0.1", port))
        conns.append((c, c.makefile("rb")))

    def request(name, k):
        c, f = conns[k]
        c.sendall(name.encode() + b"\n")
        f.readline()

    jobs = load_generator(end, request)
    for c, f in conns:
        f.close()
        c.close()

    asyncio.run_coroutine_threadsafe(scope["close_server"](server),
                                     loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    serving.join()
    loop.close()
    return jobs


ASYNC = """
async def task(end, counter):
    while time.time() < end:
        random.choice(HANDLERS)()
        counter[0] += 1
        await asyncio.sleep(random.uniform(0.5, 3) / 1000.0)


async def main_async(end, counter):
    await asyncio.gather(task(end, counter), task(end, counter),
                         task(end, counter))

"""


def shape_asyncio(end):
    import asyncio

    scope = dict(globals(), asyncio=asyncio)
    exec(ASYNC, scope)  # 2.7 must parse this file
    counter = [0]
    loop = asyncio.new_event_loop()  # 3.6 has no asyncio.run
    loop.run_until_complete(scope["main_async"](end, counter))
    loop.close()
    return counter[0]


def main():
    global UNIT
    shape, seconds = sys.argv[1], float(sys.argv[2])
    UNIT = int(sys.argv[3]) if len(sys.argv) > 3 else calibrate()
    print("ready")
    sys.stdout.flush()
    end = time.time() + seconds
    if shape.startswith("pool"):
        jobs = shape_pool(end, int(shape[4:] or 4))
    else:
        jobs = globals()["shape_" + shape](end)
    import resource
    lib = library_cpu()
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"shares": {"h5": 0.5, "h3": 0.3, "h2": 0.2},
                      "jobs": jobs, "unit": UNIT,
                      "cpu": own.ru_utime + own.ru_stime
                      + (kids.ru_utime + kids.ru_stime
                         if shape == "fork" else 0), "lib_cpu": lib,
                      "children": kids.ru_utime + kids.ru_stime}))


if __name__ == "__main__":
    main()
