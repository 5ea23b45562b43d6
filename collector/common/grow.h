/*
 * grow.h - growing an array by doubling, the one way the collector's
 * arrays make room (pprof's tables, id maps, timers, windows...).
 *
 * Header only; any thread (no state; the array's owner decides).
 */
#ifndef PYPROF_GROW_H
#define PYPROF_GROW_H

#include <stdint.h>
#include <stdlib.h>

/*
 * Room for need elements of size bytes in the array v of *cap elements:
 * v itself when need <= *cap, else v realloc'ed to a capacity doubled
 * (from min when 0) until need fits, with *cap updated. NULL when memory
 * or size_t runs out: then v and *cap are as they were. Use:
 *
 *     T *t = grow_array(a->v, &a->cap, a->n + 1, sizeof(*t), 16);
 *     if (!t)
 *             return -ENOMEM;
 *     a->v = t;
 */
static inline void *grow_array(void *v, size_t *cap, size_t need,
			       size_t size, size_t min)
{
	size_t c = *cap ? *cap : min;
	void *nv;

	if (need <= *cap)
		return v;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return NULL;
		c *= 2;
	}
	if (c > SIZE_MAX / size)
		return NULL;
	nv = realloc(v, c * size);
	if (nv)
		*cap = c;
	return nv;
}

#endif /* PYPROF_GROW_H */
