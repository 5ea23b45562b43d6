/*
 * bytecur.h - the one bounds-checked reader of little-endian bytes: the
 * unwind tables of .eh_frame (preload/native/cfi.c, in the library) and
 * the line tables of .debug_line (collector/symbols/dwarfline.c).
 *
 * A cursor over [p, end). Every read checks its bytes are before end; a
 * read that is not, or any read after one that was not, returns 0 (or
 * "") and leaves the cursor bad, so a parser reads on and checks bad
 * once where a result matters. Integers are little-endian (x86-64 and
 * arm64), LEB128 is leb128.h's.
 *
 * Pure inline functions: no allocation, no libc, no global state, so any
 * thread may use them and so may a signal handler.
 */
#ifndef PYPROF_BYTECUR_H
#define PYPROF_BYTECUR_H

#include <stddef.h>
#include <stdint.h>

#include "pyprof/leb128.h"

struct bytecur {
	const uint8_t *p, *end;
	int bad; /* a read went past end */
};

/* The n-byte (n <= 8) little-endian unsigned integer at the cursor. */
static inline uint64_t bytecur_n(struct bytecur *c, unsigned n)
{
	uint64_t v = 0;
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* Steps over an n-byte LEB128; n 0 (none ended before end) fails the
 * cursor. */
static inline void bytecur_step_leb(struct bytecur *c, size_t n)
{
	if (n) {
		c->p += n;
	} else {
		c->bad = 1;
		c->p = c->end;
	}
}

static inline uint64_t bytecur_uleb(struct bytecur *c)
{
	uint64_t v = 0;
	bytecur_step_leb(c, c->bad ? 0 : leb128_get_u(c->p, c->end, &v));
	return v;
}

static inline int64_t bytecur_sleb(struct bytecur *c)
{
	int64_t v = 0;
	bytecur_step_leb(c, c->bad ? 0 : leb128_get_s(c->p, c->end, &v));
	return v;
}

/* The NUL-terminated string at the cursor ("" and bad if it does not end
 * before end). */
static inline const char *bytecur_str(struct bytecur *c)
{
	const uint8_t *s = c->p;
	while (!c->bad && c->p < c->end && *c->p)
		c->p++;
	if (c->bad || c->p >= c->end) {
		c->bad = 1;
		return "";
	}
	c->p++;
	return (const char *)s;
}

/* Steps over n bytes. */
static inline void bytecur_skip(struct bytecur *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return;
	}
	c->p += n;
}

#endif /* PYPROF_BYTECUR_H */
