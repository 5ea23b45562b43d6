#!/usr/bin/env python3
"""scrape_client.py - replay the requests Grafana Alloy and Parca send when
they scrape /debug/pprof, and check the profiles they got back.

No Alloy or Parca can be installed here, so this sends what their scrape
loops send (read from their sources: Alloy's
internal/component/pyroscope/scrape/{target,scrape_loop}.go, Parca's
pkg/scrape/{target,scrape}.go), on their schedule, scaled down:

  alloy: GET http://ADDR/PREFIX/PATH?<params, sorted by key>&seconds=I-1
         (a delta profile: seconds is the scrape interval minus one
         second), headers Host, User-Agent: Alloy/VERSION (linux;
         binary), Authorization: Bearer TOKEN (http_client_config),
         Accept-Encoding: gzip (Go's transport adds it); one request per
         tick of a ticker of period I.
  parca: the same with seconds=I (its interval) and User-Agent:
         conprof/VERSION (its path_prefix is joined to each path when
         its configuration loads: the same URL).

seconds= is added for delta profiles only: those of path
/debug/pprof/profile here (Alloy's process_cpu and a custom "wall";
memory, /debug/pprof/allocs, is not one).

A Go ticker keeps one pending tick: a scrape that outlasts the interval
is followed at once by the next. Query parameters are encoded as Go's
url.Values.Encode does (keys sorted, QueryEscape).

  scrape_client.py alloy|parca ADDR TOKENFILE OUTDIR INTERVAL COUNT
        [PATH [PREFIX [KEY=VALUE...]]]
      writes OUTDIR/NNN.pb.gz (each answer's body) and OUTDIR/index
      ("N START END STATUS URL" per scrape, Unix seconds)
  scrape_client.py grows OUTDIR PID
      allocs answers: pid's alloc_objects and alloc_space never go down
      from one answer to the next and grow overall (cumulative, as
      Alloy's own subtraction and Parca's expect)
  scrape_client.py tiles OUTDIR SECONDS
      the answers tile time: each one's time_nanos is the previous one's
      time_nanos + duration_nanos, exactly; the first lasts SECONDS and
      starts when it was asked for
  scrape_client.py cpu [--skip N] OUTDIR NAME:PID:SPAWN:LOG ...
      per process (SPAWN its start, Unix seconds; LOG scrape_worker.py's
      notes): it is only in windows it lived in, and the CPU the windows
      hold matches its own clock over the span they cover (--skip: the
      first N answers are left out)
Prints what it compared; exit status 1 on a failed check.
"""
import os
import sys
import time
import http.client
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_pb  # noqa: E402

AGENTS = {"alloy": "Alloy/v1.11.0 (linux; binary)",
          "parca": "conprof/v0.24.2"}


def go_query(params):
    """url.Values.Encode: sorted by key, values in order, QueryEscape."""
    out = []
    for k in sorted(params):
        for v in params[k]:
            out.append(urllib.parse.quote_plus(k, safe="-_.~") + "=" +
                       urllib.parse.quote_plus(v, safe="-_.~"))
    return "&".join(out)


def target(kind, interval, path, prefix, extra):
    params = {}
    for kv in extra:
        k, v = kv.split("=", 1)
        params.setdefault(k, []).append(v)
    if path.rstrip("/").endswith("/debug/pprof/profile"):
        seconds = interval - 1 if kind == "alloy" else interval
        params.setdefault("seconds", []).append(str(seconds))
    # Alloy: url.URL{...}.JoinPath(prefix, path); Parca: path alone.
    full = "/" + "/".join(p.strip("/") for p in (prefix, path) if p.strip("/"))
    query = go_query(params)
    return full + ("?" + query if query else "")


def fetch(addr, token, url, timeout, kind):
    host, port = addr.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    c.putrequest("GET", url, skip_host=True, skip_accept_encoding=True)
    c.putheader("Host", addr)
    c.putheader("User-Agent", AGENTS[kind])
    c.putheader("Authorization", "Bearer " + token)
    c.putheader("Accept-Encoding", "gzip")
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type", ""), body


def scrape(argv):
    kind, addr, token_file, out = argv[:4]
    interval, count = int(argv[4]), int(argv[5])
    path = argv[6] if len(argv) > 6 and argv[6] else "/debug/pprof/profile"
    prefix = argv[7] if len(argv) > 7 else ""
    url = target(kind, interval, path, prefix, argv[8:])
    with open(token_file) as f:
        token = f.read().strip()
    os.makedirs(out, exist_ok=True)
    # Alloy: timeout + interval - 1 s when seconds is set; Parca:
    # interval + 3 s. Either way longer than the profile.
    timeout = interval + 10
    tick = time.time()
    with open(os.path.join(out, "index"), "w") as index:
        for n in range(count):
            now = time.time()
            if now < tick:
                time.sleep(tick - now)
            start = time.time()
            # The next tick; a missed one is pending, the rest dropped.
            while tick <= start:
                tick += interval
            try:
                status, ctype, body = fetch(addr, token, url, timeout, kind)
            except OSError as e:
                status, ctype, body = 0, "", str(e).encode()
            end = time.time()
            if status == 200 and not ctype.startswith(
                    "application/octet-stream"):
                status = -1  # Alloy refuses another Content-Type
            with open(os.path.join(out, "%03d.pb.gz" % n), "wb") as f:
                f.write(body)
            index.write("%d %.6f %.6f %d %s\n" % (n, start, end, status, url))
            index.flush()
    return 0


def answers(out):
    rows = []
    with open(os.path.join(out, "index")) as f:
        for line in f:
            n, start, end, status, url = line.split(" ", 4)
            rows.append({"n": int(n), "start": float(start),
                         "end": float(end), "status": int(status),
                         "url": url.strip(),
                         "file": os.path.join(out, "%03d.pb.gz" % int(n))})
    return rows


def tiles(out, seconds):
    rows = answers(out)
    ok = True
    prev = None
    for r in rows:
        if r["status"] != 200:
            print("scrape %d: status %d" % (r["n"], r["status"]))
            ok = False
            prev = None
            continue
        p = pprof_pb.decode(r["file"])
        t, d = p["time_nanos"], p["duration_nanos"]
        line = "scrape %d: asked at %.3f, covers [%.3f, %.3f) %.3f s" % (
            r["n"], r["start"], t / 1e9, (t + d) / 1e9, d / 1e9)
        if prev is None:
            if d != seconds * 10**9:
                line += "  FIRST NOT %d s" % seconds
                ok = False
            if abs(t / 1e9 - r["start"]) > 0.5:
                line += "  FIRST DOES NOT START WHEN ASKED"
                ok = False
        elif t != prev[0] + prev[1]:
            line += "  GAP/OVERLAP %+d ns" % (t - prev[0] - prev[1])
            ok = False
        print(line)
        prev = (t, d)
    return 0 if ok and rows else 1


def sample_types(path):
    """The profile's sample type names, in order."""
    import gzip
    with gzip.open(path, "rb") as f:
        raw = f.read()
    types, strings = [], []
    for num, _, v in pprof_pb.fields(raw):
        if num == 1:
            types.append(dict((n, x) for n, _, x in pprof_pb.fields(v)))
        elif num == 6:
            strings.append(v.decode("utf-8"))
    return [strings[t.get(1, 0)] for t in types]


def grows(out, pid):
    ok = True
    prev = None
    first = None
    for r in answers(out):
        if r["status"] != 200:
            print("scrape %d: status %d" % (r["n"], r["status"]))
            return 1
        names = sample_types(r["file"])
        p = pprof_pb.decode(r["file"])
        tot = dict((n, 0) for n in names)
        for s in p["samples"]:
            labels, _ = pprof_pb.sample_view(p, s)
            if int(labels.get("pid", 0)) == pid:
                for n, v in zip(names, s["values"]):
                    tot[n] += v
        now = (tot.get("alloc_objects", -1), tot.get("alloc_space", -1))
        print("scrape %d: %s; pid %d alloc_objects %d alloc_space %d" % (
            r["n"], " ".join(names), pid, now[0], now[1]))
        if now[0] < 0 or now[1] < 0:
            print("  no alloc_objects/alloc_space")
            ok = False
        if prev is not None and (now[0] < prev[0] or now[1] < prev[1]):
            print("  went down: a scraper's subtraction would be negative")
            ok = False
        prev = now
        first = first or now
    if prev is None or prev[1] <= first[1]:
        print("allocations did not grow")
        ok = False
    return 0 if ok else 1


def cpu_by_pid(p):
    """{pid: CPU seconds} of one profile (cpu/nanoseconds values)."""
    out = {}
    for s in p["samples"]:
        labels, _ = pprof_pb.sample_view(p, s)
        v = s["values"][1] if len(s["values"]) > 1 else s["values"][0] * 10**7
        pid = int(labels.get("pid", 0))
        out[pid] = out.get(pid, 0) + v / 1e9
    return out


def own_cpu(notes, at):
    """The process's CPU clock at wall time at, interpolated."""
    if at <= notes[0][0]:
        return None if at < notes[0][0] - 0.01 else notes[0][1]
    if at >= notes[-1][0]:
        return notes[-1][1]
    lo, hi = 0, len(notes) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if notes[mid][0] <= at:
            lo = mid
        else:
            hi = mid
    (w0, c0), (w1, c1) = notes[lo], notes[hi]
    return c0 + (c1 - c0) * (at - w0) / (w1 - w0) if w1 > w0 else c0


def check_proc(wins, name, pid, spawn, notes):
    ok = True
    got = 0.0
    first, last = wins[0][0], wins[-1][1]
    for (s, e, by) in wins:
        c = by.get(pid, 0.0)
        got += c
        # Its last note is taken just before it exits: writing the notes
        # and the interpreter's shutdown follow (well under 0.5 s).
        lived = s < notes[-1][0] + 0.5 and e > spawn
        if c > 0 and not lived:
            print("  %s: %.3f s of CPU in [%.3f, %.3f), outside its life "
                  "[%.3f, %.3f]" % (name, c, s, e, spawn, notes[-1][0]))
            ok = False
        a, b = own_cpu(notes, s), own_cpu(notes, e)
        if a is not None and spawn < s and e < notes[-1][0]:
            # Wholly inside its life: this window against its clock.
            want = b - a
            if abs(c - want) > 0.1 * want + 0.04:
                print("  %s: window [%.3f, %.3f) holds %.3f s, its clock "
                      "says %.3f s" % (name, s, e, c, want))
                ok = False
    if spawn >= first:
        want = notes[-1][1]  # its whole life is inside the windows
        span = "its whole life"
    else:
        want = notes[-1][1] - own_cpu(notes, first) if last > notes[-1][0] \
            else own_cpu(notes, last) - own_cpu(notes, first)
        span = "the windows' span"
    print("%s (pid %d): windows hold %.3f s of CPU, its own clock %.3f s "
          "over %s" % (name, pid, got, want, span))
    if not (want * 0.9 - 0.05 <= got <= want * 1.03 + 0.03):
        print("  %s: CPU counted twice or lost" % name)
        ok = False
    return ok


def cpu(out, procs, skip=0):
    wins = []
    for r in answers(out)[skip:]:
        if r["status"] != 200:
            print("scrape %d: status %d" % (r["n"], r["status"]))
            return 1
        p = pprof_pb.decode(r["file"])
        t, d = p["time_nanos"], p["duration_nanos"]
        wins.append((t / 1e9, (t + d) / 1e9, cpu_by_pid(p)))
    ok = bool(wins)
    for spec in procs:
        name, pid, spawn, log = spec.split(":", 3)
        with open(log) as f:
            notes = [tuple(map(float, line.split())) for line in f]
        ok = check_proc(wins, name, int(pid), float(spawn), notes) and ok
    return 0 if ok else 1


def main():
    a = sys.argv[1:]
    if len(a) >= 6 and a[0] in AGENTS:
        return scrape(a)
    if len(a) == 3 and a[0] == "grows":
        return grows(a[1], int(a[2]))
    if len(a) == 3 and a[0] == "tiles":
        return tiles(a[1], int(a[2]))
    if len(a) >= 5 and a[0] == "cpu" and a[1] == "--skip":
        return cpu(a[3], a[4:], int(a[2]))
    if len(a) >= 3 and a[0] == "cpu":
        return cpu(a[1], a[2:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
