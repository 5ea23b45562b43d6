/*
 * sorted.h - searching a sorted array by an integer key: the one binary
 * search of the collector and pyprof (symbols by address, line rows by
 * address, ids in a profile, heap rows by node).
 *
 * The array holds n elements of size bytes, sorted by a key that each
 * element holds at byte offset off (an array of plain integers: size =
 * sizeof(key), off = 0). The key is read with memcpy, so any element
 * type and alignment will do; offsetof() names the field:
 *
 *	size_t i = sorted_upper_u64(f->syms, f->n_syms, sizeof(*f->syms),
 *				    offsetof(struct esym, vaddr), addr);
 *	(i ? &f->syms[i - 1] : NULL) is the last symbol at or below addr
 *
 * Header only, no state: any thread (not used in signal handlers).
 */
#ifndef PYPROF_SORTED_H
#define PYPROF_SORTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The key of element i: width bytes (4 or 8) at offset off. */
static inline uint64_t sorted_key(const void *base, size_t i, size_t size,
				  size_t off, size_t width)
{
	const char *p = (const char *)base + i * size + off;
	if (width == 4) {
		uint32_t k;
		memcpy(&k, p, sizeof(k));
		return k;
	}
	uint64_t k;
	memcpy(&k, p, sizeof(k));
	return k;
}

/* The first index whose key is above key (upper) or at least key (not
 * upper); n when there is none. */
static inline size_t sorted_bound(const void *base, size_t n, size_t size,
				  size_t off, size_t width, uint64_t key,
				  int upper)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k = sorted_key(base, mid, size, off, width);
		if (upper ? k <= key : k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first index whose key is at least key (n when none is). */
static inline size_t sorted_lower_u64(const void *base, size_t n,
				      size_t size, size_t off, uint64_t key)
{
	return sorted_bound(base, n, size, off, sizeof(uint64_t), key, 0);
}

/* The first index whose key is above key: the number of elements at or
 * below it, so that index - 1 is the last one at or below key. */
static inline size_t sorted_upper_u64(const void *base, size_t n,
				      size_t size, size_t off, uint64_t key)
{
	return sorted_bound(base, n, size, off, sizeof(uint64_t), key, 1);
}

/* sorted_lower_u64 for a 32-bit key. */
static inline size_t sorted_lower_u32(const void *base, size_t n,
				      size_t size, size_t off, uint32_t key)
{
	return sorted_bound(base, n, size, off, sizeof(uint32_t), key, 0);
}

#endif /* PYPROF_SORTED_H */
