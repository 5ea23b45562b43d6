#!/usr/bin/env python3
"""flame_cdp.py - drive a pyprof flame graph SVG in headless Chromium the
way a person would, and report what the page did.

usage: flame_cdp.py SVG [--click NAME] [--hover NAME] [--search REGEX]
                        [--screenshot PNG]... [--timeout S]
                        [--viewport-height PX]

Starts Debian's chromium headless (its own fresh profile directory, remote
debugging on a port it picks, written to DevToolsActivePort), opens the
SVG as a file: URL and talks the Chrome DevTools Protocol over a
WebSocket, written here with the standard library only (RFC 6455 client
framing: masked text frames out, unmasked frames in, fragments joined).

Every action is a real input event at the frame's position on screen:
  --hover NAME   moves the mouse over the widest frame named NAME;
  --click NAME   presses and releases the left button on it;
  --search RE    clicks the "Search" button, answers the prompt() dialog
                 it opens with RE (Page.handleJavaScriptDialog).
After each action the page's state is read from the DOM and printed as one
JSON object per line, e.g.
  {"action": "click", "name": "work", "width": 1180.0, "shown": 12,
   "hidden": 30, "ancestors": 2, "unzoom_visible": true}
  {"action": "search", "matched": "Matched: 91.96%", "highlighted": 3}
  {"action": "hover", "details": "work (app.py:10) | 1.10s, ..."}
--screenshot PNG (repeatable) saves a screenshot after the action before
it, or of the loaded page when it comes first.

Exit status: 0, 1 when the page did not load or an action failed (no
such frame, no dialog), 2 on usage errors. Chromium is always stopped.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class CDPError(Exception):
    pass


class WebSocket:
    """A minimal RFC 6455 client: enough for the DevTools protocol."""

    def __init__(self, url, timeout):
        assert url.startswith("ws://")
        rest = url[5:]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET /%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (path, hostport, key))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CDPError("websocket handshake: connection closed")
            head += chunk
        status, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise CDPError("websocket handshake refused: %r" % status[:80])

    def send(self, text):
        data = text.encode()
        hdr = bytearray([0x81])  # FIN, text
        n = len(data)
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr.append(0x80 | 126)
            hdr += struct.pack(">H", n)
        else:
            hdr.append(0x80 | 127)
            hdr += struct.pack(">Q", n)
        mask = os.urandom(4)
        hdr += mask
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(bytes(hdr) + body)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise CDPError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            op, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if op == 0x8:
                raise CDPError("websocket closed by the browser")
            if op == 0x9:  # ping: answer, keep reading
                continue
            if op in (0x1, 0x2, 0x0):
                parts.append(data)
                if b0 & 0x80:
                    return b"".join(parts).decode()


class Page:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []
        self.replies = []

    def send(self, method, **params):
        """Sends a command and returns its id without waiting."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method,
                                 "params": params}))
        return self.next_id

    def reply(self, my):
        for i, msg in enumerate(self.replies):
            if msg.get("id") == my:
                self.replies.pop(i)
                break
        else:
            while True:
                msg = json.loads(self.ws.recv())
                if msg.get("id") == my:
                    break
                if "method" in msg:
                    self.events.append(msg)
                elif "id" in msg:
                    self.replies.append(msg)
        if "error" in msg:
            raise CDPError("command %d: %s" % (my, msg["error"]))
        return msg.get("result", {})

    def call(self, method, **params):
        return self.reply(self.send(method, **params))

    def wait_event(self, method, timeout):
        end = time.time() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev["method"] == method:
                    return self.events.pop(i)
            if time.time() > end:
                raise CDPError("no %s within %ss" % (method, timeout))
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
            elif "id" in msg:
                self.replies.append(msg)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr,
                      returnByValue=True)
        if "exceptionDetails" in r:
            raise CDPError("script failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def mouse(self, kind, x, y):
        args = dict(type=kind, x=x, y=y, button="left", clickCount=1)
        if kind == "mouseMoved":
            args = dict(type=kind, x=x, y=y)
        self.call("Input.dispatchMouseEvent", **args)

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", format="png")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))


# What the page looks like now, read from its DOM only.
STATE_JS = r"""
(function () {
  var gs = document.getElementById('frames').children, shown = 0, hidden = 0,
      anc = 0, hl = 0;
  for (var i = 0; i < gs.length; i++) {
    if (gs[i].style.display === 'none') hidden++; else shown++;
    if (gs[i].classList.contains('anc')) anc++;
    if (gs[i].children[1].getAttribute('fill') === 'rgb(230,0,230)') hl++;
  }
  var uz = document.getElementById('unzoom');
  return {shown: shown, hidden: hidden, ancestors: anc, highlighted: hl,
          unzoom_visible: !uz.classList.contains('hide'),
          matched: document.getElementById('matched').textContent,
          details: document.getElementById('details').textContent,
          hash: location.hash, scroll_y: window.scrollY,
          view_h: window.innerHeight,
          root_top: gs[0].children[1].getBoundingClientRect().top,
          svg_h: document.documentElement.getBoundingClientRect().height,
          root_name: gs[0].getAttribute('data-n')};
})()
"""

# The centre of the widest visible frame named NAME, and its width.
FIND_JS = r"""
(function (name) {
  var gs = document.getElementById('frames').children, best = null, bw = -1;
  for (var i = 0; i < gs.length; i++) {
    if (gs[i].getAttribute('data-n') !== name) continue;
    if (gs[i].style.display === 'none') continue;
    var w = +gs[i].children[1].getAttribute('width');
    if (w > bw) { bw = w; best = gs[i]; }
  }
  if (!best) return null;
  var r = best.children[1].getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2,
          width: +best.children[1].getAttribute('width'),
          index: Array.prototype.indexOf.call(gs, best)};
})(%s)
"""

WIDTH_JS = r"""
(function (i) {
  return +document.getElementById('frames').children[i].children[1]
    .getAttribute('width');
})(%d)
"""


def start_chromium(svg_h, timeout):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        raise CDPError("chromium is not installed (make test-deps)")
    profile = tempfile.mkdtemp(prefix="pyprof-chromium.")
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--hide-scrollbars",
            "--user-data-dir=" + profile, "--remote-debugging-port=0",
            "--window-size=1200,%d" % max(400, min(svg_h, 4000)),
            "about:blank"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            start_new_session=True)
    port_file = os.path.join(profile, "DevToolsActivePort")
    end = time.time() + timeout
    while not os.path.exists(port_file) or \
            not open(port_file).read().strip():
        if proc.poll() is not None:
            raise CDPError("chromium exited with %s" % proc.returncode)
        if time.time() > end:
            raise CDPError("chromium did not open its debugging port")
        time.sleep(0.05)
    time.sleep(0.1)
    port = int(open(port_file).read().split()[0])
    return proc, profile, port


def stop_chromium(proc, profile):
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # the group we started
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(profile, ignore_errors=True)


def page_target(port, timeout):
    end = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(
                    "http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                targets = json.load(r)
            for t in targets:
                if t.get("type") == "page":
                    return t["webSocketDebuggerUrl"]
        except OSError:
            pass
        if time.time() > end:
            raise CDPError("no page target")
        time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("svg")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--viewport-height", type=int, default=0,
                    help="a browser window this tall (default: the "
                    "whole graph, so that every frame can be clicked)")
    args, rest = ap.parse_known_args()
    actions = []
    i = 0
    while i < len(rest):
        if rest[i] in ("--click", "--hover", "--search", "--screenshot"):
            if i + 1 == len(rest):
                sys.stderr.write("%s needs a value\n" % rest[i])
                return 2
            actions.append((rest[i][2:], rest[i + 1]))
            i += 2
        else:
            sys.stderr.write("unknown argument %s\n" % rest[i])
            return 2
    svg = os.path.abspath(args.svg)
    head = open(svg, encoding="utf-8").read(2000)
    try:
        svg_h = int(head.split('height="', 1)[1].split('"', 1)[0])
    except (IndexError, ValueError):
        svg_h = 800
    proc, profile, port = start_chromium(svg_h, args.timeout)
    try:
        ws = WebSocket(page_target(port, args.timeout), args.timeout)
        page = Page(ws)
        page.call("Page.enable")
        page.call("Runtime.enable")
        # The whole graph in the viewport: events outside it are dropped.
        page.call("Emulation.setDeviceMetricsOverride", width=1200,
                  height=args.viewport_height or max(400, min(svg_h, 4000)),
                  deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url="file://" + svg)
        page.wait_event("Page.loadEventFired", args.timeout)
        end = time.time() + args.timeout
        while page.js("document.documentElement.getAttribute('data-ready')")\
                != "1":
            if time.time() > end:
                raise CDPError("the page's script never finished")
            time.sleep(0.05)
        st = page.js(STATE_JS)
        st["action"] = "load"
        print(json.dumps(st), flush=True)
        for kind, arg in actions:
            if kind == "screenshot":
                page.screenshot(arg)
                print(json.dumps({"action": "screenshot", "path": arg}),
                      flush=True)
                continue
            if kind in ("click", "hover"):
                f = page.js(FIND_JS % json.dumps(arg))
                if not f:
                    raise CDPError("no visible frame named %r" % arg)
                page.mouse("mouseMoved", f["x"], f["y"])
                if kind == "click":
                    page.mouse("mousePressed", f["x"], f["y"])
                    page.mouse("mouseReleased", f["x"], f["y"])
                st = page.js(STATE_JS)
                st.update(action=kind, name=arg,
                          width_before=f["width"],
                          width=page.js(WIDTH_JS % f["index"]))
            elif kind == "search":
                f = page.js("(function(){var r=document.getElementById("
                            "'search').getBoundingClientRect();return {x:"
                            "r.left+r.width/2,y:r.top+r.height/2};})()")
                page.mouse("mouseMoved", f["x"], f["y"])
                page.mouse("mousePressed", f["x"], f["y"])
                # The click (on release) opens prompt(), which blocks the
                # page, and the release's reply, until it is answered.
                rel = page.send("Input.dispatchMouseEvent",
                                type="mouseReleased", x=f["x"], y=f["y"],
                                button="left", clickCount=1)
                ev = page.wait_event("Page.javascriptDialogOpening",
                                     args.timeout)
                page.call("Page.handleJavaScriptDialog", accept=True,
                          promptText=arg)
                page.reply(rel)
                st = page.js(STATE_JS)
                st.update(action="search", regex=arg,
                          dialog=ev["params"].get("type"))
            else:
                raise CDPError("unknown action %s" % kind)
            print(json.dumps(st), flush=True)
    except (CDPError, OSError, ValueError) as e:
        sys.stderr.write("flame_cdp: %s\n" % e)
        return 1
    finally:
        stop_chromium(proc, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
