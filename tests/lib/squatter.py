#!/usr/bin/env python3
"""squatter.py - another local user sitting at a socket path, for
tests/e2e/trust.bats: what would a hostile listener hear from a victim's
libpyprof.so? And at a TCP port, for tests/e2e/hostile.bats: what would
it hear from `pyprof top --collector` when it took the collector's
--http port while the collector was down?

Usage: squatter.py SOCKET LOG [--make-dir MODE] [--symlink]
       squatter.py --tcp HOST:PORT LOG

  --make-dir MODE  create SOCKET's directory first, with that mode
                   (octal, e.g. 0777), as another user pre-creating a
                   victim's /tmp/pyprof-<uid>/ would
  --symlink        create the directory as DIR.real and make DIR a
                   symbolic link to it
  --tcp            SOCKET is HOST:PORT: listen there (SO_REUSEADDR, as a
                   server restarted on its port would) instead

Binds SOCKET (mode 0777) and writes "ready" to LOG, then accepts for ever:
for each connection, reads until EOF or 1 s of silence and appends
"conn BYTES" to LOG (flushed at once). Run it as the other user (setpriv)
and kill it when done. Never run under LD_PRELOAD.
"""
import argparse
import os
import socket


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("log")
    ap.add_argument("--make-dir")
    ap.add_argument("--symlink", action="store_true")
    ap.add_argument("--tcp", action="store_true")
    a = ap.parse_args()
    if a.tcp:
        host, port = a.socket.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        serve(s, a.log)
        return
    d = os.path.dirname(a.socket)
    if a.make_dir:
        mode = int(a.make_dir, 8)
        real = d + ".real" if a.symlink else d
        os.mkdir(real)
        os.chmod(real, mode)
        if a.symlink:
            os.symlink(real, d)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(a.socket)
    os.chmod(a.socket, 0o777)
    serve(s, a.log)


def serve(s, path):
    s.listen(16)
    with open(path, "a") as log:
        log.write("ready\n")
        log.flush()
        while True:
            c, _ = s.accept()
            c.settimeout(1.0)
            n = 0
            try:
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    n += len(b)
            except (socket.timeout, OSError):
                pass
            c.close()
            log.write("conn %d\n" % n)
            log.flush()


if __name__ == "__main__":
    main()
