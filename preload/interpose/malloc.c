/*
 * interpose/malloc.c - libc's allocation family as the program sees it
 * (exports.map): each shim is the fast path of heap profiling, inlined
 * (signal/sig_heap.h), and a tail call to glibc's function; the slow
 * paths and the table of sampled blocks are signal/sig_heap.c's.
 *
 * Cost: with heap profiling off (or in a process that is not Python) a
 * load, a predictable branch and a jump to glibc's function; on, malloc
 * adds a thread-local subtract and compare, free a load from the counting
 * filter (sig_heap.c says more).
 *
 * Contexts: every allocation and free of the program, on any thread,
 * possibly inside the program's signal handlers: what sig_heap.c allows
 * (tools/check-sigsafe).
 */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "signal/sig_heap.h"

/* No frame pointer for the shims (see sig_heap.c): a handful of
 * instructions and a tail jump. */
#pragma GCC push_options
#pragma GCC optimize("omit-frame-pointer")

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n)
{
	if (__builtin_expect(heap_sampling_on, 0) && HEAP_TAKE(n))
		return heap_malloc_sampled_sigsafe(n);
	return __libc_malloc(n);
}

EXPORT void *calloc(size_t n, size_t m)
{
	size_t total;
	if (__builtin_expect(heap_sampling_on, 0) &&
	    !__builtin_mul_overflow(n, m, &total) && HEAP_TAKE(total))
		return heap_calloc_sampled_sigsafe(n, m);
	return __libc_calloc(n, m);
}

EXPORT void *realloc(void *old, size_t n)
{
	if (__builtin_expect(heap_on, 0))
		return heap_realloc_counted_sigsafe(old, n);
	return __libc_realloc(old, n);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(heap_on, 0) &&
	    __builtin_expect(heap_maybe_sampled(p), 0))
		heap_free_sampled_sigsafe(p);
	else
		__libc_free(p);
}

EXPORT void *memalign(size_t al, size_t n)
{
	if (__builtin_expect(heap_sampling_on, 0) && HEAP_TAKE(n))
		return heap_memalign_sampled_sigsafe(al, n);
	return __libc_memalign(al, n);
}

/* glibc 2.36's checks, then its memalign (which aligned_alloc and
 * posix_memalign both end in). */
EXPORT void *aligned_alloc(size_t al, size_t n)
{
	if (al == 0 || (al & (al - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return memalign(al, n);
}

EXPORT int posix_memalign(void **out, size_t al, size_t n)
{
	if (al % sizeof(void *) != 0 || al == 0 || (al & (al - 1)))
		return EINVAL;
	int saved = errno;
	void *p = memalign(al, n);
	errno = saved;
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t n)
{
	void *p = __libc_valloc(n);
	if (__builtin_expect(heap_sampling_on, 0))
		heap_count_alloc_sigsafe(p, n);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = __libc_pvalloc(n);
	if (__builtin_expect(heap_sampling_on, 0))
		heap_count_alloc_sigsafe(p, n);
	return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t m)
{
	size_t total;
	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, total);
}

#pragma GCC pop_options
