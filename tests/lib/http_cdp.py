#!/usr/bin/env python3
"""http_cdp.py - a person in headless Chromium using the collector's
/debug/pprof/ pages: open the index, read the process table, click a
process's "flame graph" link, wait for the flame graph (it takes the
window's seconds), and click a frame in it.

usage: http_cdp.py INDEX_URL --pid PID --zoom NAME --shots DIR [--timeout S]

Prints one JSON object per step:
  {"action": "index", "rows": [{"pid": 12, "command": "...", "python":
   "3.11.7", "mode": "cpu", "samples": 345}, ...], "count": "..."}
  {"action": "flamegraph", "url": "...", "names": [...], "shown": N, ...}
  {"action": "click", "name": NAME, "width_before": W0, "width": W1, ...}
and saves DIR/index.png, DIR/flamegraph.png, DIR/zoomed.png. Uses the
Chromium and DevTools plumbing of flame_cdp.py (same directory). Every
action is a real mouse event at the element's position on screen.
Exit status 0, 1 when a step failed, 2 on usage errors.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flame_cdp import (CDPError, FIND_JS, Page, STATE_JS, WIDTH_JS,  # noqa
                       WebSocket, page_target, start_chromium, stop_chromium)

ROWS_JS = r"""
(function () {
  var out = [], trs = document.querySelectorAll('tr.proc');
  for (var i = 0; i < trs.length; i++) {
    var t = trs[i], q = function (c) {
      return t.querySelector('td.' + c).textContent; };
    out.push({pid: +t.getAttribute('data-pid'), command: q('command'),
              python: q('python'), mode: q('mode'), rate: q('rate'),
              samples: +q('samples'), dropped: +q('dropped')});
  }
  return {rows: out, count: document.getElementById('count').textContent};
})()
"""

LINK_JS = r"""
(function (pid) {
  var a = document.querySelector('tr[data-pid="' + pid + '"] a.flamegraph');
  if (!a) return null;
  var r = a.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2,
          href: a.href};
})(%d)
"""

NAMES_JS = r"""
(function () {
  var gs = document.getElementById('frames').children, seen = {}, out = [];
  for (var i = 0; i < gs.length; i++) {
    var n = gs[i].getAttribute('data-n');
    if (n && !seen[n]) { seen[n] = 1; out.push(n); }
  }
  return out;
})()
"""


def click(page, x, y):
    page.mouse("mouseMoved", x, y)
    page.mouse("mousePressed", x, y)
    page.mouse("mouseReleased", x, y)


def wait_ready(page, timeout):
    end = time.time() + timeout
    while page.js("document.documentElement.getAttribute('data-ready')") \
            != "1":
        if time.time() > end:
            raise CDPError("the flame graph's script never finished")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--zoom", required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    os.makedirs(a.shots, exist_ok=True)
    proc, profile, port = start_chromium(900, a.timeout)
    try:
        page = Page(WebSocket(page_target(port, a.timeout), a.timeout))
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1200,
                  height=900, deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url=a.url)
        page.wait_event("Page.loadEventFired", a.timeout)
        st = page.js(ROWS_JS)
        st["action"] = "index"
        print(json.dumps(st), flush=True)
        page.screenshot(os.path.join(a.shots, "index.png"))

        link = page.js(LINK_JS % a.pid)
        if not link:
            raise CDPError("no flame graph link for pid %d" % a.pid)
        click(page, link["x"], link["y"])
        page.wait_event("Page.loadEventFired", a.timeout)
        wait_ready(page, a.timeout)
        st = page.js(STATE_JS)
        st.update(action="flamegraph", url=page.js("location.href"),
                  names=page.js(NAMES_JS), href=link["href"])
        print(json.dumps(st), flush=True)
        page.screenshot(os.path.join(a.shots, "flamegraph.png"))

        f = page.js(FIND_JS % json.dumps(a.zoom))
        if not f:
            raise CDPError("no visible frame named %r" % a.zoom)
        click(page, f["x"], f["y"])
        st = page.js(STATE_JS)
        st.update(action="click", name=a.zoom, width_before=f["width"],
                  width=page.js(WIDTH_JS % f["index"]))
        print(json.dumps(st), flush=True)
        page.screenshot(os.path.join(a.shots, "zoomed.png"))
    except (CDPError, OSError, ValueError) as e:
        sys.stderr.write("http_cdp: %s\n" % e)
        return 1
    finally:
        stop_chromium(proc, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
