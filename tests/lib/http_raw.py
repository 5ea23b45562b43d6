#!/usr/bin/env python3
"""http_raw.py - speak raw bytes to an HTTP server and report its answers,
for the request-handling tests of tests/e2e/http.bats (malformed,
oversized, slow and pipelined requests that curl would not send).

usage: http_raw.py PORT [--send TEXT]... [--pause S] [--timeout S]

Each --send TEXT (Python escapes: \\r \\n \\xNN; "@N*C" repeats the
character C N times, e.g. "X-A: @20000*a") is written in order, with
--pause S seconds between them. Then the answers are read until the server
closes the connection or --timeout S (default 20) passes, and printed:

  response 1 status 400
  header content-type: text/plain; charset=utf-8
  body seconds must be a whole number from 1 to 3600, not '0'
  ...
  eof yes            (the server closed the connection)
  elapsed 10.02      (seconds from the first byte sent to the end)

Answers are split by their Content-Length. A reset connection ends the
read like a close ("eof reset"). Exit status 0 unless the connection
could not be made.
"""
import re
import socket
import sys
import time


def expand(text):
    text = re.sub(r"@(\d+)\*(.)", lambda m: m.group(2) * int(m.group(1)),
                  text)
    return text.encode("latin-1").decode("unicode_escape").encode("latin-1")


def main():
    args = sys.argv[1:]
    port = int(args.pop(0))
    sends, pause, timeout = [], 0.0, 20.0
    while args:
        a = args.pop(0)
        if a == "--send":
            sends.append(expand(args.pop(0)))
        elif a == "--pause":
            pause = float(args.pop(0))
        elif a == "--timeout":
            timeout = float(args.pop(0))
        else:
            sys.stderr.write("unknown argument %s\n" % a)
            return 2
    s = socket.create_connection(("127.0.0.1", port), 5)
    t0 = time.time()
    for i, data in enumerate(sends):
        if i:
            time.sleep(pause)
        try:
            s.sendall(data)
        except OSError as e:
            print("send-error %s" % e.__class__.__name__)
            break
    s.settimeout(0.2)
    buf, eof = b"", "no"
    end = time.time() + timeout
    while time.time() < end:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            eof = "reset"
            break
        if not chunk:
            eof = "yes"
            break
        buf += chunk
    elapsed = time.time() - t0
    n = 0
    while buf:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if not sep:
            print("partial %r" % buf[:200])
            break
        lines = head.decode("latin-1").split("\r\n")
        n += 1
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
        print("response %d status %s" % (n, m.group(1) if m else "?"))
        length = 0
        for h in lines[1:]:
            k, _, v = h.partition(":")
            print("header %s: %s" % (k.strip().lower(), v.strip()))
            if k.strip().lower() == "content-length":
                length = int(v)
        body, buf = rest[:length], rest[length:]
        if m and m.group(1) == "100":
            continue
        print("body %s" % body[:300].decode("utf-8", "replace")
              .replace("\n", "\\n"))
    print("eof %s" % eof)
    print("elapsed %.2f" % elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
