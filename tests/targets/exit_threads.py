# exit_threads.py - threads that start and end as the interpreter
# finalizes (exit.bats): six workers started at once, joined or not
# (argument "join"), then one daemon thread started just before the end,
# so the library sees new threads (and its names thread wakes to name
# them) while the main thread runs Py_FinalizeEx.
# Usage: python exit_threads.py [join]
import sys
import threading


def work(n):
    x = 0
    for i in range(2000 * n):
        x += i
    return x


workers = [threading.Thread(target=work, args=(i + 1,), name="w%d" % i)
           for i in range(6)]
for t in workers:
    t.start()
if sys.argv[1:] == ["join"]:
    for t in workers:
        t.join()
late = threading.Thread(target=work, args=(50,), name="late")
late.daemon = True
late.start()
