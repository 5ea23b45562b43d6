/*
 * leb128.h - the one LEB128 reader: the wire protocol's varints (wire.h),
 * DWARF's ULEB128/SLEB128 in .eh_frame (preload/native/cfi.c, the
 * collector's elfsym.c) and in .debug_line (dwarfline.c).
 *
 * Seven value bits a byte, least significant group first, the top bit set
 * on every byte but the last; SLEB128 sign-extends from bit 6 of the last
 * byte. Example: e5 8e 26 is 0x26 << 14 | 0x0e << 7 | 0x65 = 624485;
 * as SLEB128, 7f is -1 and 80 7f is -128.
 *
 * Pure functions over [p, end): no allocation, no libc, no global state,
 * so any thread may use them and so may a signal handler. They read no
 * byte at or past end. A value wider than 64 bits keeps its low 64 bits;
 * a reader that must refuse such encodings (the wire protocol does) asks
 * leb128_fits_u64.
 */
#ifndef PYPROF_LEB128_H
#define PYPROF_LEB128_H

#include <stddef.h>
#include <stdint.h>

/* The longest encoding of a 64-bit value. */
#define LEB128_MAX_U64 10

/* Decodes the unsigned LEB128 at p into *v and returns its length in
 * bytes, or returns 0 (*v = 0) if its last byte is not before end. */
static inline size_t leb128_get_u(const uint8_t *p, const uint8_t *end,
				  uint64_t *v)
{
	uint64_t x = 0;
	for (size_t n = 0, shift = 0; p + n < end; n++, shift += 7) {
		uint8_t b = p[n];
		if (shift < 64)
			x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return n + 1;
		}
	}
	*v = 0;
	return 0;
}

/* The same for a signed LEB128. */
static inline size_t leb128_get_s(const uint8_t *p, const uint8_t *end,
				  int64_t *v)
{
	int64_t x = 0;
	for (size_t n = 0, shift = 0; p + n < end; n++, shift += 7) {
		uint8_t b = p[n];
		if (shift < 64)
			x |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		if (!(b & 0x80)) {
			shift += 7;
			/* ones above the sign bit (unsigned: -(1 << 63)
			 * would overflow) */
			if (shift < 64 && (b & 0x40))
				x |= (int64_t)(~(uint64_t)0 << shift);
			*v = x;
			return n + 1;
		}
	}
	*v = 0;
	return 0;
}

/* Whether the n-byte unsigned LEB128 at p (as leb128_get_u measured it)
 * is at most LEB128_MAX_U64 bytes and lost no bit to the 64-bit value. */
static inline int leb128_fits_u64(const uint8_t *p, size_t n)
{
	return n < LEB128_MAX_U64 || (n == LEB128_MAX_U64 && p[n - 1] <= 1);
}

#endif /* PYPROF_LEB128_H */
