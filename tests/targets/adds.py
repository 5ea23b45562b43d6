# adds.py - a loop that does nothing but add, for the opcode view
# (tests/e2e/views.bats): profiled with PYPROF_OPCODES=1, the add opcode
# (BINARY_ADD up to 3.10, BINARY_OP or a specialization of it such as
# BINARY_OP_ADD_INT from 3.11) must be the most sampled opcode.
#
# The operands are 3000-digit integers, so each addition costs far more
# than the loop's other instructions (FOR_ITER, STORE_FAST, LOAD_FAST):
# the add's share of the samples is large on every version, not a close
# call.
#
# Usage: python adds.py [CPU_SECONDS]   (default 1)
# Runs on Python 2.7 and 3.6+.
import sys
import time

try:
    cpu_clock = time.process_time
except AttributeError:
    cpu_clock = time.clock


def add_loop(seconds):
    x = 7 ** 3500
    y = 0
    end = cpu_clock() + seconds
    while cpu_clock() < end:
        for _ in range(2000):
            y = x + x
    return y


if __name__ == "__main__":
    add_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
