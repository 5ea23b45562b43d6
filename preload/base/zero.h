/*
 * zero.h - a large table emptied without touching its pages.
 *
 * In a fork child, memset on a table of the parent's copies every page it
 * touches (or allocates a fresh zeroed one): a 384 KiB table is 96 page
 * faults, about 2 ms on a virtual machine, before the program's fork()
 * returns. zero_pages gives the whole pages back instead
 * (MADV_DONTNEED: private anonymous memory, as a library's .bss beyond
 * its file-backed page, reads as zeros again and costs nothing until it
 * is written) and writes only the partial pages at either end.
 * Not for memory mapped from a file (its pages would come back from the
 * file) nor for shared memory. Pages of 4 KiB assumed (x86-64): on a
 * larger page the range is not aligned, madvise refuses it, and memset
 * does the work. Async-signal-safe (a fork child of a threaded program
 * may call nothing else).
 */
#ifndef PYPROF_BASE_ZERO_H
#define PYPROF_BASE_ZERO_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

static inline void zero_pages(void *p, size_t n)
{
	const uintptr_t pg = 4096;
	uintptr_t a = (uintptr_t)p, e = a + n;
	uintptr_t pa = (a + pg - 1) & ~(pg - 1), pe = e & ~(pg - 1);
	if (pe <= pa || madvise((void *)pa, pe - pa, MADV_DONTNEED) != 0) {
		memset(p, 0, n);
		return;
	}
	memset(p, 0, pa - a);
	memset((void *)pe, 0, e - pe);
}

#endif
