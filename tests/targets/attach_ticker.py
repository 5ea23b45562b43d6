# attach_ticker.py - a main thread that ticks every millisecond, for
# tests/e2e/attach_stall.bats: how long an attach holds it up.
#
# Usage: python attach_ticker.py SECONDS OUT
#   The main thread sleeps 1 ms at a time (time.sleep(0.001)) for SECONDS
#   and notes when each sleep ended (time.monotonic_ns: CLOCK_MONOTONIC,
#   the clock the check shares). An audit hook notes when the interpreter
#   begins a remote-exec script (the event "cpython.remote_debugger_script"
#   of 3.14+, raised on the thread that runs it, before it opens the
#   file): the tick after that is the first one the script let happen.
#   At the end OUT gets "script NS" (or "script -1": none ran), then one
#   tick per line. Prints "ready" once ticking, "done" at the end; the
#   output does not depend on whether pyprof was attached.
import sys
import time


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    mono = time.monotonic_ns
    script = []

    def hook(event, args):
        if event == "cpython.remote_debugger_script" and not script:
            script.append(mono())

    sys.addaudithook(hook)
    ticks = []
    note = ticks.append
    sleep = time.sleep
    end = mono() + int(seconds * 1e9)
    print("ready", flush=True)
    t = mono()
    while t < end:
        sleep(0.001)
        t = mono()
        note(t)
    with open(out, "w") as f:
        f.write("script %d\n" % (script[0] if script else -1))
        f.write("".join("%d\n" % t for t in ticks))
    print("done")


if __name__ == "__main__":
    main()
