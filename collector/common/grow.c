/*
 * grow.c - growing a malloc'ed array by doubling (see grow.h).
 *
 * Any thread; not for signal handlers.
 */
#include "common/grow.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int grow_array(void *arr, size_t *cap, size_t need, size_t size,
	       size_t first)
{
	size_t c = *cap ? *cap : (first ? first : 1);
	void *v, *nv;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (size && c > SIZE_MAX / size)
		return -ENOMEM;
	/* The caller's pointer is a T *, read and written as bytes. */
	memcpy(&v, arr, sizeof(v));
	nv = realloc(v, c * size);
	if (!nv)
		return -ENOMEM;
	memcpy(arr, &nv, sizeof(nv));
	*cap = c;
	return 0;
}
