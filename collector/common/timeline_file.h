/*
 * timeline_file.h - the timeline file, the time-ordered sample stream that
 * pprof cannot hold: what `pyprof-collector --timeline FILE` keeps in
 * memory and writes at shutdown, and what `pyprof convert --timeline
 * FILE` reads back to export speedscope profiles with samples in time
 * order per thread.
 *
 * A timeline goes with one profile, the --output profile written by the
 * same collector at the same shutdown: its stacks are lists of that
 * profile's Location ids, so names, files and lines live only in the
 * profile. (Therefore --timeline needs --output, and is not offered with
 * --period, whose windows reset what the profile holds.)
 *
 * File format, version 1. All integers are unsigned LEB128 varints as in
 * wire.h, except where zigzag-encoded (z: 0, -1, 1, -2... as 0, 1, 2,
 * 3...):
 *
 *     "PYPROFTL"          8 bytes of magic
 *     version             1
 *     profile_time_nanos  the paired profile's time_nanos (a check)
 *     n_stacks
 *     n_stacks times:     depth, then depth Location ids, leaf first
 *     n_records
 *     n_records times:    stack index (0-based), pid, tid,
 *                         z(time - previous record's time) in Unix ns
 *                         (the first record's "previous" is 0),
 *                         count, value, flags (wire.h's WIRE_SF_* bits;
 *                         WIRE_SF_TRUNCATED means a "[truncated]" frame
 *                         goes above the root, as in the profile; with
 *                         WIRE_SF_OPCODE, bits 16..23 are the opcode,
 *                         as in agg.h)
 *     n_dropped           records not kept (past the memory cap)
 *
 * Records are in the order the collector received them: per thread that
 * is time order; across threads and processes, batches interleave, hence
 * the signed time deltas. Worked example, one stack (locations 3, 1) and
 * one record (pid 7, tid 7, time 1000 ns, count 1, value 10000000):
 *
 *     50 59 50 52 4f 46 54 4c  "PYPROFTL"
 *     01 00                    version 1, profile_time_nanos 0
 *     01 02 03 01              1 stack: depth 2, locations 3, 1
 *     01                       1 record:
 *     00 07 07 d0 0f 01        stack 0, pid 7, tid 7, z(+1000), count 1
 *     80 ad e2 04 00 00        value 10000000, flags 0; n_dropped 0
 *
 * This header is the format and its reader, shared by both programs:
 * daemon/timeline.h records and writes (the collector), the pyprof
 * command reads (single-threaded) with timeline_read.
 */
#ifndef PYPROF_TIMELINE_FILE_H
#define PYPROF_TIMELINE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "common/errbuf.h"

#define TIMELINE_MAGIC "PYPROFTL"
#define TIMELINE_MAGIC_LEN 8
#define TIMELINE_VERSION 1

/* ---- reader side ------------------------------------------------------------ */

struct timeline_rec {
	uint32_t stack;
	uint32_t flags;
	uint64_t pid, tid;
	int64_t time_ns;
	int64_t count, value;
};

struct timeline_data {
	int64_t profile_time_nanos;
	size_t n_stacks;
	const uint64_t *locs;	   /* every stack's location ids */
	const size_t *stack_first; /* stack i is locs[first[i]..+len[i]) */
	const uint32_t *stack_len;
	size_t n_records;
	const struct timeline_rec *recs;
	uint64_t n_dropped;
};

/* Reads and checks a timeline file (every stack index in range, nothing
 * left over). *out is the caller's to free with timeline_data_free.
 * 0, -EINVAL (err says why), -ENOMEM, or -errno of reading. */
int timeline_read(const char *path, struct timeline_data **out, char *err);
int timeline_parse(const void *data, size_t len, struct timeline_data **out,
		   char *err);
void timeline_data_free(struct timeline_data *d);

#endif /* PYPROF_TIMELINE_FILE_H */
