/*
 * heapframe.h - the HEAP frames the agent sends (wire.h): the allocations
 * and frees that heap profiling drained from the sample ring, the sampled
 * allocations the library could not record (LOST records), and the
 * periodic HEAP_SNAPSHOT marks (PYPROF_HEAP_SNAPSHOT_SECONDS).
 *
 * One frame is built at a time and queued on the agent's transport when it
 * is full, when its rate changes or when the agent flushes it after a
 * drain. Agent thread only (or whoever holds the agent's lock: the code
 * object death hook drains too).
 */
#ifndef PYPROF_HEAPFRAME_H
#define PYPROF_HEAPFRAME_H

#include <stdint.h>

#include "base/intern.h"
#include "transport.h"

struct heapframe {
	struct transport *tr;	 /* where frames are queued             */
	const struct intern *in; /* the definitions they refer to       */
	uint8_t *buf;		 /* the frame being built               */
	struct wire_out w;
	int n;					  /* records in it (0: none started)     */
	uint64_t rate;				  /* its rate                            */
	uint64_t allocs, bytes;			  /* its ALLOC records                   */
	unsigned long lost_seen, lost_bytes_seen; /* heap_stats, sent    */
	uint64_t lost_n, lost_bytes;		  /* not sent yet        */
	uint64_t snap_next_ns, snap_seq;
};

/* Allocates the frame buffer. 0 or -ENOMEM. */
int heapframe_init(struct heapframe *h, struct transport *tr,
		   const struct intern *in);
void heapframe_free(struct heapframe *h);

/* A fork child: the parent's frame and counts are the parent's. */
void heapframe_reset(struct heapframe *h);

/* One sampled allocation at rate (its stack node, thread and label set,
 * 0 for none, interned), and one free of a sampled block. */
void heapframe_put_alloc(struct heapframe *h, uint64_t rate, uint32_t node,
			 uint32_t thread, uint64_t size, uint64_t addr,
			 uint32_t labels);
void heapframe_put_free(struct heapframe *h, uint64_t addr);

/* A sampled allocation whose stack could not be interned: counted lost. */
void heapframe_lost(struct heapframe *h, uint64_t size);

/* After a drain: the allocations lost since the last call as a LOST
 * record, then the frame queued. */
void heapframe_flush(struct heapframe *h);

/* Every snapshot_s seconds (0: never), a HEAP_SNAPSHOT frame: everything
 * drained so far is in the stream ahead of it. */
void heapframe_put_snapshot(struct heapframe *h, uint64_t now,
			    int snapshot_s);

#endif /* PYPROF_HEAPFRAME_H */
