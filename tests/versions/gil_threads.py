# gil_threads.py - the threads gil_embed.c samples (2.7 to 3.13).
#
# gil_embed runs this file inside the embedded interpreter, with two C
# functions in the globals: record(name) remembers the calling thread's
# PyThreadState and OS thread id, and sample(phase) releases the GIL on the
# main thread while a plain C thread asks pyabi_gil_holder who holds it.
#
#   sleeper  records itself, then sleeps in time.sleep through both phases
#            (started first, so that it reaches time.sleep uncontended);
#   busy     records itself, spins holding the GIL until told to stop, then
#            sleeps through the idle phase.
#
# Phase "busy": busy spins, sleeper sleeps. Phase "idle": both sleep.
# sample() itself waits 0.3 s with the GIL released before it samples for
# 0.6 s, so the sleeps below cover both phases with a margin; gil_embed
# checks through /proc that the sleeping threads slept throughout.
import threading
import time

state = {"stop": False}
recorded = set()


def sleeper():
    record("sleeper")
    recorded.add("sleeper")
    time.sleep(3.5)


def busy():
    record("busy")
    recorded.add("busy")
    x = 0
    while not state["stop"]:
        x += 1
    time.sleep(2.0)


def wait_for(name):
    # Polls with a short sleep: the main thread must not spin against busy.
    t0 = time.time()
    while name not in recorded and time.time() - t0 < 10:
        time.sleep(0.01)
    if name not in recorded:
        raise SystemExit("thread %s never started" % name)


s = threading.Thread(target=sleeper, name="sleeper")
s.start()
wait_for("sleeper")
time.sleep(0.05)
b = threading.Thread(target=busy, name="busy")
b.start()
wait_for("busy")
sample("busy")
state["stop"] = True
sample("idle")
b.join()
s.join()
