/*
 * timeline.h - the collector's side of `pyprof-collector --timeline FILE`:
 * every sample in arrival order, kept in memory and written at shutdown
 * in the format common/timeline_file.h describes (which the pyprof
 * command reads back).
 *
 * Collector side: timeline_add runs on the collector's loop thread for
 * every SAMPLES record (one append, amortised O(1)); memory is 40 bytes a
 * record, capped at TIMELINE_MAX_RECORDS (past it records are counted as
 * dropped).
 */
#ifndef PYPROF_TIMELINE_H
#define PYPROF_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "common/timeline_file.h"

#define TIMELINE_MAX_RECORDS (8u << 20) /* 320 MiB of records */

struct symtab;

/* ---- collector side ------------------------------------------------------ */

struct timeline;

/* An empty timeline keeping at most max_records (0: the default cap), or
 * NULL (ENOMEM). */
struct timeline *timeline_new(size_t max_records);
void timeline_free(struct timeline *tl);

/* Appends one record: node is the collector-wide leaf node id (symtab.h),
 * time in Unix ns. Past the cap, or when memory runs out, the record is
 * counted as dropped instead. */
void timeline_add(struct timeline *tl, uint32_t node, uint64_t pid,
		  uint64_t tid, uint64_t unix_ns, uint32_t flags,
		  uint64_t count, uint64_t value);
size_t timeline_len(const struct timeline *tl);
uint64_t timeline_dropped(const struct timeline *tl);

/* Writes the file (atomically, fileio.h) for the profile whose
 * time_nanos is profile_time_nanos: each record's node is turned into
 * the profile's Location ids with loc_map (symtab location id -> pprof
 * Location id, n_map entries; what pprof_build hands back). The nodes
 * must still be valid in st. Records whose stack has a location the map
 * lacks (a process the profile left out, for its other mode) are not
 * written and count as dropped. 0, -ENOMEM, -EINVAL (a node not in st) or
 * the write's negative errno. */
int timeline_write(const struct timeline *tl, const struct symtab *st,
		   const uint32_t *loc_map, size_t n_map,
		   int64_t profile_time_nanos, const char *path);

#endif /* PYPROF_TIMELINE_H */
