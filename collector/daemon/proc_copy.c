/*
 * proc_copy.c - what follows a process's samples besides its own
 * aggregate: the tap (every accepted sample and loss, and each process
 * that goes) and the copies of processes that HTTP windows keep (see
 * proc.h), which outlive the processes and are renumbered by compaction
 * like them. Split from proc.c, whose structs it shares through
 * proc_impl.h.
 *
 * Runs on the collector's loop thread.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dlist.h"
#include "daemon/agg.h"
#include "daemon/proc.h"
#include "daemon/proc_impl.h"
#include "daemon/symtab.h"

/* ---- taps and copies --------------------------------------------------- */

void procs_set_tap(struct procs *reg, const struct procs_tap *tap)
{
	if (tap)
		reg->tap = *tap;
	else
		reg->tap = (struct procs_tap){ 0 };
}

uint64_t proc_last_mono_ns(const struct proc *p)
{
	return p->max_mono_ns;
}

struct proc *proc_copy_new(const struct proc *src)
{
	struct procs *reg = src->reg;
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	idhash_init(&p->thread_hash);
	p->reg = reg;
	p->is_copy = 1;
	p->info = src->info;
	p->info.arg_sids = NULL;
	p->info.n_samples = p->info.n_lost = 0;
	p->info.win_samples = p->info.win_lost = 0;
	p->info.n_waits = p->info.win_waits = 0;
	p->agg = agg_new();
	if (src->info.n_args)
		p->info.arg_sids = malloc(src->info.n_args * sizeof(uint32_t));
	if (!p->agg || (src->info.n_args && !p->info.arg_sids)) {
		agg_free(p->agg);
		free(p->info.arg_sids);
		free(p);
		return NULL;
	}
	if (src->info.n_args)
		memcpy(p->info.arg_sids, src->info.arg_sids,
		       src->info.n_args * sizeof(uint32_t));
	add_refs(p, 3 + p->info.n_args);
	p->heard_unix_ns = src->heard_unix_ns;
	DLIST_PUSH(reg->copies, p);
	reg->n_copies++;
	return p;
}

int proc_copy_add(struct proc *copy, const struct proc *src, uint32_t node,
		  uint32_t thread, uint32_t flags, uint32_t labels,
		  uint64_t count, uint64_t value, uint64_t t_mono_ns)
{
	assert(copy->is_copy && thread >= 1 && thread <= src->n_threads);
	/* Thread numbers only grow in src: copying its table's prefix keeps
	 * them equal in both. */
	if (thread > copy->n_threads) {
		uint32_t n = src->n_threads;
		if ((size_t)n + 1 > copy->threads_cap) {
			size_t cap = (size_t)n + 16;
			struct proc_thread *t =
				realloc(copy->threads, cap * sizeof(*t));
			if (!t)
				return -ENOMEM;
			copy->threads = t;
			copy->threads_cap = cap;
		}
		memcpy(copy->threads + copy->n_threads + 1,
		       src->threads + copy->n_threads + 1,
		       (n - copy->n_threads) * sizeof(*copy->threads));
		add_refs(copy, n - copy->n_threads);
		copy->n_threads = n;
	}
	if (agg_add(copy->agg, node, thread, flags, labels, count, value) < 0)
		return -ENOMEM;
	copy->info.n_samples = sat_add(copy->info.n_samples, count);
	copy->info.win_samples = copy->info.n_samples;
	if (flags & WIRE_SF_WAITS)
		copy->info.n_waits = sat_add(copy->info.n_waits, count);
	copy->info.win_waits = copy->info.n_waits;
	if (t_mono_ns > copy->max_mono_ns)
		copy->max_mono_ns = t_mono_ns;
	return 0;
}

void proc_copy_sync(struct proc *copy, const struct proc *src)
{
	assert(copy->is_copy);
	copy->info.achieved_ns = src->info.achieved_ns;
	copy->info.has_bye = src->info.has_bye;
	copy->info.bye = src->info.bye;
}

void proc_copy_add_lost(struct proc *copy, unsigned reason,
			uint64_t samples, uint64_t value)
{
	assert(copy->is_copy && reason >= 1 && reason <= PROC_LOST_MAX);
	copy->lost_samples[reason] = sat_add(copy->lost_samples[reason],
					     samples);
	copy->lost_value[reason] = sat_add(copy->lost_value[reason], value);
	copy->info.n_lost = sat_add(copy->info.n_lost, samples);
	copy->info.win_lost = copy->info.n_lost;
}
