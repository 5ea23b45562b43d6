"""ctl_latency.py SOCKET ROUNDS: time from a request to sampling, for
`make bench` (section 7). Speaks to a running pyprof-collector as `pyprof
ctl` does (one CTL_REQUEST, then CTL_ANSWER frames and CTL_DONE; wire.h),
against one dormant process connected to it (PYPROF_START=off, busy).

Each round: CLOCK_MONOTONIC just before sending a start (1 s), then
  armed: the process's own clock when it had armed its timers (the
         answer's SINCE_NS field), minus the send time;
  first: when a status answer first shows more samples than before
         (status asked back to back), minus the send time: an upper
         bound, the sample itself was taken before that answer.
Then a stop, and a pause. Prints the medians in milliseconds:
"armed_ms FIRST_ms". Python 3.7+ (time.monotonic_ns), never preloaded.
"""
import socket
import statistics
import struct
import sys
import time

T_REQUEST, T_ANSWER, T_DONE = 18, 36, 37
C_PID, C_VERB, C_LEASE_MS, C_SAMPLES, C_SINCE = 17, 18, 6, 12, 20
VERB_START, VERB_STOP, VERB_STATUS = 1, 2, 4


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def fields(payload):
    i, out = 0, {}
    while i < len(payload):
        key, i = get_varint(payload, i)
        if key & 1:
            n, i = get_varint(payload, i)
            i += n
        else:
            v, i = get_varint(payload, i)
            out[key >> 1] = v
    return out


def get_varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def request(path, verb, **kw):
    payload = varint(C_VERB << 1) + varint(verb)
    for tag, v in kw.items():
        payload += varint({"lease_ms": C_LEASE_MS}[tag] << 1) + varint(v)
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    t = time.monotonic_ns()
    s.sendall(struct.pack("<I", T_REQUEST | len(payload) << 8) + payload)
    buf, answers = b"", []
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("the collector closed the connection")
        buf += chunk
        while len(buf) >= 4:
            word = struct.unpack("<I", buf[:4])[0]
            typ, n = word & 0xFF, word >> 8
            if len(buf) < 4 + n:
                break
            p, buf = buf[4:4 + n], buf[4 + n:]
            if typ == T_ANSWER:
                answers.append(fields(p))
            elif typ == T_DONE:
                s.close()
                return t, answers


def main():
    path, rounds = sys.argv[1], int(sys.argv[2])
    armed, first = [], []
    for _ in range(rounds):
        before = request(path, VERB_STATUS)[1][0][C_SAMPLES]
        t, ans = request(path, VERB_START, lease_ms=1000)
        armed.append((ans[0][C_SINCE] - t) / 1e6)
        while True:
            _, st = request(path, VERB_STATUS)
            if st[0][C_SAMPLES] > before:
                first.append((time.monotonic_ns() - t) / 1e6)
                break
        request(path, VERB_STOP)
        time.sleep(0.2)
    print("%.2f %.2f" % (statistics.median(armed), statistics.median(first)))


main()
