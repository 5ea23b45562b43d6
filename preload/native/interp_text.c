/*
 * interp_text.c - see interp_text.h. The table is written once by the
 * constructor, before any timer exists, and only read afterwards (in
 * signal context too).
 */
#include "interp_text.h"

#include <errno.h>
#include <link.h>
#include <string.h>

#include "objects.h"

#define MAPS_MAX 16

static struct {
	uintptr_t lo, hi;
} ranges[MAPS_MAX];
static int n_ranges;

struct scan {
	uintptr_t py_bias; /* load bias of the object that holds libpython */
	int n_objects;	   /* objects seen so far */
};

/* The executable segments of libpython's object and of the main
 * program (the first object listed). */
static int collect(const struct object_seg *seg, void *arg)
{
	struct scan *s = arg;
	if (seg->index == 0)
		s->n_objects++;
	if (s->n_objects > 1 && seg->obj->dlpi_addr != s->py_bias)
		return OBJECTS_NEXT_OBJECT;
	if (n_ranges == MAPS_MAX)
		return OBJECTS_STOP;
	ranges[n_ranges].lo = (uintptr_t)seg->lo;
	ranges[n_ranges].hi = (uintptr_t)seg->hi;
	n_ranges++;
	return OBJECTS_NEXT_SEG;
}

int interp_text_init(const void *py_symbol)
{
	struct dl_phdr_info py;
	n_ranges = 0;
	if (objects_owner((uintptr_t)py_symbol, &py) < 0)
		return -ENOENT;
	struct scan s = { py.dlpi_addr, 0 };
	objects_scan(collect, &s);
	return n_ranges ? 0 : -ENOENT;
}

int interp_text_contains_sigsafe(uintptr_t pc)
{
	if (!n_ranges)
		return -1;
	for (int i = 0; i < n_ranges; i++)
		if (pc >= ranges[i].lo && pc < ranges[i].hi)
			return 1;
	return 0;
}
