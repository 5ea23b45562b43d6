#!/usr/bin/env python3
"""speedscope_load.py - load a speedscope JSON file in speedscope's own
importer (the npm package's release build) in headless Chromium, as the
package's `speedscope FILE` command does, and report what it shows.

usage: speedscope_load.py SPEEDSCOPE_DIR FILE.json [--screenshot PNG]

SPEEDSCOPE_DIR is the package's dist/release. Like its bin/cli.mjs, this
writes a script calling speedscope.loadFileFromBase64(name, data) and
opens index.html#localProfilePath=SCRIPT. It then waits until the page's
title names a profile (speedscope sets "NAME - speedscope", NAME the
file's "name" field, once the import succeeded; it stays "speedscope"
otherwise) and prints one JSON line: the title and the body text's first
300 characters (the toolbar shows the profile's name, "pid P thread T").
Exit status 0 when a profile was imported, 1 otherwise, 2 on usage.
"""
import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flame_cdp  # noqa: E402  (the same DevTools client)


def main(argv):
    if len(argv) not in (2, 4):
        sys.stderr.write(__doc__)
        return 2
    release, path = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    shot = argv[3] if len(argv) == 4 else None
    name = os.path.basename(path)
    data = base64.b64encode(open(path, "rb").read()).decode()
    fd, script = tempfile.mkstemp(prefix="speedscope-", suffix=".js")
    with os.fdopen(fd, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)"
                % (json.dumps(name), json.dumps(data)))
    proc, profile, port = flame_cdp.start_chromium(800, 30)
    try:
        ws = flame_cdp.WebSocket(flame_cdp.page_target(port, 30), 30)
        page = flame_cdp.Page(ws)
        page.call("Page.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1200,
                  height=800, deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url="file://%s/index.html"
                  "#localProfilePath=%s" % (release, script))
        end = time.time() + 30
        title = ""
        while time.time() < end:
            title = page.js("document.title") or ""
            if title.endswith(" - speedscope"):
                break
            time.sleep(0.2)
        time.sleep(0.5)  # let it paint
        body = page.js("document.body ? document.body.innerText : ''") or ""
        if shot:
            page.screenshot(shot)
        print(json.dumps({"title": title, "body": body[:300]}))
        return 0 if title.endswith(" - speedscope") else 1
    except (flame_cdp.CDPError, OSError, ValueError) as e:
        sys.stderr.write("speedscope_load: %s\n" % e)
        return 1
    finally:
        flame_cdp.stop_chromium(proc, profile)
        os.unlink(script)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
