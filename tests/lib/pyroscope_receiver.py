#!/usr/bin/env python3
"""pyroscope_receiver.py - Grafana Pyroscope's HTTP ingest API for the tests.

No Pyroscope server can be installed here, so push.bats sends to this one:
a stdlib http.server on 127.0.0.1 (port 0: the port it got is written to
--port-file) that implements POST /ingest as Pyroscope's server reads it
(grafana/pyroscope pkg/ingester/pyroscope/ingest_handler.go, the label
set parser api/model/labelset, pkg/og/convert/pprof/profile.go):

  query   name       SERVICE{k=v,...}: the service [A-Za-z0-9_.-/]+, label
                     names [A-Za-z0-9_.]+ (not __name__); values end at ','
                     or '}' and are trimmed; else 400 "name: ..."
          from, until  Unix seconds (default: now)
          sampleRate   an integer (default 100; not a number: 100 too)
          spyName      default "unknown"
          format       pprof: the body is a pprof profile, gzipped or not;
                       or, with Content-Type multipart/form-data (what
                       the Go SDK sends), a form whose field "profile" is
                       the profile and whose optional field
                       "sample_type_config" (JSON: sample type ->
                       {"units", "display-name", ...}) renames the types
                       for the series' name (RawProfile.metricName)
  answer  200 with an empty body; 400 for a bad name or a body that is not
          a profile; 404 for another path; 405 for another method.
  series  what the server would store: __name__ from the sample types
          ("wall" -> wall; a type, or its display name, containing
          "cpu" -> process_cpu; alloc_*, inuse_*, space, objects ->
          memory; mutex_* -> mutex; block_* -> block), service_name (the
          name before '{'), pyroscope_spy, the labels. A form's display
          names are recorded as "display_names".

Every request is recorded in --dir as NNNN.json (method, path, query,
headers, the status answered, the series, sample types, time_nanos) and,
when it was accepted, NNNN.pb.gz (the profile as received: the body, or
a form's "profile" field) for
`go tool pprof -raw`.

Behaviour is read from --dir/mode before each request, so a test can
change it while the collector runs:
  ok (or no file)  as above
  503              answer 503 "ingester unavailable" (an outage)
  401              answer 401 "invalid credentials" (as an authenticating
                   proxy in front of Pyroscope would)
  429              answer 429 "too many requests"
  slow             sleep 10 s, then as ok
  503 -1           answer 503 with "Retry-After: -1" (a broken server)
  301              answer 301 "moved" with Location: the same path on
                   http://127.0.0.1:9/ (a misconfigured proxy)
--require-tenant makes a request without X-Scope-OrgID get 401 "no org id"
(Pyroscope in multi-tenant mode). --tls-cert FILE (a PEM file holding the
certificate and its key) serves HTTPS instead of HTTP.
"""
import argparse
import email.parser
import email.policy
import gzip
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_pb import fields  # noqa: E402

LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_.")
SERVICE_CHARS = LABEL_CHARS | set("-/")


def parse_name(name):
    """labelset.Parse: (service, {label: value}) or ValueError."""
    service, labels = name, {}
    if "{" in name:
        service, rest = name.split("{", 1)
    else:
        rest = ""
    service = service.strip()
    if not service or set(service) - SERVICE_CHARS:
        raise ValueError("invalid service name: %r" % service)
    rest = rest.split("}", 1)[0]
    for pair in rest.split(","):
        if not pair.strip():
            continue
        if "=" not in pair:
            continue
        k, v = pair.split("=", 1)
        k = k.strip()
        if not k or set(k) - LABEL_CHARS or k == "__name__":
            raise ValueError("invalid label name: %r" % k)
        labels[k] = v.strip()
    return service, labels


def profile_facts(body):
    """(sample types as 'type/unit', time_nanos) or ValueError."""
    raw = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    strings, types, time_nanos = [], [], 0
    try:
        for num, _, v in fields(raw):
            if num == 1:
                vt = dict((n, x) for n, _, x in fields(v))
                types.append((vt.get(1, 0), vt.get(2, 0)))
            elif num == 6:
                strings.append(v.decode("utf-8"))
            elif num == 9:
                time_nanos = v
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise ValueError("not a pprof profile: %s" % e)
    if not types:
        raise ValueError("not a pprof profile: no sample type")
    return ["%s/%s" % (strings[t], strings[u]) for t, u in types], time_nanos


def metric_name(types, config=None):
    names = [t.split("/")[0] for t in types]
    if "wall" in names:
        return "wall"
    for st in names:
        if config and (config.get(st) or {}).get("display-name"):
            st = config[st]["display-name"]
        elif st == "samples":
            st = "cpu"  # DefaultSampleTypeMapping's display name
        if "cpu" in st:
            return "process_cpu"
        if "alloc_" in st or "inuse_" in st or st in ("space", "objects"):
            return "memory"
        if "mutex_" in st:
            return "mutex"
        if "block_" in st:
            return "block"
        if "goroutines" in st:
            return "goroutines"
    return st


def form_fields(ctype, body):
    """The fields of a multipart/form-data body, {name: bytes}, or
    ValueError."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode("latin-1") + b"\r\n\r\n" + body)
    if not msg.is_multipart():
        raise ValueError("not a multipart form")
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            out[name] = part.get_payload(decode=True) or b""
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    counter = [0]

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, text="", headers=()):
        data = (text + "\n").encode() if text else b""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, rec, body):
        with self.lock:
            self.counter[0] += 1
            n = self.counter[0]
        base = os.path.join(self.server.dir, "%04d" % n)
        if body is not None:
            with open(base + ".pb.gz.tmp", "wb") as f:
                f.write(body)
            os.rename(base + ".pb.gz.tmp", base + ".pb.gz")
        with open(base + ".json.tmp", "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
        os.rename(base + ".json.tmp", base + ".json")

    def do_GET(self):
        self.answer(405, "method not allowed")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        q = dict((k, v[0]) for k, v in query.items())
        rec = {"method": "POST", "path": url.path, "raw_query": url.query,
               "query": q, "headers": dict(self.headers.items()),
               "received": time.time(), "bytes": len(body)}
        self.extra = []
        self.profile_body = body
        status, text, keep = self.decide(url, q, body, rec)
        rec["status"] = status
        self.record(rec, self.profile_body if keep else None)
        self.answer(status, text, self.extra)

    def decide(self, url, q, body, rec):
        try:
            with open(os.path.join(self.server.dir, "mode")) as f:
                mode = f.read().strip()
        except OSError:
            mode = "ok"
        rec["mode"] = mode
        if url.path != "/ingest":
            return 404, "404 page not found", False
        if mode == "503":
            return 503, "ingester unavailable", False
        if mode == "503 -1":
            self.extra = [("Retry-After", "-1")]
            return 503, "ingester unavailable", False
        if mode == "301":
            self.extra = [("Location", "http://127.0.0.1:9" + self.path)]
            return 301, "moved", False
        if mode == "401":
            return 401, "invalid credentials", False
        if mode == "429":
            return 429, "too many requests", False
        if mode == "slow":
            time.sleep(10)
        if self.server.require_tenant and not self.headers.get(
                "X-Scope-OrgID"):
            return 401, "no org id", False
        try:
            service, labels = parse_name(q.get("name", ""))
        except ValueError as e:
            return 400, "name: %s" % e, False
        now = int(time.time())
        rec["from"] = int(q["from"]) if q.get("from") else now
        rec["until"] = int(q["until"]) if q.get("until") else now
        try:
            rec["sampleRate"] = int(q.get("sampleRate", "100"))
        except ValueError:
            rec["sampleRate"] = 100
        spy = q.get("spyName") or "unknown"
        if q.get("format") != "pprof":
            return 400, "this receiver takes format=pprof only", False
        config = None
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            try:
                f = form_fields(ctype, body)
                if "profile" not in f:
                    raise ValueError("no profile field")
                body = f["profile"]
                if f.get("sample_type_config"):
                    config = json.loads(f["sample_type_config"])
            except (ValueError, TypeError) as e:
                return 400, "form: %s" % e, False
            rec["display_names"] = dict(
                (k, (v or {}).get("display-name", ""))
                for k, v in (config or {}).items())
            rec["units"] = dict((k, (v or {}).get("units", ""))
                                for k, v in (config or {}).items())
        self.profile_body = body
        try:
            types, time_nanos = profile_facts(body)
        except (ValueError, OSError, EOFError) as e:
            return 400, str(e), False
        rec["sample_types"] = types
        rec["time_nanos"] = time_nanos
        series = {"__name__": metric_name(types, config), "__delta__": "false",
                  "pyroscope_spy": spy, "service_name": service}
        series.update(labels)
        rec["series"] = series
        return 200, "", True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--require-tenant", action="store_true")
    ap.add_argument("--tls-cert")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.daemon_threads = True
    srv.dir = a.dir
    srv.require_tenant = a.require_tenant
    with open(a.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(a.port_file + ".tmp", a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
