"""threading_names.py STOPFILE [STATUS] - threads named by threading only,
for `pyprof record --pid` and `dump` read from outside (outside.bats 1.3,
dump_outside.bats), on every version from 2.7: the OS's names are left
as they are ("python3" before 3.14; 3.14+ set them from threading's, cut
to 15 bytes, so these names are longer than that). Three workers asleep
in one function, one of them started through a subclass of Thread and
renamed before it starts. Prints "ready" once all three are in place,
then waits for STOPFILE to exist, stops the threads, prints "done" and
exits with STATUS (default 3)."""

import os
import sys
import threading
import time

STOP = sys.argv[1]
STATUS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
stop = threading.Event()
placed = []


def sleeper():
    placed.append(1)
    while not stop.is_set():
        time.sleep(0.01)  # @sleep


class Worker(threading.Thread):
    def run(self):
        sleeper()


threads = [threading.Thread(target=sleeper, name="threading-name-alpha"),
           threading.Thread(target=sleeper, name="threading-name-beta")]
late = Worker()
late.name = "threading-name-gamma"
threads.append(late)
for t in threads:
    t.start()
while len(placed) < 3:
    time.sleep(0.01)
sys.stdout.write("ready\n")
sys.stdout.flush()
while not os.path.exists(STOP):
    time.sleep(0.02)  # @main
stop.set()
for t in threads:
    t.join()
sys.stdout.write("done\n")
sys.stdout.flush()
sys.exit(STATUS)
