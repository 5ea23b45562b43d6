"""rusage.py OUT CMD [ARGS...]: runs CMD (stdout and stderr inherited),
then appends "WALL CPU STATUS" to OUT: its wall seconds, and the user +
system CPU seconds of CMD and of every descendant it waited for
(getrusage(RUSAGE_CHILDREN) before and after), so `pyprof record` counts
the program, the library's threads and the collector alike."""
import resource
import subprocess
import sys
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    c0, t0 = children_cpu(), time.perf_counter()
    status = subprocess.call(cmd)
    t1, c1 = time.perf_counter(), children_cpu()
    with open(out, "a") as f:
        f.write("%.6f %.6f %d\n" % (t1 - t0, c1 - c0, status))
    return status


if __name__ == "__main__":
    sys.exit(main())
