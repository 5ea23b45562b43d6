#!/usr/bin/env python3
"""forger.py - a client that speaks for a process it is not: a fork child
opens the connection (the collector's SO_PEERCRED names the child), and
the parent, which keeps the socket, sends the frames (tests/e2e/trust.bats,
issue 28's pid impersonation through pid reuse).

Usage: forger.py SOCKET MODE
  dead   the child connects and exits; then the parent sends HELLO for
         the child's pid, definitions and samples
  later  the child connects, the parent sends HELLO and samples while the
         child lives; the child exits and the parent keeps sending
         samples for 3 s
Prints "child PID" first, then "closed-by-collector" or "still-open".
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire_client as w  # noqa: E402


def main():
    path, mode = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    up_r, up_w = os.pipe()      # child -> parent: connected
    down_r, down_w = os.pipe()  # parent -> child: exit now
    child = os.fork()
    if child == 0:
        s.connect(path)
        os.write(up_w, b"c")
        if mode == "later":
            os.read(down_r, 1)  # until the parent has said HELLO
        os._exit(0)
    os.read(up_r, 1)
    print("child %d" % child, flush=True)
    if mode == "dead":
        os.waitpid(child, 0)
    prog = w.Program("forged", child)
    period = 10_000_000
    try:
        s.sendall(w.hello(child, time.time_ns(), time.monotonic_ns(),
                          comm="forged", args=("forged", "--as", "root")))
        s.sendall(prog.definitions())
        if mode == "later":
            time.sleep(0.5)  # the collector has taken the HELLO
            os.write(down_w, b"g")
            os.waitpid(child, 0)
        t = time.monotonic_ns()
        end = time.time() + 3
        while time.time() < end:
            s.sendall(w.samples(t, [(3, 1, period, 1, period, 0)] * 10))
            t += 10 * period
            time.sleep(0.05)
        print("still-open", flush=True)
    except (BrokenPipeError, ConnectionResetError):
        print("closed-by-collector", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
