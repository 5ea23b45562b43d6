#!/usr/bin/env python3
"""otlp_pb.py - read what pyprof sends as OTLP profiles, independently of
its C code, and receive it over HTTP as an OTLP/HTTP server would.

The decoder is Google's protobuf for Python (Debian's python3-protobuf)
with classes generated at run time by `protoc --python_out` (Debian's
protobuf-compiler) from the .proto files vendored under proto/opentelemetry
(opentelemetry-proto's profiles v1development), into a temporary
directory: nothing here shares code with collector/push/otlp.c.

  otlp_pb.py summary FILE      decode an ExportProfilesServiceRequest and
                               print one fact per line:
      resource KEY=VALUE         resource attributes
      scope NAME VERSION
      profile TYPE/UNIT N TOTAL  per Profile in order: samples, value sum
      profattr TYPE/UNIT K=V     and each of its attributes
      period TYPE/UNIT N         and its period (first profile)
      time T duration D          (first profile)
      frame NAME KIND            each location's function (its first line;
                                 0xADDR for a native one without a line)
                                 and profile.frame.type ("-" if none)
      stack TYPE ROOT;...;LEAF V value per stack, per sample type
      attr TYPE KEY=VALUE V      value per sample attribute, per type
      link TYPE TRACE SPAN V     value per link (hex ids), per type
    and checks profiles.proto's rules: one resource and scope, index 0 of
    every dictionary table the zero value, every index in range, one value
    per sample. A broken rule: a message on stderr and exit status 1.

  otlp_pb.py serve DIR [--fail CODE,...] [--retry-after S]
    An OTLP/HTTP receiver on 127.0.0.1, port 0 (the port is written to
    DIR/port once listening). POST /v1development/profiles with
    Content-Type application/x-protobuf, optionally Content-Encoding gzip;
    the body is decoded, saved as DIR/req-NNNN.pb (uncompressed) and
    answered 200 with an ExportProfilesServiceResponse. The first requests
    are answered with the --fail codes instead (429 and 503 with
    Retry-After if given), one per request. As the OTLP specification
    says: another path 404, another method 405, another content type 415,
    a body that is not a request 400, more than 64 MiB 413; every 4xx/5xx
    body a google.rpc.Status (its message field). One line per request
    in DIR/log: "N STATUS CONTENT-ENCODING BYTES".
"""
import atexit
import gzip
import http.server
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PROTO_DIR = os.path.join(ROOT, "proto")
PROTOS = [
    "opentelemetry/proto/common/v1/common.proto",
    "opentelemetry/proto/resource/v1/resource.proto",
    "opentelemetry/proto/profiles/v1development/profiles.proto",
    "opentelemetry/proto/collector/profiles/v1development/"
    "profiles_service.proto",
]
MAX_BODY = 64 << 20


def load_classes():
    """The generated module of profiles_service.proto."""
    out = tempfile.mkdtemp(prefix="otlp-pb.")
    atexit.register(shutil.rmtree, out, True)
    subprocess.run(["protoc", "--proto_path=" + PROTO_DIR,
                    "--python_out=" + out] + PROTOS, check=True)
    sys.path.insert(0, out)
    from opentelemetry.proto.collector.profiles.v1development import (
        profiles_service_pb2)
    return profiles_service_pb2


def any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Checker:
    """profiles.proto's rules on one request; the first broken one."""

    def __init__(self, req):
        self.req, self.d, self.errors = req, req.dictionary, []

    def rule(self, ok, what):
        if not ok:
            self.errors.append(what)

    def index(self, i, table, what):
        self.rule(0 <= i < len(table), "%s: index %d of %d" %
                  (what, i, len(table)))

    def check(self):
        d, r = self.d, self.req
        self.rule(len(r.resource_profiles) == 1, "one ResourceProfiles")
        self.rule(len(r.resource_profiles[0].scope_profiles) == 1,
                  "one ScopeProfiles")
        for name in ("mapping_table", "location_table", "function_table",
                     "attribute_table", "stack_table", "link_table",
                     "string_table"):
            t = getattr(d, name)
            self.rule(len(t) > 0, name + " has element 0")
        self.rule(d.string_table[0] == "", "string_table[0] is ''")
        for name in ("mapping_table", "location_table", "function_table",
                     "attribute_table", "stack_table"):
            self.rule(getattr(d, name)[0].ByteSize() == 0,
                      name + "[0] is the zero value")
        link0 = d.link_table[0]
        self.rule(link0.trace_id == bytes(16) and link0.span_id == bytes(8),
                  "link_table[0] is 16 and 8 zero bytes")
        self.check_tables()
        for p in r.resource_profiles[0].scope_profiles[0].profiles:
            self.index(p.sample_type.type_strindex, d.string_table, "type")
            for s in p.samples:
                self.rule(len(s.values) == 1, "one value per sample")
                self.index(s.stack_index, d.stack_table, "sample stack")
                self.index(s.link_index, d.link_table, "sample link")
                for a in s.attribute_indices:
                    self.index(a, d.attribute_table, "sample attribute")
            for a in p.attribute_indices:
                self.index(a, d.attribute_table, "profile attribute")
        return self.errors

    def check_tables(self):
        d = self.d
        for s in d.stack_table:
            for i in s.location_indices:
                self.index(i, d.location_table, "stack location")
        for loc in d.location_table:
            self.index(loc.mapping_index, d.mapping_table, "mapping")
            for ln in loc.lines:
                self.index(ln.function_index, d.function_table, "function")
            for a in loc.attribute_indices:
                self.index(a, d.attribute_table, "location attribute")
        for f in d.function_table:
            for i in (f.name_strindex, f.system_name_strindex,
                      f.filename_strindex):
                self.index(i, d.string_table, "function string")
        for a in d.attribute_table:
            self.index(a.key_strindex, d.string_table, "attribute key")


def frame_name(d, loc):
    if loc.lines:
        f = d.function_table[loc.lines[0].function_index]
        return d.string_table[f.name_strindex] or "?"
    return "0x%x" % loc.address


def frame_kind(d, loc):
    for a in loc.attribute_indices:
        kv = d.attribute_table[a]
        if d.string_table[kv.key_strindex] == "profile.frame.type":
            return any_value(kv.value)
    return "-"


def summary(path):
    pb = load_classes()
    req = pb.ExportProfilesServiceRequest()
    with open(path, "rb") as f:
        req.ParseFromString(f.read())
    errors = Checker(req).check()
    if errors:
        for e in errors:
            sys.stderr.write("otlp_pb: rule broken: %s\n" % e)
        return 1
    d = req.dictionary
    rp = req.resource_profiles[0]
    for kv in rp.resource.attributes:
        print("resource %s=%s" % (kv.key, any_value(kv.value)))
    sc = rp.scope_profiles[0]
    print("scope %s %s" % (sc.scope.name, sc.scope.version))
    for i, loc in enumerate(d.location_table[1:], 1):
        print("frame %s %s" % (frame_name(d, loc), frame_kind(d, loc)))
    for n, p in enumerate(sc.profiles):
        vt = "%s/%s" % (d.string_table[p.sample_type.type_strindex],
                        d.string_table[p.sample_type.unit_strindex])
        print("profile %s %d %d" % (vt, len(p.samples),
                                    sum(s.values[0] for s in p.samples)))
        for a in p.attribute_indices:
            kv = d.attribute_table[a]
            print("profattr %s %s=%s" % (vt, d.string_table[kv.key_strindex],
                                         any_value(kv.value)))
        if n == 0:
            print("period %s/%s %d" % (
                d.string_table[p.period_type.type_strindex],
                d.string_table[p.period_type.unit_strindex], p.period))
            print("time %d duration %d" % (p.time_unix_nano,
                                           p.duration_nano))
        summarize_samples(d, vt.split("/")[0], p)
    return 0


def summarize_samples(d, t, p):
    stacks, attrs, links = {}, {}, {}
    for s in p.samples:
        v = s.values[0]
        names = [frame_name(d, d.location_table[i])
                 for i in d.stack_table[s.stack_index].location_indices]
        key = ";".join(reversed(names))
        stacks[key] = stacks.get(key, 0) + v
        for a in s.attribute_indices:
            kv = d.attribute_table[a]
            k = "%s=%s" % (d.string_table[kv.key_strindex],
                           any_value(kv.value))
            attrs[k] = attrs.get(k, 0) + v
        if s.link_index:
            lk = d.link_table[s.link_index]
            k = "%s %s" % (lk.trace_id.hex(), lk.span_id.hex())
            links[k] = links.get(k, 0) + v
    for k, v in sorted(stacks.items()):
        print("stack %s %s %d" % (t, k, v))
    for k, v in sorted(attrs.items()):
        print("attr %s %s %d" % (t, k, v))
    for k, v in sorted(links.items()):
        print("link %s %s %d" % (t, k, v))


# ---- the receiver ---------------------------------------------------------

def status_body(message):
    """A google.rpc.Status with only its message (field 2) set."""
    m = message.encode()
    n, size = len(m), b""
    while True:
        b = n & 0x7f
        n >>= 7
        size += bytes([b | (0x80 if n else 0)])
        if not n:
            break
    return b"\x12" + size + m


def make_handler(pb, outdir, fails, retry_after):
    state = {"n": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def answer(self, code, body, ctype="application/x-protobuf"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if code in (429, 503) and retry_after is not None:
                self.send_header("Retry-After", str(retry_after))
            self.end_headers()
            self.wfile.write(body)

        def fail(self, code, message):
            self.answer(code, status_body(message))
            return code

        def do_GET(self):
            self.send_response(405)
            self.send_header("Allow", "POST")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            state["n"] += 1
            n = state["n"]
            enc = self.headers.get("Content-Encoding", "identity")
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length) if length else b""
            code = self.handle_body(n, enc, body)
            with open(os.path.join(outdir, "log"), "a") as f:
                f.write("%d %d %s %d\n" % (n, code, enc, len(body)))

        def handle_body(self, n, enc, body):
            if self.path.split("?")[0] != "/v1development/profiles":
                return self.fail(404, "no such path: " + self.path)
            ctype = self.headers.get("Content-Type", "")
            if ctype.split(";")[0].strip() != "application/x-protobuf":
                return self.fail(415, "unsupported content type " + ctype)
            if enc == "gzip":
                try:
                    body = gzip.decompress(body)
                except (OSError, EOFError) as e:
                    return self.fail(400, "bad gzip body: %s" % e)
            elif enc != "identity":
                return self.fail(415, "unsupported encoding " + enc)
            if len(body) > MAX_BODY:
                return self.fail(413, "body larger than 64 MiB")
            if n <= len(fails):
                return self.fail(fails[n - 1], "scripted failure")
            req = pb.ExportProfilesServiceRequest()
            try:
                req.ParseFromString(body)
            except Exception as e:  # DecodeError and friends
                return self.fail(400, "not an ExportProfilesServiceRequest:"
                                 " %s" % e)
            with open(os.path.join(outdir, "req-%04d.pb" % n), "wb") as f:
                f.write(body)
            self.answer(200, pb.ExportProfilesServiceResponse()
                        .SerializeToString())
            return 200

    return Handler


def serve(argv):
    outdir, fails, retry_after = argv[0], [], None
    args = argv[1:]
    while args:
        if args[0] == "--fail":
            fails = [int(c) for c in args[1].split(",") if c]
        elif args[0] == "--retry-after":
            retry_after = int(args[1])
        else:
            sys.exit("otlp_pb.py serve: unknown option " + args[0])
        args = args[2:]
    pb = load_classes()
    srv = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), make_handler(pb, outdir, fails, retry_after))
    tmp = os.path.join(outdir, "port.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, os.path.join(outdir, "port"))
    srv.serve_forever()


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "summary":
        return summary(sys.argv[2])
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        return serve(sys.argv[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
