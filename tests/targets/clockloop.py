# clockloop.py SECONDS - one thread reading the wall clock in a loop
# (time.time: clock_gettime, which runs in the kernel's vDSO) for SECONDS,
# between "ready" and "done" (tests/e2e/attach.bats: dump --native names
# the vDSO's frames).
import sys
import time

end = time.time() + float(sys.argv[1])
print("ready", flush=True)
while time.time() < end:
    pass
print("done", flush=True)
