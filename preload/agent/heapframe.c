/*
 * heapframe.c - see heapframe.h. Agent thread (or the agent's lock held).
 */
#include "heapframe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample/heap.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"
#include "signal/sig_heap.h"

#define HEAPFRAME_CAP (64u << 10)

int heapframe_init(struct heapframe *h, struct transport *tr,
		   const struct intern *in)
{
	memset(h, 0, sizeof *h);
	h->tr = tr;
	h->in = in;
	h->buf = malloc(HEAPFRAME_CAP + WIRE_HDR_LEN + 64);
	return h->buf ? 0 : -ENOMEM;
}

void heapframe_free(struct heapframe *h)
{
	free(h->buf);
	h->buf = NULL;
}

void heapframe_reset(struct heapframe *h)
{
	h->n = 0;
	h->allocs = h->bytes = 0;
	h->lost_seen = h->lost_bytes_seen = 0;
	h->lost_n = h->lost_bytes = 0;
	h->snap_next_ns = h->snap_seq = 0;
}

/* Ends the frame under construction and queues it; if there is no room,
 * its allocations are counted lost (its frees are lost too: those blocks
 * stay in use in the collector's view; the transport drops data only
 * after 16 MiB of backlog, a collector gone for long). */
static void queue(struct heapframe *h)
{
	if (!h->n)
		return;
	if (transport_put_frame(h->tr, h->in, h->buf, &h->w, WIRE_HEAP) < 0) {
		h->lost_n += h->allocs;
		h->lost_bytes += h->bytes;
	}
	h->n = 0;
	h->allocs = h->bytes = 0;
}

/* Writes rec in the frame; rate is the one its allocations were sampled
 * at (0: any, for FREE): a frame has one rate, so a new rate (a command
 * changed it) starts a new frame. */
static void record(struct heapframe *h, const struct wire_heap_rec *rec,
		   uint64_t rate)
{
	if (h->n && ((size_t)(h->w.end - h->w.p) < 64 ||
		     (rate && rate != h->rate)))
		queue(h);
	if (!h->n) {
		h->w = wire_tagged_begin(h->buf, WIRE_HDR_LEN + HEAPFRAME_CAP);
		h->rate = rate ? rate
			       : __atomic_load_n(&heap_sampling_rate,
						 __ATOMIC_RELAXED);
		wire_put_heap_lead(&h->w, h->rate);
	}
	h->n++;
	wire_put_heap_rec(&h->w, rec);
}

void heapframe_put_alloc(struct heapframe *h, uint64_t rate, uint32_t node,
			 uint32_t thread, uint64_t size, uint64_t addr,
			 uint32_t labels)
{
	struct wire_heap_rec rec = {
		.kind = labels ? WIRE_HEAP_ALLOC_LABELS : WIRE_HEAP_ALLOC,
		.node = node,
		.thread = thread,
		.size = size,
		.addr = addr,
		.labels = labels,
	};
	record(h, &rec, rate);
	h->allocs++;
	h->bytes += size;
}

void heapframe_put_free(struct heapframe *h, uint64_t addr)
{
	struct wire_heap_rec rec = { .kind = WIRE_HEAP_FREE, .addr = addr };
	record(h, &rec, 0);
}

void heapframe_lost(struct heapframe *h, uint64_t size)
{
	h->lost_n++;
	h->lost_bytes += size;
}

/* Sampled allocations the library could not record, as a LOST record. */
static void put_lost(struct heapframe *h)
{
	unsigned long n = __atomic_load_n(&heap_stats.n_lost,
					  __ATOMIC_RELAXED);
	unsigned long b = __atomic_load_n(&heap_stats.lost_bytes,
					  __ATOMIC_RELAXED);
	h->lost_n += n - h->lost_seen;
	h->lost_bytes += b - h->lost_bytes_seen;
	h->lost_seen = n;
	h->lost_bytes_seen = b;
	if (!h->lost_n)
		return;
	struct wire_heap_rec rec = { .kind = WIRE_HEAP_LOST,
				     .n = h->lost_n,
				     .bytes = h->lost_bytes };
	record(h, &rec, 0);
	h->lost_n = h->lost_bytes = 0;
}

void heapframe_flush(struct heapframe *h)
{
	put_lost(h);
	queue(h);
}

void heapframe_put_snapshot(struct heapframe *h, uint64_t now,
			    int snapshot_s)
{
	if (!snapshot_s || !heap_on)
		return;
	uint64_t period = (uint64_t)snapshot_s * 1000000000ull;
	if (!h->snap_next_ns) {
		h->snap_next_ns = now + period;
		return;
	}
	if (now < h->snap_next_ns)
		return;
	h->snap_next_ns = now + period;
	if (!heap_stats.n_sampled && !heap_stats.n_lost)
		return; /* never sampled (dormant): nothing to write */
	uint8_t buf[32];
	struct wire_out w = wire_tagged_begin(buf, sizeof buf);
	wire_put_heap_snapshot(&w, &(struct wire_heap_snapshot){ ++h->snap_seq });
	transport_put_frame(h->tr, NULL, buf, &w, WIRE_HEAP_SNAPSHOT);
}
