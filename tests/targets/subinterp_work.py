"""subinterp_work.py - the code subinterp.py runs, in the main
interpreter (main_work) and in subinterpreters (work). Each call returns
the CPU and wall time it took, by the calling thread's own clocks."""
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def work(n):
    c, w = time.thread_time(), time.perf_counter()
    spin(n)
    return time.thread_time() - c, time.perf_counter() - w


def main_work(n):
    c, w = time.thread_time(), time.perf_counter()
    spin(n)
    return time.thread_time() - c, time.perf_counter() - w
