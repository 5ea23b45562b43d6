#!/usr/bin/env python3
"""wire_client.py - a pyprof wire-protocol client for the collector's tests.

Implements the encoding of include/pyprof/wire.h independently of the C
codec (written from the header's prose: u32 LE word = type | len << 8,
unsigned LEB128 varints, varint-length byte strings, HELLO/BYE tagged
fields), so the tests check the collector against the contract, not
against our own C helpers.

Subcommands (all take --socket PATH):

  good     a well-behaved client: HELLO, definitions, N samples over a
           known set of stacks, optional LOST counts, BYE, close.
           Functions are named <prefix>_main, <prefix>_work, <prefix>_leaf_a,
           <prefix>_leaf_b, <prefix>_idle in file <prefix>.py.
  send     send the bytes of a file (a malformed-stream fixture), then wait
           for the collector to close the connection; prints
           "closed-by-collector" or "still-open" (with --eof, shut down our
           sending side first, as a client that died mid-frame would).
  fixtures DIR   (re)write the malformed-stream fixtures into DIR; see
           tests/data/wire/README.md.
  seeds DIR      (re)write the valid streams that seed the wire fuzzer's
           corpus into DIR (tests/fuzz/wire_seeds/; see
           tests/fuzz/wire_fuzz.c).
  frames DIR     (re)write one file per tagged frame kind (HELLO, BYE,
           every control frame) with its fields in the order the C
           writers put them (tests/data/wire/frames/, read by
           tests/unit/test_wire.c).

Exit status 0 on success, 1 on a socket error.
"""
import argparse
import os
import socket
import struct
import sys
import time

# ---- encoding (wire.h) -----------------------------------------------------

HELLO, STRING, FUNCTION, LOCATION, NODE, THREAD, SAMPLES, LOST, BYE = range(1, 10)
MAPPING, ADDRESS = 10, 11  # PYPROF_NATIVE
HEAP, HEAP_SNAPSHOT = 12, 13  # PYPROF_HEAP_RATE
HEAP_ALLOC, HEAP_FREE, HEAP_LOST = 1, 2, 3
LABELS = 14  # label sets from code
HEAP_ALLOC_LABELS = 4  # an ALLOC's fields, then a LABELS set id
MAX_LABELS = 65  # wire.h WIRE_MAX_LABELS: 64 from the program, 1 task
H_VERSION, H_PID, H_PPID, H_START_UNIX_NS, H_START_MONO_NS, H_MODE = 1, 2, 3, 4, 5, 6
H_PERIOD_NS, H_MAX_DEPTH, H_PYVERSION, H_EXE, H_ARG, H_CONN_SEQ = 7, 8, 9, 10, 11, 12
H_UID, H_ACHIEVED_NS, H_COMM = 13, 14, 15
B_SAMPLES, B_LOST, B_END_MONO_NS = 1, 2, 3
MAX_PAYLOAD = 1 << 20
SF_TRUNCATED, SF_OFF_CPU, SF_GIL, SF_GIL_KNOWN, SF_NATIVE, SF_NATIVE_KNOWN = (
    1, 2, 4, 8, 16, 32)
SF_OPCODE = 64  # one more varint after the flags: the opcode
SF_LABELS = 128  # one more varint (after the opcode, if any): a set id


def varint(v):
    assert v >= 0
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def bstr(b):
    if isinstance(b, str):
        b = b.encode()
    return varint(len(b)) + b


def frame(ftype, payload):
    return struct.pack("<I", ftype | (len(payload) << 8)) + payload


def tag_varint(tag, v):
    return varint(tag << 1) + varint(v)


def tag_bytes(tag, b):
    return varint(tag << 1 | 1) + bstr(b)


def hello(pid, start_unix_ns, start_mono_ns, mode=0, period_ns=10_000_000,
          exe="/usr/bin/python3", args=("python3", "app.py"), comm="python3",
          pyversion="3.11.7", conn_seq=0, achieved_ns=None, version=1):
    p = b"PYPROF"
    p += tag_varint(H_VERSION, version)
    p += tag_varint(H_PID, pid)
    p += tag_varint(H_PPID, 1)
    p += tag_varint(H_START_UNIX_NS, start_unix_ns)
    p += tag_varint(H_START_MONO_NS, start_mono_ns)
    p += tag_varint(H_MODE, mode)
    p += tag_varint(H_PERIOD_NS, period_ns)
    p += tag_varint(H_MAX_DEPTH, 1024)
    p += tag_bytes(H_PYVERSION, pyversion)
    p += tag_bytes(H_EXE, exe)
    for a in args:
        p += tag_bytes(H_ARG, a)
    p += tag_varint(H_CONN_SEQ, conn_seq)
    p += tag_varint(H_UID, os.getuid())
    if achieved_ns is not None:
        p += tag_varint(H_ACHIEVED_NS, achieved_ns)
    p += tag_bytes(H_COMM, comm)
    return frame(HELLO, p)


def string(i, s):
    return frame(STRING, varint(i) + bstr(s))


def function(i, name, system_name, filename, start_line):
    return frame(FUNCTION, varint(i) + varint(name) + varint(system_name) +
                 varint(filename) + varint(start_line))


def location(i, func, line):
    return frame(LOCATION, varint(i) + varint(func) + varint(line))


def mapping(i, start, limit, offset, filename, build_id=b""):
    return frame(MAPPING, varint(i) + varint(start) + varint(limit) +
                 varint(offset) + varint(filename) + bstr(build_id))


def address(i, mapping_id, addr):
    return frame(ADDRESS, varint(i) + varint(mapping_id) + varint(addr))


def node(i, parent, loc):
    return frame(NODE, varint(i) + varint(parent) + varint(loc))


def thread(ref, tid, name):
    return frame(THREAD, varint(ref) + varint(tid) + varint(name))


def samples(base_ns, records):
    """records: (node, thread, dt_ns, count, value, flags) tuples, with
    the opcode next when flags has SF_OPCODE, then the label set id when
    it has SF_LABELS."""
    p = varint(base_ns)
    for r in records:
        p += b"".join(varint(x) for x in r)
    return frame(SAMPLES, p)


def labels(i, pairs):
    """A LABELS frame: set id i, then (key sid, value sid) pairs."""
    return frame(LABELS, varint(i) + b"".join(varint(k) + varint(v)
                                              for k, v in pairs))


def lost(reason, count, value):
    return frame(LOST, varint(reason) + varint(count) + varint(value))


def heap(rate, records):
    """records: (HEAP_ALLOC, node, thread, size, addr), (HEAP_FREE, addr),
    (HEAP_LOST, n, bytes), (HEAP_ALLOC_LABELS, node, thread, size, addr,
    set), or any other tuple sent as is."""
    return frame(HEAP, varint(rate) +
                 b"".join(b"".join(varint(v) for v in r) for r in records))


def heap_snapshot(seq):
    return frame(HEAP_SNAPSHOT, varint(seq))


def bye(n_samples, n_lost, end_mono_ns):
    return frame(BYE, tag_varint(B_SAMPLES, n_samples) +
                 tag_varint(B_LOST, n_lost) +
                 tag_varint(B_END_MONO_NS, end_mono_ns))


# ---- the good client's program ---------------------------------------------

class Program:
    """Definitions for a tiny fake program and its stacks.

    Stacks (root first):  main;work;leaf_a   main;work;leaf_b   main;idle
    Nodes: 1 main, 2 main>work, 3 work>leaf_a, 4 work>leaf_b, 5 main>idle.
    Threads: ref 1 = tid pid ("MainThread"), ref 2 = tid pid+1 ("worker-1").
    """

    LEAVES = (3, 4, 5)

    def __init__(self, prefix, pid):
        self.prefix = prefix
        self.pid = pid

    def definitions(self):
        p = self.prefix
        f = p + ".py"
        names = ["%s_main" % p, "%s_work" % p, "%s_leaf_a" % p,
                 "%s_leaf_b" % p, "%s_idle" % p]
        out = [string(1, f), string(2, "MainThread"), string(3, "worker-1")]
        for i, n in enumerate(names):
            out.append(string(4 + i, n))
        # function id i+1: name sid 4+i, system_name the same, file sid 1
        for i in range(len(names)):
            out.append(function(i + 1, 4 + i, 4 + i, 1, 10 * (i + 1)))
        # location id i+1 is in function i+1, at line 10*(i+1)+2
        for i in range(len(names)):
            out.append(location(i + 1, i + 1, 10 * (i + 1) + 2))
        out += [node(1, 0, 1), node(2, 1, 2), node(3, 2, 3), node(4, 2, 4),
                node(5, 1, 5)]
        out += [thread(1, self.pid, 2), thread(2, self.pid + 1, 3)]
        return b"".join(out)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def run_good(a):
    now_unix = a.start_ns if a.start_ns else time.time_ns()
    mono = time.monotonic_ns()
    period = 1_000_000_000 // a.hz
    prog = Program(a.prefix, a.pid)
    s = connect(a.socket)
    s.sendall(hello(a.pid, now_unix, mono, mode=1 if a.wall else 0,
                    period_ns=period, comm=a.comm,
                    args=("python3", a.prefix + ".py"),
                    pyversion=a.pyversion, conn_seq=a.conn_seq,
                    achieved_ns=(1_000_000_000 // a.achieved_hz
                                 if a.achieved_hz else None)))
    s.sendall(prog.definitions())
    # --label KEY=VALUE...: one set, id 1, its strings from id 9 on (the
    # Program has 8); every even-numbered sample names it
    pairs = []
    for i, kv in enumerate(a.label or []):
        k, v = kv.split("=", 1)
        s.sendall(string(9 + 2 * i, k) + string(10 + 2 * i, v))
        pairs.append((9 + 2 * i, 10 + 2 * i))
    if pairs:
        s.sendall(labels(1, pairs))
    if pairs and a.heap_labels:
        # one allocation under the set, one without (rate 1: each is
        # one allocation of its size)
        s.sendall(heap(1, [(HEAP_ALLOC_LABELS, 3, 1, 1_000_000,
                            0x7f0000001000, 1),
                           (HEAP_ALLOC, 4, 1, 4096, 0x7f0000002000)]))
    sent = 0
    t = mono
    while sent < a.samples:
        n = min(a.batch, a.samples - sent)
        recs = []
        for k in range(n):
            i = sent + k
            flags = 0
            if a.flags:
                flags = SF_GIL_KNOWN | (SF_GIL if i % 2 else 0)
            rec = (Program.LEAVES[i % 3], 1 + (i % 2), period, 1, period,
                   flags)
            if a.opcodes:
                # Cycled over the samples, as PYPROF_OPCODES sends them.
                ops = [int(x) for x in a.opcodes.split(",")]
                rec = rec[:5] + (flags | SF_OPCODE, ops[i % len(ops)])
            if pairs and i % 2 == 0:
                rec = rec[:5] + (rec[5] | SF_LABELS,) + rec[6:] + (1,)
            recs.append(rec)
        s.sendall(samples(t, recs))
        t += n * period
        sent += n
        if a.pause_ms:
            time.sleep(a.pause_ms / 1000)
        if a.wait_file and sent >= a.samples // 2:
            # Half sent: stay connected until told to go on, so the
            # test knows we are mid-stream while it does other things.
            deadline = time.time() + 120
            while not os.path.exists(a.wait_file) and time.time() < deadline:
                time.sleep(0.02)
            a.wait_file = None
    n_lost = 0
    for spec in a.lost or []:
        reason, count = (int(x) for x in spec.split(":"))
        s.sendall(lost(reason, count, count * period))
        n_lost += count
    if a.hold:
        time.sleep(a.hold)
    if not a.no_bye:
        s.sendall(bye(a.samples, n_lost, t))
    print("sent %d samples" % a.samples, flush=True)
    if a.keep_open:
        # Stay connected until the collector closes us (at its shutdown).
        s.settimeout(a.keep_open)
        try:
            while s.recv(4096):
                pass
            print("closed-by-collector", flush=True)
        except socket.timeout:
            print("still-open", flush=True)
    s.close()
    return 0


# ---- malformed streams -------------------------------------------------------

def good_prefix(pid=4242):
    """A valid start: HELLO and the Program's definitions."""
    mono = 1_000_000_000
    return (hello(pid, 1_700_000_000_000_000_000, mono, comm="badclient") +
            Program("bad", pid).definitions())


def fixtures():
    """name -> (bytes, expected substring of the collector's log line,
    needs_eof). Each is a whole stream from connect to close."""
    p = good_prefix()
    fx = {}
    fx["garbage"] = (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                     "unknown frame type", False)
    fx["zero-type"] = (struct.pack("<I", 0) + b"\0" * 8,
                       "unknown frame type 0", False)
    fx["oversized"] = (struct.pack("<I", SAMPLES | ((MAX_PAYLOAD + 1) << 8)),
                       "over the limit", False)
    fx["oversized-hello"] = (struct.pack("<I", HELLO | (0xFFFFFF << 8)) +
                             b"PYPROF", "over the limit", False)
    fx["wrong-version"] = (hello(4242, 1, 1, version=2),
                           "protocol version 2 not supported", False)
    fx["bad-magic"] = (frame(HELLO, b"PYPROX" + tag_varint(H_VERSION, 1)),
                       "magic", False)
    fx["no-hello"] = (string(1, "x"), "STRING frame before HELLO", False)
    fx["two-hellos"] = (p + hello(4242, 1, 1), "second HELLO", False)
    fx["truncated"] = (p + samples(1, [(3, 1, 0, 1, 1, 0)])[:-3],
                       "in the middle of a frame", True)
    fx["short-payload"] = (p + frame(NODE, varint(6) + varint(1)),
                           "NODE frame: payload ends early", False)
    fx["leftover"] = (p + frame(LOCATION, varint(6) + varint(1) + varint(1) +
                                b"\x07"),
                      "1 bytes left over", False)
    fx["string-id-gap"] = (p + string(12, "x"),
                           "STRING id 12 out of order (expected 9)", False)
    fx["undefined-string"] = (p + function(6, 99, 4, 1, 1),
                              "name 99 is not a defined string", False)
    fx["undefined-function"] = (p + location(6, 77, 1),
                                "function 77 is not a defined function",
                                False)
    fx["undefined-node"] = (p + samples(1, [(42, 1, 0, 1, 1, 0)]),
                            "node is not a defined node", False)
    fx["undefined-thread"] = (p + samples(1, [(3, 9, 0, 1, 1, 0)]),
                              "thread is not a defined thread ref", False)
    fx["forward-parent"] = (p + node(6, 7, 1),
                            "parent 7 is not a defined node", False)
    fx["self-parent"] = (p + node(6, 6, 1),
                         "parent 6 is not a defined node", False)
    # A cycle needs a node whose parent is defined later; define 6 -> 7
    # and 7 -> 6: the first already fails, which is the point.
    fx["cycle"] = (p + node(6, 7, 1) + node(7, 6, 1),
                   "parent 7 is not a defined node", False)
    deep = b"".join(node(6 + i, 5 + i if i else 1, 1) for i in range(8192))
    fx["too-deep"] = (p + deep, "stack deeper than 8192 frames", False)
    fx["long-string"] = (p + frame(STRING, varint(9) + bstr(b"a" * 65537)),
                         "longer than 65536 bytes", False)
    fx["bad-flags"] = (p + samples(1, [(3, 1, 0, 1, 1, 1 << 20)]),
                       "unknown flag bits", False)
    fx["bad-lost-reason"] = (p + lost(9, 1, 1), "LOST: unknown reason 9",
                             False)
    fx["after-bye"] = (p + bye(0, 0, 1) + string(9, "late"),
                       "STRING frame after BYE", False)
    fx["bad-varint"] = (p + frame(LOCATION, varint(6) + b"\xff" * 11),
                        "LOCATION frame: payload ends early", False)
    # PYPROF_NATIVE: mappings and addresses (locations 1-5 are defined)
    fx["mapping-bad-range"] = (p + mapping(1, 0x2000, 0x1000, 0, 1),
                               "start is not below limit", False)
    fx["address-outside"] = (p + mapping(1, 0x1000, 0x2000, 0, 1) +
                             address(6, 1, 0x3000),
                             "is outside mapping 1", False)
    fx["address-no-mapping"] = (p + address(6, 5, 0x1234),
                                "mapping 5 is not a defined mapping", False)
    fx["address-shares-ids"] = (p + address(6, 0, 0x1234) + location(6, 1, 1),
                                "LOCATION id 6 out of order (expected 7)",
                                False)
    # PYPROF_HEAP_RATE: a bad record anywhere rejects the whole frame
    fx["heap-undefined-node"] = (
        p + heap(4096, [(HEAP_ALLOC, 1, 1, 64, 0x1000),
                        (HEAP_ALLOC, 99, 1, 64, 0x2000)]),
        "HEAP record 1 (kind 1): node is not a defined node", False)
    fx["heap-bad-kind"] = (p + heap(4096, [(7, 1)]),
                           "HEAP record 0 (kind 7): unknown record kind",
                           False)
    fx["heap-snapshot-zero"] = (p + heap_snapshot(0),
                                "HEAP_SNAPSHOT with seq 0", False)
    # An ADDRESS naming nothing (no mapping, address 0), then a stack and
    # a sample on it: the collector once took it for a Python location
    # with no function and crashed writing the profile.
    fx["address-zero"] = (p + address(6, 0, 0) + node(6, 0, 6) +
                          samples(1, [(6, 1, 0, 1, 1, 0)]),
                          "ADDRESS 6: address 0", False)
    # Label sets: strings 1-8 are defined; 9 "endpoint", 10 "/api", then
    # the bad part
    lp = p + string(9, "endpoint") + string(10, "/api")
    fx["labels-id-gap"] = (lp + labels(2, [(9, 10)]),
                           "LABELS id 2 out of order (expected 1)", False)
    fx["labels-no-pairs"] = (
        lp + labels(1, []),
        "LABELS 1: 0 pairs (1 to %d are allowed)" % MAX_LABELS, False)
    fx["labels-odd"] = (lp + frame(LABELS, varint(1) + varint(9) +
                                   varint(10) + varint(9)),
                        "LABELS frame: payload ends early", False)
    many = b"".join(string(11 + i, "k%d" % i) for i in range(MAX_LABELS + 1))
    fx["labels-too-many"] = (
        lp + many + labels(1, [(11 + i, 10) for i in range(MAX_LABELS + 1)]),
        "LABELS frame: more than %d pairs" % MAX_LABELS, False)
    fx["labels-undefined-string"] = (lp + labels(1, [(9, 99)]),
                                     "LABELS 1: value 99 is not a defined "
                                     "string", False)
    fx["labels-empty-key"] = (lp + string(11, "") + labels(1, [(11, 10)]),
                              "LABELS 1: pair 0 has an empty key", False)
    fx["labels-duplicate-key"] = (
        lp + string(11, "endpoint") + labels(1, [(9, 10), (11, 10)]),
        'LABELS 1: pair 1 has a key given twice ("endpoint")', False)
    fx["labels-reserved-key"] = (
        lp + string(11, "thread_name") + labels(1, [(11, 10)]),
        'a key the collector writes itself ("thread_name")', False)
    fx["labels-undefined-set"] = (
        lp + labels(1, [(9, 10)]) +
        samples(1, [(3, 1, 0, 1, 1, SF_LABELS, 1),
                    (3, 1, 0, 1, 1, SF_LABELS, 2)]),
        "SAMPLES record 1 (node 3, thread 1, flags 0x80): labels is not "
        "a defined label set", False)
    fx["heap-undefined-labels"] = (
        lp + heap(4096, [(HEAP_ALLOC_LABELS, 3, 1, 64, 0x1000, 1)]),
        "HEAP record 0 (kind 4): labels is not a defined label set", False)
    return fx


def bye_fields(**fields):
    tags = {"samples": B_SAMPLES, "lost": B_LOST, "end_mono_ns": B_END_MONO_NS,
            "achieved_ns": 7}
    return frame(BYE, b"".join(tag_varint(tags[k], v)
                               for k, v in fields.items()))


def ctl(ftype, fields):
    """A control frame: fields is a list of (tag, int or bytes)."""
    return frame(ftype, b"".join(
        tag_bytes(t, v) if isinstance(v, (bytes, str)) else tag_varint(t, v)
        for t, v in fields))


def tagged_frames():
    """name -> bytes: one frame of each tagged kind, fields in the order
    the library (preload/agent.c, refuse.c, control.c), the collector
    (daemon/control.c, conn.c) and pyprof ctl (cli/cmd_ctl.c) write them,
    values as a run could send them."""
    C = dict(REQ=1, MODE=2, PERIOD_NS=3, HEAP_RATE=4, NATIVE=5, LEASE_MS=6,
             HARD=7, STATUS=8, SAMPLING=9, ORIGIN=10, ACHIEVED_NS=11,
             SAMPLES=12, SIGNALS=13, ARMED=14, LEASE_LEFT_MS=15, MSG=16,
             PID=17, VERB=18, COMM=19, SINCE_NS=20, N=21, WRITTEN=22)
    # library -> collector: the state fields of control.c's put_state
    state = [(C["SAMPLING"], 1), (C["ORIGIN"], 2), (C["MODE"], 0),
             (C["PERIOD_NS"], 5_000_000), (C["HEAP_RATE"], 0),
             (C["NATIVE"], 0), (C["ACHIEVED_NS"], 4_000_000),
             (C["SAMPLES"], 1234), (C["SIGNALS"], 1300), (C["ARMED"], 3),
             (C["LEASE_LEFT_MS"], 2500), (C["SINCE_NS"], 987_654_321)]
    reply = [(C["REQ"], 5), (C["STATUS"], 1),
             (C["MSG"], "native stacks are off: no unwind tables")] + state
    hello_fields = (
        b"PYPROF" + tag_varint(H_VERSION, 1) + tag_varint(H_PID, 4242) +
        tag_varint(H_PPID, 1) + tag_varint(H_START_UNIX_NS, 1_700_000_000_000_000_000) +
        tag_varint(H_START_MONO_NS, 123_456_789) + tag_varint(H_MODE, 1) +
        tag_varint(H_PERIOD_NS, 10_000_000) + tag_varint(H_MAX_DEPTH, 1024) +
        tag_bytes(H_PYVERSION, "3.11.7") + tag_bytes(H_EXE, "/usr/bin/python3.11") +
        tag_bytes(H_COMM, "python3") + tag_bytes(H_ARG, "python3") +
        tag_bytes(H_ARG, "app.py") + tag_varint(H_CONN_SEQ, 2) +
        tag_varint(H_UID, 1000) + tag_varint(20, 1) + tag_varint(16, 300))
    refused = (
        b"PYPROF" + tag_varint(H_VERSION, 1) + tag_varint(H_PID, 4243) +
        tag_varint(H_PPID, 4242) + tag_bytes(H_PYVERSION, "3.16.0") +
        tag_bytes(H_EXE, "/usr/bin/python3.16") + tag_bytes(H_COMM, "python3.16") +
        tag_varint(H_UID, 1000) +
        tag_bytes(21, "Python 3.16 is not supported"))
    return {
        "hello": frame(HELLO, hello_fields),
        "hello-refused": frame(HELLO, refused),
        # agent.c's put_bye: all fields, ACHIEVED, NATIVE_UNMERGED and
        # CPU_SOURCE included
        "bye": frame(BYE, b"".join(tag_varint(t, v) for t, v in [
            (B_SAMPLES, 1500), (B_LOST, 7), (B_END_MONO_NS, 9_000_000_000),
            (4, 1507), (5, 3_014_000), (6, 2), (7, 4_000_000), (8, 11),
            (9, 2)])),
        "ctl-reply": ctl(16, reply),
        "ctl-state": ctl(17, state[:10] + state[11:]),
        # cmd_ctl.c's ctl_frame: VERB, PID, LEASE_MS, MODE, PERIOD_NS,
        # HEAP_RATE, NATIVE
        "ctl-request": ctl(18, [(C["VERB"], 1), (C["PID"], 4242),
                                (C["LEASE_MS"], 3000), (C["MODE"], 0),
                                (C["PERIOD_NS"], 5_000_000),
                                (C["HEAP_RATE"], 524288), (C["NATIVE"], 1)]),
        # wire.h's worked example
        "ctl-start": ctl(32, [(C["REQ"], 5), (C["MODE"], 0),
                              (C["PERIOD_NS"], 5_000_000),
                              (C["LEASE_MS"], 3000)]),
        "ctl-stop": ctl(33, [(C["REQ"], 6), (C["HARD"], 1)]),
        "ctl-flush": ctl(34, [(C["REQ"], 7)]),
        "ctl-status": ctl(35, [(C["REQ"], 8)]),
        # daemon/control.c's answer: PID, COMM, the collector's note, then
        # the library's reply fields as they came
        "ctl-answer": ctl(36, [(C["PID"], 4242), (C["COMM"], "python3"),
                               (C["MSG"], "lease shortened to 60 s")] + reply),
        "ctl-done": ctl(37, [(C["N"], 0), (C["MSG"], "no process matched")]),
        "ctl-written": ctl(38, [(C["WRITTEN"], 1500)]),
    }


def run_frames(a):
    os.makedirs(a.dir, exist_ok=True)
    for name, data in sorted(tagged_frames().items()):
        with open(os.path.join(a.dir, name + ".bin"), "wb") as f:
            f.write(data)
    return 0


FUZZ_SPLIT = b"@@conn@@"  # tests/fuzz/wire_fuzz.c: next connection


def fuzz_seeds():
    """name -> bytes: valid streams that reach every kind of frame, as
    starting points for tests/fuzz/wire_fuzz.c (malformed ones are the
    fixtures above)."""
    sd = {}
    pid, mono = 4343, 1_000_000_000
    start = 1_700_000_000_000_000_000
    prog = Program("seed", pid).definitions()
    recs = [(3, 1, 0, 1, 10_000_000, 0),
            (4, 2, 5, 2, 20_000_000, SF_GIL_KNOWN | SF_GIL),
            (5, 1, 5, 1, 10_000_000, SF_TRUNCATED | SF_NATIVE_KNOWN),
            (3, 2, 5, 1, 10_000_000, SF_OPCODE, 100)]
    sd["cpu"] = (hello(pid, start, mono) + prog + samples(mono, recs) +
                 lost(1, 3, 30_000_000) + thread(1, pid, 3) +
                 samples(mono + 10, recs[:1]) +
                 bye(5, 3, mono + 100))
    sd["wall"] = (hello(pid, start, mono, mode=1, achieved_ns=20_000_000) +
                  prog + samples(mono, [(3, 1, 0, 1, 10, SF_OFF_CPU)]) +
                  bye_fields(samples=9, achieved_ns=30_000_000))
    # native frames: a mapping, addresses in it and in none, a stack
    # mixing them with Python frames
    sd["native"] = (hello(pid, start, mono) + prog +
                    string(9, "/usr/lib/libfake.so") +
                    mapping(1, 0x7f0000000000, 0x7f0000100000, 0x1000, 9,
                            bytes(range(20))) +
                    address(6, 1, 0x7f0000001234) + address(7, 0, 0x401000) +
                    node(6, 3, 6) + node(7, 6, 7) +
                    samples(mono, [(7, 1, 0, 1, 1, SF_NATIVE_KNOWN |
                                    SF_NATIVE)]) + bye(1, 0, mono + 1))
    sd["heap"] = (hello(pid, start, mono) + prog +
                  heap(524288, [(HEAP_ALLOC, 3, 1, 1_000_000, 0x7f0000001000),
                                (HEAP_ALLOC, 4, 2, 64, 0x7f0000002000),
                                (HEAP_FREE, 0x7f0000001000),
                                (HEAP_LOST, 2, 128)]) +
                  heap_snapshot(1) +
                  heap(524288, [(HEAP_ALLOC, 5, 1, 4096, 0x7f0000002000)]) +
                  heap_snapshot(2) + bye(0, 0, mono))
    # the same process on two connections: a reconnection replaying its
    # definitions while the first one is still open
    sd["reconnect"] = (hello(pid, start, mono) + prog +
                       samples(mono, recs[:2]) + FUZZ_SPLIT +
                       hello(pid, start, mono, conn_seq=1) + prog +
                       samples(mono + 50, recs[1:3]) + bye(6, 0, mono + 60))
    # label sets: samples naming them (one with an opcode before the set
    # id), a labelled allocation, and a reconnection replaying the sets
    lab = (string(9, "endpoint") + string(10, "/api/users") +
           string(11, "") + string(12, "user") +
           labels(1, [(9, 10)]) + labels(2, [(12, 11), (9, 10)]))
    lrecs = [(3, 1, 0, 1, 10_000_000, SF_LABELS, 1),
             (4, 2, 5, 2, 20_000_000, SF_LABELS | SF_OPCODE, 100, 2),
             (3, 1, 5, 1, 10_000_000, 0)]
    sd["labels"] = (hello(pid, start, mono) + prog + lab +
                    samples(mono, lrecs) +
                    heap(524288, [(HEAP_ALLOC_LABELS, 3, 1, 4096,
                                   0x7f0000001000, 2),
                                  (HEAP_ALLOC, 4, 1, 64, 0x7f0000002000)]) +
                    FUZZ_SPLIT + hello(pid, start, mono, conn_seq=1) + prog +
                    lab + samples(mono + 50, lrecs[:2]) +
                    bye(7, 0, mono + 60))
    # a library's control replies, then a controller asking for a start
    sd["control"] = (hello(pid, start, mono) + prog +
                     ctl(16, [(1, 5), (8, 0), (9, 1), (10, 2), (16, "ok")]) +
                     ctl(17, [(9, 0), (10, 0), (12, 7)]) + FUZZ_SPLIT +
                     ctl(18, [(18, 1), (17, pid), (6, 3000), (2, 0),
                              (3, 5_000_000)]))
    return sd


def run_seeds(a):
    os.makedirs(a.dir, exist_ok=True)
    for name, data in sorted(fuzz_seeds().items()):
        with open(os.path.join(a.dir, name + ".bin"), "wb") as f:
            f.write(data)
    return 0


def run_fixtures(a):
    os.makedirs(a.dir, exist_ok=True)
    for name, (data, expect, eof) in sorted(fixtures().items()):
        with open(os.path.join(a.dir, name + ".bin"), "wb") as f:
            f.write(data)
        print("%s\t%s\t%s" % (name, "eof" if eof else "wait", expect))
    return 0


def run_send(a):
    with open(a.file, "rb") as f:
        data = f.read()
    s = connect(a.socket)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the collector may close before reading it all: fine
    if a.eof:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(a.timeout)
    try:
        while True:
            if not s.recv(4096):
                print("closed-by-collector")
                break
    except socket.timeout:
        print("still-open")
    except ConnectionResetError:
        print("closed-by-collector")
    s.close()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("good")
    g.add_argument("--socket", required=True)
    g.add_argument("--pid", type=int, default=os.getpid())
    g.add_argument("--start-ns", type=int, default=0)
    g.add_argument("--samples", type=int, default=300)
    g.add_argument("--batch", type=int, default=100)
    g.add_argument("--hz", type=int, default=100)
    g.add_argument("--achieved-hz", type=int, default=0)
    g.add_argument("--prefix", default="goodclient")
    g.add_argument("--comm", default="goodclient")
    g.add_argument("--conn-seq", type=int, default=0)
    g.add_argument("--lost", action="append", help="REASON:COUNT")
    g.add_argument("--wall", action="store_true")
    g.add_argument("--opcodes", help="comma-separated opcode numbers, "
                   "cycled over the samples (WIRE_SF_OPCODE)")
    g.add_argument("--label", action="append", metavar="KEY=VALUE",
                   help="a pair of the label set that every even-numbered "
                   "sample names (WIRE_SF_LABELS); repeatable")
    g.add_argument("--heap-labels", action="store_true",
                   help="with --label: also a HEAP frame, one allocation "
                   "of 1000000 bytes under the set (ALLOC_LABELS) and one "
                   "of 4096 without")
    g.add_argument("--pyversion", default="3.11.7")
    g.add_argument("--flags", action="store_true",
                   help="mark GIL held on odd samples")
    g.add_argument("--pause-ms", type=float, default=0)
    g.add_argument("--hold", type=float, default=0)
    g.add_argument("--wait-file", help="after half the samples, wait "
                   "until this file exists")
    g.add_argument("--no-bye", action="store_true")
    g.add_argument("--keep-open", type=float, default=0)
    s = sub.add_parser("send")
    s.add_argument("--socket", required=True)
    s.add_argument("--eof", action="store_true")
    s.add_argument("--timeout", type=float, default=5)
    s.add_argument("file")
    f = sub.add_parser("fixtures")
    f.add_argument("dir")
    f = sub.add_parser("seeds")
    f.add_argument("dir")
    f = sub.add_parser("frames")
    f.add_argument("dir")
    a = ap.parse_args()
    try:
        return {"good": run_good, "send": run_send,
                "fixtures": run_fixtures, "seeds": run_seeds,
                "frames": run_frames}[a.cmd](a)
    except OSError as e:
        print("wire_client: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
