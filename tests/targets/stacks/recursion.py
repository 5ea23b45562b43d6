# recursion.py - a recursion 800 deep: the whole stack, 802 frames, is in
# every sample of the hot spot (PYPROF_MAX_DEPTH is 1024 by default).
#
# @expect <module> @module_call
# @expect down @down_call x800
# @expect down @down_hot
from _clock import cpu_clock, deadline

DEPTH = 800


def down(n, limit):
    if n:
        return down(n - 1, limit)  # @down_call
    x = 0
    while cpu_clock() < limit:
        for i in range(20000): x = (x * 31 + i) % 1000003  # @down_hot
    return x


down(DEPTH, deadline())  # @module_call
