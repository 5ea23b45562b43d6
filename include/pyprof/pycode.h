/*
 * pyprof/pycode.h - decoders for what a sample points at: line tables and
 * strings (preload/cpython/pycode.c).
 *
 * A sample names a code object and an instruction offset. Turning that into
 * (function, file, line) needs three decoders that depend on the CPython
 * version: the line table (four formats between 2.7 and 3.13), byte strings
 * (2.7 names, all line tables) and PEP 393 unicode (3.x names). They live
 * here as pure functions: no globals, no allocation, no locks, a bounded
 * amount of stack (under 1 KiB).
 *
 * Callers: the agent thread's symbolizer, pyprof dump reading another
 * process (collector/remote/remote_dump.c), and the tests. They are not
 * called from the signal handler, but nothing in them would forbid it.
 *
 * Everything read from the interpreter is hostile input: a table may be
 * truncated or garbage, an object may be freed and reused under us. The
 * decoders never read past the length they are given, never loop more than
 * once per input byte, and reach interpreter memory only through the
 * caller's reader (guard_copy in the library, memcpy in tests).
 */
#ifndef PYPROF_PYCODE_H
#define PYPROF_PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "pyprof/pyabi.h"

/*
 * Copies n bytes of interpreter memory at src to dst. Returns 0 on
 * success, non-zero if src could not be read. guard_copy() has this shape.
 */
typedef int (*pycode_read_fn)(void *dst, const void *src, size_t n);

/* pycode_read_str decodes at most this many characters of one string. */
#define PYCODE_STR_MAX_CHARS 4096

/*
 * The line of the instruction at byte_offset bytes from the start of the
 * code, from the line table table[0..len) of a code object whose
 * co_firstlineno is firstlineno; lines_kind is the row's
 * enum pyabi_lines_kind. Offsets are always in bytes: the walker turns a
 * 3.10 f_lasti (code units) into bytes by doubling it, and a 3.11+
 * prev_instr/instr_ptr into bytes by subtracting the address of
 * co_code_adaptive.
 *
 * Gives what the interpreter itself would answer (frame.f_lineno without
 * tracing, PyCode_Addr2Line):
 *   - 2.7-3.9 co_lnotab: the line of the last line start <= byte_offset;
 *     never "no line" (an offset past the end keeps the last line);
 *   - 3.10 co_linetable, 3.11+ location table: the line of the entry whose
 *     address range holds byte_offset; -1 when that entry says "no line"
 *     (3.10: line delta -128; 3.11+: code 15) or no entry holds it.
 *
 * Returns the line (>= 0), or -1 for no line, an unknown lines_kind, a
 * NULL table with len > 0, or a result outside 0..INT_MAX. Reads only
 * table[0..len); runs in O(len). Any thread; pure.
 */
int pycode_addr2line(int lines_kind, const uint8_t *table, size_t len,
		     int firstlineno, uint32_t byte_offset);

/*
 * Decodes the string object at str_obj (interpreter memory, read only
 * through read) into out as NUL-terminated UTF-8, per abi->str_kind:
 *   - PYABI_STR_BYTES (2.7 PyStringObject): the bytes as they are (names
 *     and file names are normally ASCII or UTF-8; nothing is validated);
 *   - PYABI_STR_UNICODE (PEP 393): compact ASCII, compact UCS1/2/4 and
 *     non-compact strings (str subclasses, 3.3-3.11 legacy strings), whose
 *     characters live at data.any. Surrogates (U+D800-U+DFFF, e.g. from a
 *     surrogateescape file name) and values past U+10FFFF come out as
 *     U+FFFD, so the output is always valid UTF-8.
 * When out_cap is too small the output stops at the last whole character
 * that fits (never a partial UTF-8 sequence); only the first
 * PYCODE_STR_MAX_CHARS characters are decoded.
 *
 * Returns the number of bytes written before the NUL, or -EFAULT when a
 * read fails or str_obj is NULL, -EINVAL for a NULL abi/read/out, an
 * out_cap of 0, a negative or absurd length, a kind other than 1/2/4, an
 * ASCII flag on a wider kind, or a non-compact string without data (a
 * legacy string never made ready). After an error out holds "" (when
 * out_cap > 0). Any thread; reads the header, then the characters in
 * chunks of 512 bytes.
 */
int pycode_read_str(const struct pyabi *abi, const void *str_obj,
		    int (*read)(void *dst, const void *src, size_t n),
		    char *out, size_t out_cap);

/*
 * Copies the contents of the bytes object at bytes_obj (3.x PyBytesObject,
 * 2.7 PyStringObject: ob_size then ob_sval) into out[0..out_cap); no NUL
 * is added. Used for line tables.
 *
 * Returns the length, -E2BIG if it exceeds out_cap (nothing useful in out),
 * -EINVAL for a negative size or a NULL abi/read, -EFAULT when a read
 * fails or bytes_obj is NULL. Any thread.
 */
int pycode_read_bytes(const struct pyabi *abi, const void *bytes_obj,
		      int (*read)(void *dst, const void *src, size_t n),
		      uint8_t *out, size_t out_cap);

#endif /* PYPROF_PYCODE_H */
