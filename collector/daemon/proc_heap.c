/*
 * proc_heap.c - a process's heap profile (HEAP and HEAP_SNAPSHOT frames,
 * see proc.h): records checked whole then applied to its heapagg, and
 * the snapshots a process asks for. Split from proc.c, whose structs it
 * shares through proc_impl.h.
 *
 * Runs on the collector's loop thread.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/heapagg.h"
#include "daemon/proc.h"
#include "daemon/proc_impl.h"

/* ---- heap profiles ------------------------------------------------------ */

int proc_check_heap(const struct proc_session *s,
		    const struct proc_heap_rec *recs, size_t n,
		    uint64_t first_index, char *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct proc_heap_rec *r = &recs[i];
		const char *why = NULL;
		switch (r->kind) {
		case WIRE_HEAP_ALLOC:
		case WIRE_HEAP_ALLOC_LABELS:
			if (r->node - 1 >= s->nodes.n)
				why = "node is not a defined node";
			else if (r->thread - 1 >= s->threads.n)
				why = "thread is not a defined thread ref";
			else if (r->size == 0 || r->size > INT64_MAX)
				why = "size out of range";
			else if (r->addr == 0)
				why = "address 0";
			else if (r->kind == WIRE_HEAP_ALLOC_LABELS &&
				 r->labels - 1 >= s->labels.n)
				why = "labels is not a defined label set";
			break;
		case WIRE_HEAP_FREE:
			if (r->addr == 0)
				why = "address 0";
			break;
		case WIRE_HEAP_LOST:
			if (r->n > INT64_MAX || r->bytes > INT64_MAX)
				why = "count out of range";
			break;
		default:
			why = "unknown record kind";
		}
		if (!why)
			continue;
		snprintf(err, ERR_LEN,
			 "HEAP record %" PRIu64 " (kind %" PRIu64 "): %s",
			 first_index + i, r->kind, why);
		return -EPROTO;
	}
	return 0;
}

int proc_add_heap(struct proc_session *s, uint64_t rate,
		  const struct proc_heap_rec *recs, size_t n, char *err)
{
	struct proc *p = s->proc;
	uint64_t now = now_unix_ns();

	if (!p->heap) {
		if (!(p->heap = heapagg_new()))
			return oom(err);
		p->reg->heap_peak.n_procs++;
	}
	/* the frame's records happened within the library's last tick or
	 * so (20 ms): now is their time, for the peak's */
	heapagg_set_now(p->heap, now);
	for (size_t i = 0; i < n; i++) {
		const struct proc_heap_rec *r = &recs[i];
		if (r->kind == WIRE_HEAP_ALLOC ||
		    r->kind == WIRE_HEAP_ALLOC_LABELS) {
			assert(r->node - 1 < s->nodes.n &&
			       r->labels <= s->labels.n);
			int rc = heapagg_alloc(p->heap, rate,
					       s->nodes.v[r->node],
					       r->labels ? s->labels.v[r->labels]
							 : 0,
					       r->size, r->addr);
			if (rc < 0)
				return oom(err);
			if (rc == 1 && heapagg_n_over(p->heap) == 1)
				log_warn("pid %" PRIu64 ": %u sampled heap "
					 "blocks in use, the most kept per "
					 "process: further allocations are "
					 "counted as lost",
					 p->info.pid,
					 HEAPAGG_LIVE_MAX);
		} else if (r->kind == WIRE_HEAP_FREE) {
			heapagg_release(p->heap, r->addr);
		} else {
			heapagg_lost(p->heap, rate, r->n, r->bytes);
		}
	}
	p->heard_unix_ns = now;
	struct heapagg_peak hp = heapagg_life_peak(p->heap);
	struct procs_heap_peak *best = &p->reg->heap_peak;
	if (hp.bytes > best->bytes) {
		best->bytes = hp.bytes;
		best->unix_ns = hp.unix_ns;
		best->pid = p->info.pid;
		best->start_unix_ns = p->info.start_unix_ns;
	}
	return 0;
}

int procs_heap_peak(const struct procs *reg, struct procs_heap_peak *out)
{
	if (!reg->heap_peak.n_procs)
		return 0;
	*out = reg->heap_peak;
	return 1;
}

int proc_heap_snapshot(struct proc_session *s, uint64_t seq, char *err)
{
	struct proc *p = s->proc;
	uint64_t now = now_mono_ns();
	const char *skip = NULL;

	if (seq == 0) {
		snprintf(err, ERR_LEN, "HEAP_SNAPSHOT with seq 0");
		return -EPROTO;
	}
	/* Each snapshot is a file written and synced: a client asking
	 * faster than the library ever does (once a second at most), or
	 * for a heap it never sent, gets none. */
	if (!heapagg_has_data(p->heap))
		skip = "it sent no heap data";
	else if (p->snap_last_ns && now - p->snap_last_ns < PROC_SNAP_MIN_NS)
		skip = "less than " PROC_SNAP_MIN_TEXT " after the last one";
	if (skip) {
		if (p->n_snap_skipped++ == 0)
			log_info("pid %" PRIu64 ": heap snapshot %" PRIu64
				 " not written: %s (further ones skipped "
				 "likewise)",
				 p->info.pid, seq, skip);
		else
			log_debug("pid %" PRIu64 ": heap snapshot %" PRIu64
				  " not written: %s",
				  p->info.pid, seq, skip);
		return 0;
	}
	if (!p->snap_seq)
		p->reg->n_snap_pending++;
	p->snap_seq = seq;
	p->snap_last_ns = now;
	return 0;
}

struct proc *procs_next_snapshot(struct procs *reg, uint64_t *seq)
{
	if (!reg->n_snap_pending)
		return NULL;
	for (struct proc *p = reg->head; p; p = p->next) {
		if (!p->snap_seq)
			continue;
		*seq = p->snap_seq;
		p->snap_seq = 0;
		reg->n_snap_pending--;
		return p;
	}
	return NULL;
}

const struct heapagg *proc_heap(const struct proc *p)
{
	return p->heap;
}
