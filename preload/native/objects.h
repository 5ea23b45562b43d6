/*
 * objects.h - the one scan of the process's loaded objects (the main
 * program, its libraries, the vDSO), shared by the mappings table
 * (modules.c), the unwind tables (cfi.c), the interpreter's code
 * (interp_text.c) and the eval function's extent (native.c) so that all
 * see the same objects and the same executable segments.
 *
 * The dynamic loader's list (dl_iterate_phdr) is the source: an object's
 * executable code is each PT_LOAD segment with PF_X and a non-zero size,
 * at the object's load bias plus the segment's address. The loader also
 * counts objects added and removed (dlpi_adds, dlpi_subs): a table built
 * from a scan is current while those counters have not moved.
 *
 * Agent thread and the library's constructor only (dl_iterate_phdr takes
 * the loader's lock: never from a signal handler or a fork child).
 */
#ifndef PYPROF_OBJECTS_H
#define PYPROF_OBJECTS_H

#include <link.h>
#include <stdint.h>

/* The loader's counters of objects loaded and unloaded so far. */
struct objects_gen {
	unsigned long long adds, subs;
};

/* Reads the counters into *g: 0, or -ENOTSUP when the loader does not
 * keep them (then *g is zero and every scan must be taken as new). */
int objects_gen(struct objects_gen *g);

/* 1 if a table built at generation *built is still current (the counters
 * were read, and neither moved since), 0 otherwise. */
int objects_gen_current(const struct objects_gen *built,
			const struct objects_gen *now, int now_rc);

/* One executable segment of a loaded object. */
struct object_seg {
	struct dl_phdr_info *obj; /* the loader's entry for its object */
	int index;		  /* 0 for the object's first such segment */
	uint64_t lo, hi;	  /* its addresses in memory, [lo, hi) */
	uint64_t offset;	  /* the file offset it was mapped from */
};

/* What the callback of objects_scan returns. */
enum {
	OBJECTS_NEXT_SEG = 0,	 /* go on with this object's next segment */
	OBJECTS_NEXT_OBJECT = 1, /* skip the rest of this object */
	OBJECTS_STOP = 2,	 /* end the scan (out of memory...) */
};

/* Calls fn for every executable segment of every loaded object, objects
 * in the loader's order, segments in program-header order; an object with
 * no executable segment is not seen. */
void objects_scan(int (*fn)(const struct object_seg *s, void *arg),
		  void *arg);

/* The loaded object one of whose PT_LOAD segments holds addr: 0 with a
 * copy of the loader's entry in *info (its pointers, program headers and
 * name, stay valid while the object is loaded), or -ENOENT. */
int objects_owner(uint64_t addr, struct dl_phdr_info *info);

#endif /* PYPROF_OBJECTS_H */
