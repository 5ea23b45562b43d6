# module_loop.py - a loop at module level: the only frame is "<module>".
#
# @expect <module> @module_hot
from _clock import cpu_clock, deadline

limit = deadline()
x = 0
while cpu_clock() < limit:
    for i in range(20000): x = (x * 31 + i) % 1000003  # @module_hot
