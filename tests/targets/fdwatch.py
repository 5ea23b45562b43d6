"""fdwatch.py [SECONDS] - watches the descriptor numbers a program would
get next (3 to 5: run with 0, 1 and 2 open and nothing else) for SECONDS
(default 3), as a program that lists its descriptors would see them at any
moment: prints "seen N..." (the numbers ever open) or "seen none", and
how many rounds it probed. Nothing in this program opens a descriptor, so
any number seen open was opened by someone else in the process, if only
for a moment. For unseen.bats (2.7 and 3.x)."""
import os
import sys
import time

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
seen = set()
end = time.time() + secs
n = 0
while time.time() < end:
    for fd in (3, 4, 5):
        try:
            os.fstat(fd)
            seen.add(fd)
        except OSError:
            pass
    n += 1
print("seen %s probes %d" % (" ".join(map(str, sorted(seen))) or "none", n))
