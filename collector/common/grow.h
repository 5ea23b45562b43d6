/*
 * grow.h - growing a malloc'ed array by doubling: the one implementation
 * of "make room for one more element" that the views (and any other part
 * of the collector or pyprof) use instead of a realloc dance of their own.
 *
 *	if (grow_array(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 32) < 0)
 *		return -ENOMEM;
 *	t->v[t->n++] = x;
 *
 * Plain memory management, no state: any thread, not signal handlers.
 */
#ifndef PYPROF_GROW_H
#define PYPROF_GROW_H

#include <stddef.h>

/*
 * arr points to the array's pointer (any element type: T **), *cap is its
 * capacity in elements of size bytes. When need > *cap, the capacity
 * doubles, from *cap or first when *cap is 0, until it holds need, and the
 * array is reallocated. Returns 0, or -ENOMEM (overflow, or no memory: the
 * array and *cap are unchanged, and still the caller's to free).
 */
int grow_array(void *arr, size_t *cap, size_t need, size_t size,
	       size_t first);

#endif /* PYPROF_GROW_H */
