# tclock.py - clocks the thread targets measure themselves with
# (imported by threads_cpu.py, rates.py and the other thread targets; not
# a program).
#
# thread_cpu(): the calling thread's CPU time in seconds, the clock a
#   per-thread CPU timer samples. time.thread_time on 3.7+; before that
#   (2.7, 3.6) clock_gettime(CLOCK_THREAD_CPUTIME_ID) called through ctypes,
#   the same kernel clock time.thread_time reads.
# thread_user_cpu(): the calling thread's user-mode CPU time
#   (getrusage(RUSAGE_THREAD) through ctypes).
# process_cpu(): the whole process's user + system CPU time as the kernel
#   reports it, getrusage(RUSAGE_SELF) (every thread, live or ended).
# c_work_nogil(): returns (description, fn): fn() spends tens of
#   milliseconds in C with the GIL released. hashlib.sha256 over 4 MiB
#   where hashlib is OpenSSL's (it releases the GIL past 2 KiB); else
#   zlib.compress over 1 MiB: pyenv's 2.7 and 3.6 here are built without
#   OpenSSL's _hashlib, and their builtin _sha256 keeps the GIL.
#
# Runs on Python 2.7 and 3.6+.
import ctypes
import hashlib
import os
import resource
import time
import zlib

CLOCK_THREAD_CPUTIME_ID = 3


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


# The program's own namespace, which has libc: ctypes.util.find_library
# would run ldconfig in a subprocess, a fork() the tests do not ask for.
_libc = ctypes.CDLL(None, use_errno=True)


def _thread_cpu_ctypes():
    ts = _Timespec()
    if _libc.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ctypes.byref(ts)) != 0:
        raise OSError(ctypes.get_errno(), "clock_gettime")
    return ts.tv_sec + ts.tv_nsec * 1e-9


try:
    thread_cpu = time.thread_time
    THREAD_CLOCK = "time.thread_time"
except AttributeError:
    thread_cpu = _thread_cpu_ctypes
    THREAD_CLOCK = "clock_gettime(CLOCK_THREAD_CPUTIME_ID) via ctypes"


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Rusage(ctypes.Structure):
    _fields_ = [("ru_utime", _Timeval), ("ru_stime", _Timeval),
                ("ru_rest", ctypes.c_long * 14)]


RUSAGE_THREAD = 1


def thread_user_cpu():
    """The calling thread's CPU time in user mode (getrusage RUSAGE_THREAD:
    the kernel splits the thread's exact CPU time between user and system
    in the proportion its ticks saw). What perf_event counters of user time
    measure."""
    ru = _Rusage()
    if _libc.getrusage(RUSAGE_THREAD, ctypes.byref(ru)) != 0:
        raise OSError(ctypes.get_errno(), "getrusage")
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6


def process_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def library_cpu():
    """CPU seconds of this process's threads named pyprof-* (the
    profiler's own: its agent and sampler threads, in the process's
    getrusage but no program's work), from /proc, in clock ticks."""
    import os
    total = 0
    tick = float(os.sysconf("SC_CLK_TCK"))
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if not f.read().startswith("pyprof"):
                    continue
            with open("/proc/self/task/%s/stat" % tid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / tick


def process_user_cpu():
    """The process's CPU time in user mode only (what perf_event counters
    of user time measure)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def libc():
    return _libc


def c_work_nogil():
    try:
        import _hashlib  # noqa: F401  (OpenSSL's)
        blob = os.urandom(4 << 20)
        return ("hashlib.sha256 (OpenSSL), 4 MiB",
                lambda: hashlib.sha256(blob).digest())
    except ImportError:
        blob = os.urandom(1 << 19) + b"pyprof threads " * 35000
        return ("zlib.compress, 1 MiB", lambda: zlib.compress(blob, 6))
