# procs.py - programs made of several processes, each burning CPU in a
# function of its own, for tests/e2e/processes.bats. Every mode prints one
# line per process, "ROLE PID", so the test can tell which pid should own
# which function. Runs on Python 2.7 and 3.6+ (pools needs 3.4+).
#
#   procs.py pools SECS    a multiprocessing Pool(1) per start method (fork,
#                          spawn, forkserver), each running work_<method>,
#                          then a subprocess running work_subprocess (each
#                          SECS seconds of its own CPU time)
#   procs.py child SECS    (the subprocess of pools) work_subprocess
#   procs.py prefork N SECS a pre-fork server: N forked workers, each
#                          answering requests from its socketpair in
#                          handle_request, for SECS seconds of requests from
#                          the parent (client_prepare builds them), and at
#                          least PREFORK_MIN_ROUNDS rounds (as much work on
#                          a loaded machine); workers leave with os._exit,
#                          as pre-fork servers do
#   procs.py spin NAME SECS burn SECS seconds of wall time in spin_NAME
#                          (alpha, beta, gamma, delta)
#   procs.py short SECS     burn SECS of CPU time in short_work, print
#                          "short done"
#                          (the same output in every run)
#   procs.py threadfork SECS a thread forks; the child burns SECS of CPU
#                          in work_threadchild and its thread function
#                          returns (no exit call): the child process ends
#                          with its last thread, status 0; the parent
#                          prints "threadchild status S" (or "hung" after
#                          10 s + 20 x SECS)
from __future__ import print_function

import os
import socket
import struct
import subprocess
import sys
import time


def burn(secs):
    """Burns secs seconds of wall time."""
    end = time.time() + secs
    x = 0
    while time.time() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


def cpu_now():
    t = os.times()
    return t[0] + t[1]


def burn_cpu(secs):
    """Burns secs seconds of this process's CPU time: as many samples on
    a loaded machine as on an idle one, only later."""
    end = cpu_now() + secs
    x = 0
    while cpu_now() < end:
        for i in range(1000):
            x = (x * 31 + i) % 1000003
    return x


def work_fork(secs):
    burn_cpu(secs)
    return os.getpid()


def work_spawn(secs):
    burn_cpu(secs)
    return os.getpid()


def work_forkserver(secs):
    burn_cpu(secs)
    return os.getpid()


def work_subprocess(secs):
    burn_cpu(secs)
    return os.getpid()


def say(role, pid):
    print("%s %d" % (role, pid))
    sys.stdout.flush()


def pools(secs):
    import multiprocessing as mp
    say("parent", os.getpid())
    for method, fn in (("fork", work_fork), ("spawn", work_spawn),
                       ("forkserver", work_forkserver)):
        pool = mp.get_context(method).Pool(1)
        say(method, pool.apply(fn, (secs,)))
        # close + join: the worker leaves on its own (a fork worker through
        # os._exit) instead of being terminated by a signal.
        pool.close()
        pool.join()
    subprocess.check_call([sys.executable, os.path.abspath(__file__),
                           "child", str(secs)])


# ---- pre-fork server --------------------------------------------------------

PREFORK_MIN_ROUNDS = 150


def handle_request(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def serve(sock):
    while True:
        data = sock.recv(4)
        if len(data) < 4:
            os._exit(1)
        (n,) = struct.unpack("<I", data)
        if n == 0:
            os._exit(0)
        sock.sendall(struct.pack("<I", handle_request(n)))


def client_prepare(i):
    x = 0
    for k in range(2000):
        x = (x + i * k) % 65521
    return 20000 + x % 1000


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def prefork(n_workers, secs):
    say("parent", os.getpid())
    socks, pids = [], []
    for _ in range(n_workers):
        parent_end, child_end = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            parent_end.close()
            for s in socks:
                s.close()
            serve(child_end)
        child_end.close()
        socks.append(parent_end)
        pids.append(pid)
        say("worker", pid)
    end = time.time() + secs
    i = rounds = 0
    while time.time() < end or rounds < PREFORK_MIN_ROUNDS:
        rounds += 1
        # One request to every worker, then the answers: the workers
        # serve at the same time.
        for s in socks:
            s.sendall(struct.pack("<I", client_prepare(i)))
            i += 1
        for s in socks:
            recv_exact(s, 4)
    for s in socks:
        s.sendall(struct.pack("<I", 0))
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    print("requests %d" % i)
    return 1 if bad else 0


# ---- single processes -----------------------------------------------------------

def spin_alpha(secs):
    return burn(secs)


def spin_beta(secs):
    return burn(secs)


def spin_gamma(secs):
    return burn(secs)


def spin_delta(secs):
    return burn(secs)


def short_work(secs):
    return burn_cpu(secs)


def work_threadchild(secs):
    return burn_cpu(secs)


def threadfork(secs):
    import threading
    status = []

    def body():
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            say("threadchild", os.getpid())
            work_threadchild(secs)
            sys.stdout.flush()
            return  # the child's only thread ends: so does the child
        end = time.time() + 10 + 20 * secs
        while time.time() < end:
            p, st = os.waitpid(pid, os.WNOHANG)
            if p:
                status.append(os.WEXITSTATUS(st) if os.WIFEXITED(st)
                              else "signal %d" % os.WTERMSIG(st))
                return
            time.sleep(0.02)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        status.append("hung")

    t = threading.Thread(target=body)
    t.start()
    t.join()
    print("threadchild status %s" % status[0])


def main():
    mode = sys.argv[1]
    if mode == "pools":
        pools(float(sys.argv[2]))
    elif mode == "child":
        say("subprocess", work_subprocess(float(sys.argv[2])))
    elif mode == "prefork":
        return prefork(int(sys.argv[2]), float(sys.argv[3]))
    elif mode == "spin":
        say(sys.argv[2], os.getpid())
        globals()["spin_" + sys.argv[2]](float(sys.argv[3]))
    elif mode == "threadfork":
        threadfork(float(sys.argv[2]))
    elif mode == "short":
        short_work(float(sys.argv[2]))
        print("short done")
    else:
        print("procs.py: unknown mode %s" % mode, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
