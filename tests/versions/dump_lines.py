# dump_lines.py - what this interpreter says the line of every instruction is.
#
# Run by tests/versions/linetable.sh with each installed interpreter (2.7 to
# 3.13: keep this file valid Python 2.7 and 3.6). It compiles some large
# standard-library modules plus a synthetic module full of awkward cases,
# walks every code object and its nested ones, and writes, for each one, the
# raw line table and the interpreter's own line for every instruction
# offset. linetable_check.c then asks pycode_addr2line() the same questions.
#
# Two oracles per offset, which must agree or this script fails:
#   - the documented Python API: dis.findlinestarts() (<= 3.9, the line of
#     the last line start <= offset) or co_lines() (3.10+; None -> -1);
#   - PyCode_Addr2Line() itself through ctypes, the function that gives
#     frame.f_lineno.
#
# Output (text, one record per code object):
#   V <major> <minor> <micro>
#   C <firstlineno> <code bytes> <step> <table hex or -> <where>
#   L <line at offset 0> <line at offset step> ...
# where <where> is file:name for messages only.
from __future__ import print_function

import binascii
import ctypes
import dis
import os
import sys
import types

PY3 = sys.version_info[0] >= 3
V = sys.version_info[:2]

STDLIB = os.path.dirname(os.__file__)
MODULES = ["argparse", "typing", "pydoc", "tarfile", "inspect", "collections/__init__"]


def synthetic():
    """Source that stresses the encodings: big line jumps both ways, long
    lines of bytecode, wide columns, multi-line expressions, huge line
    numbers (long varints), loops (backward line deltas)."""
    s = []
    s.append("def jumps(a):")
    s.append("    x = a")
    s.extend([""] * 300)                       # > 255 lines forward
    s.append("    y = x + 1")
    s.extend([""] * 130)                       # > 127 lines forward
    s.append("    for i in range(3):")
    s.append("        y += i")                 # loop: backward deltas
    s.append("    while y > 100:")
    s.append("        y -= 1")
    s.append("    return y")
    s.append("")
    # One line with a lot of bytecode: > 254 bytes and > 8 code units.
    s.append("def long_line(a, b):")
    s.append("    return " + " + ".join("a * %d - b" % i for i in range(120)))
    s.append("")
    # Wide columns (> 127) and an expression spread over lines.
    s.append("def wide(a, b):")
    s.append("    return (" + " " * 300 + "a +")
    s.append("            b" + " " * 200 + "+ a)")
    s.append("")
    s.append("def multi(a):")
    s.append("    return [a,")
    s.append("            a + 1,")
    s.append("")
    s.append("            a + 2][")
    s.append("      0]")
    s.append("")
    s.append("def handlers(a):")
    s.append("    try:")
    s.append("        a = 1 / a")
    s.append("    except ZeroDivisionError:")
    s.append("        a = 0")
    s.append("    finally:")
    s.append("        a = a or 1")
    s.append("    return [x for x in range(a) if x] + list(y for y in (1, 2))")
    s.append("")
    s.append("f = lambda q: (q,")
    s.append("      q)")
    s.append("class K(object):")
    s.append("    def m(self):")
    s.append("        def inner():")
    s.append("            return self")
    s.append("        return inner")
    if PY3:
        s.append("async def coro(a):")
        s.append("    async with a as b:")
        s.append("        await b")
        s.append("    return [c async for c in a]")
        s.append("def gen(a):")
        s.append("    yield from a")
    # Far away: line numbers past 2**16 need long varints and long lnotab
    # runs; a 5000-line gap inside one function.
    s.extend([""] * 70000)
    s.append("def far(a):")
    s.append("    b = a")
    s.extend([""] * 5000)
    s.append("    return b")
    return "\n".join(s) + "\n"


def sources():
    for name in MODULES:
        path = os.path.join(STDLIB, name + ".py")
        if os.path.exists(path):
            with open(path, "rb") as f:
                yield path, f.read()
    yield "<synthetic>", synthetic().encode("ascii")


def varint(v):
    out = []
    while True:
        b = v & 63
        v >>= 6
        if v:
            out.append(b | 64)
        else:
            out.append(b)
            return out


def svarint(v):
    return varint((-v << 1) | 1 if v < 0 else v << 1)


def random_table(rng, code_len, first):
    """A random but well-formed line table for this version, keeping every
    line between 1 and 10**6 so that both oracles and pycode agree on what
    a line is. Exercises what the compiler rarely emits: negative lnotab
    deltas on 3.6/3.7, deltas >= 0x80, runs of -128, every 3.11 entry form
    with large varints, tables shorter or longer than the code."""
    line = first
    out = []
    covered = 0
    target = rng.choice([code_len // 2, code_len, code_len + 40])
    while covered < target:
        if V < (3, 10):
            a = rng.choice([0, 0, 1, 2, 6, 100, 255])
            if V < (3, 6):
                d = rng.choice([0, 1, 7, 0x7f, 0x80, 0xff])
            else:
                d = rng.choice([0, 1, 5, 0x7f, -1, -3, -0x7f, -0x80])
                if not 1 <= line + d <= 10 ** 6:
                    d = min(-d, 0x7f)     # a signed byte: +0x80 does not exist
            line += d
            out += [a, d & 0xff]
            covered += a
        elif V < (3, 11):
            a = rng.choice([0, 2, 4, 6, 20, 254])
            d = rng.choice([0, 1, 3, 127, -1, -127, -128, -128])
            if d != -128 and not 1 <= line + d <= 10 ** 6:
                d = -d
            if d != -128:
                line += d
            out += [a, d & 0xff]
            covered += a
        else:
            units = rng.randint(1, 8)
            code = rng.choice([0, 5, 9, 10, 11, 12, 13, 13, 14, 14, 15, 15])
            out.append(0x80 | code << 3 | (units - 1))
            if code < 10:
                out.append(rng.randint(0, 127))
            elif code < 13:
                line += code - 10
                out += [rng.randint(0, 127), rng.randint(0, 127)]
            elif code < 15:
                d = rng.choice([0, 1, -1, 63, 64, -65, 5000, -5000, 200000])
                if not 1 <= line + d <= 10 ** 6:
                    d = -d
                line += d
                out += svarint(d)
                if code == 14:
                    out += varint(rng.choice([0, 3, 100000]))
                    out += varint(rng.choice([0, 1, 64, 4096]))
                    out += varint(rng.choice([0, 1, 64, 4096]))
            covered += units * 2
    return bytes(bytearray(out))


def with_table(code, table, first):
    if V >= (3, 10):
        return code.replace(co_linetable=table, co_firstlineno=first)
    if V >= (3, 8):
        return code.replace(co_lnotab=table, co_firstlineno=first)
    c = code
    if PY3:
        return types.CodeType(c.co_argcount, c.co_kwonlyargcount, c.co_nlocals,
                              c.co_stacksize, c.co_flags, c.co_code, c.co_consts,
                              c.co_names, c.co_varnames, c.co_filename, c.co_name,
                              first, table, c.co_freevars, c.co_cellvars)
    return types.CodeType(c.co_argcount, c.co_nlocals, c.co_stacksize, c.co_flags,
                          c.co_code, c.co_consts, c.co_names, c.co_varnames,
                          c.co_filename, c.co_name, first, table, c.co_freevars,
                          c.co_cellvars)


def handcrafted(top):
    """The longest code object of the synthetic module, given 200 random
    line tables (fixed seed): the interpreter's own decoders answer for
    them like for any other table."""
    import random
    rng = random.Random(626)
    base = max(walk(top), key=lambda c: len(c.co_code))
    for i in range(200):
        first = rng.choice([1, 300, 70000])
        yield with_table(base, random_table(rng, len(base.co_code), first), first)


def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            for sub in walk(c):
                yield sub


def addr2line_capi():
    try:
        f = ctypes.pythonapi.PyCode_Addr2Line
    except (AttributeError, OSError):
        return None
    f.argtypes = [ctypes.py_object, ctypes.c_int]
    f.restype = ctypes.c_int
    return f


def expected_lines(code, step):
    """The documented API's line for offsets 0, step, ... < len(co_code)."""
    n = len(code.co_code)
    by_offset = [None] * n
    if V >= (3, 10):
        # Ranges do not overlap; an offset no range covers has no line.
        for start, end, ln in code.co_lines():
            for off in range(max(start, 0), min(end, n)):
                if by_offset[off] is None:
                    by_offset[off] = -1 if ln is None else ln
        by_offset = [-1 if x is None else x for x in by_offset]
    else:
        # The line of the last line start <= offset.
        starts = list(dis.findlinestarts(code))
        for i, (addr, ln) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else n
            for off in range(max(addr, 0), min(end, n)):
                by_offset[off] = ln
        if None in by_offset:
            raise SystemExit("dump_lines: offset %d of %r has no line start"
                             % (by_offset.index(None), code))
    return by_offset[::step]


def main():
    capi = addr2line_capi()
    if capi is None:
        raise SystemExit("dump_lines: PyCode_Addr2Line not reachable through ctypes")
    out = sys.stdout
    vi = sys.version_info
    print("V %d %d %d" % (vi[0], vi[1], vi[2]), file=out)
    step = 1 if V < (3, 6) else 2      # wordcode from 3.6
    n_codes = n_offsets = 0
    for path, src in sources():
        top = compile(src, path, "exec", 0, True)  # no __future__ from here
        codes = list(walk(top))
        if path == "<synthetic>":
            codes += list(handcrafted(top))
        for code in codes:
            table = code.co_linetable if V >= (3, 10) else code.co_lnotab
            lines = expected_lines(code, step)
            for i, line in enumerate(lines):
                c = capi(code, i * step)
                if c != line:
                    raise SystemExit(
                        "dump_lines: oracles disagree for %s:%s offset %d: "
                        "API %d, PyCode_Addr2Line %d"
                        % (path, code.co_name, i * step, line, c))
            hexed = binascii.hexlify(table).decode("ascii") or "-"
            print("C %d %d %d %s %s:%s" % (code.co_firstlineno, len(code.co_code),
                                          step, hexed, os.path.basename(path),
                                          code.co_name), file=out)
            print("L " + " ".join(str(x) for x in lines), file=out)
            n_codes += 1
            n_offsets += len(lines)
    sys.stderr.write("dump_lines: %d code objects, %d offsets\n" % (n_codes, n_offsets))


if __name__ == "__main__":
    main()
