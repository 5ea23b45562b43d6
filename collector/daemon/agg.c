/*
 * agg.c - the per-process aggregate (see agg.h).
 *
 * An open-addressed table of struct agg_entry (32 bytes, two per cache
 * line) with linear probing, capacity a power of two, kept at most half
 * full; node == 0 marks an empty slot. A sampled program repeats a small
 * set of stacks, so the table stays small and hot in cache, and the same
 * key often arrives several times in a row: agg_add checks the slot it
 * hit last before hashing.
 *
 * Workload: one lookup per sample record, > 1M/s; growth is rare
 * (doubling) and happens only when a new key arrives.
 */
#include "daemon/agg.h"
#include "common/arith.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#define AGG_INIT_CAP 256
/* An entry agg_renumber has still to move: a bit of flags no key uses
 * (agg.h), so that the entry stays 32 bytes. */
#define AGG_MOVING (1u << 31)

struct agg {
	struct agg_entry *slots;
	size_t cap; /* power of two */
	size_t n;
	size_t last; /* slot of the last key added, a one-entry cache */
	uint64_t total_count, total_value;
};

static inline size_t key_hash(uint32_t node, uint32_t thread, uint32_t flags,
			      uint32_t labels)
{
	uint64_t x = (uint64_t)node | (uint64_t)thread << 32;
	x ^= ((uint64_t)flags | (uint64_t)labels << 32) * 0x9e3779b97f4a7c15ULL;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 29;
	return (size_t)x;
}

static struct agg_entry *alloc_slots(size_t cap)
{
	return calloc(cap, sizeof(struct agg_entry));
}

struct agg *agg_new(void)
{
	struct agg *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->slots = alloc_slots(AGG_INIT_CAP);
	if (!a->slots) {
		free(a);
		return NULL;
	}
	a->cap = AGG_INIT_CAP;
	return a;
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	free(a->slots);
	free(a);
}

static int grow(struct agg *a)
{
	size_t cap = a->cap * 2, mask = cap - 1;
	struct agg_entry *slots = alloc_slots(cap);
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		const struct agg_entry *e = &a->slots[i];
		if (!e->node)
			continue;
		size_t j = key_hash(e->node, e->thread, e->flags, e->labels) &
			   mask;
		while (slots[j].node)
			j = (j + 1) & mask;
		slots[j] = *e;
	}
	free(a->slots);
	a->slots = slots;
	a->cap = cap;
	a->last = 0;
	return 0;
}

static inline int key_is(const struct agg_entry *e, uint32_t node,
			 uint32_t thread, uint32_t flags, uint32_t labels)
{
	return e->node == node && e->thread == thread && e->flags == flags &&
	       e->labels == labels;
}

int agg_add(struct agg *a, uint32_t node, uint32_t thread, uint32_t flags,
	    uint32_t labels, uint64_t count, uint64_t value)
{
	struct agg_entry *e = &a->slots[a->last];
	size_t mask, i;

	assert(node != 0 && !(flags & AGG_MOVING));
	if (key_is(e, node, thread, flags, labels))
		goto hit;
	mask = a->cap - 1;
	for (i = key_hash(node, thread, flags, labels) & mask;;
	     i = (i + 1) & mask) {
		e = &a->slots[i];
		if (key_is(e, node, thread, flags, labels))
			break;
		if (e->node == 0) {
			if ((a->n + 1) * 2 > a->cap) {
				int err = grow(a);
				if (err)
					return err;
				return agg_add(a, node, thread, flags, labels,
					       count, value);
			}
			e->node = node;
			e->thread = thread;
			e->flags = flags;
			e->labels = labels;
			a->n++;
			break;
		}
	}
	a->last = i;
hit:
	e->count = sat_add(e->count, count);
	e->value = sat_add(e->value, value);
	a->total_count = sat_add(a->total_count, count);
	a->total_value = sat_add(a->total_value, value);
	return 0;
}

const struct agg_entry *agg_next(const struct agg *a, size_t *pos)
{
	while (*pos < a->cap) {
		const struct agg_entry *e = &a->slots[(*pos)++];
		if (e->node)
			return e;
	}
	return NULL;
}

size_t agg_len(const struct agg *a)
{
	return a->n;
}

uint64_t agg_total_count(const struct agg *a)
{
	return a->total_count;
}

uint64_t agg_total_value(const struct agg *a)
{
	return a->total_value;
}

size_t agg_mem(const struct agg *a)
{
	return sizeof(*a) + a->cap * sizeof(struct agg_entry);
}

void agg_clear(struct agg *a)
{
	struct agg_entry *slots = alloc_slots(AGG_INIT_CAP);
	if (slots) {
		free(a->slots);
		a->slots = slots;
		a->cap = AGG_INIT_CAP;
	} else {
		/* Keep the big table, emptied: clearing must not fail. */
		for (size_t i = 0; i < a->cap; i++)
			a->slots[i] = (struct agg_entry){ 0 };
	}
	a->n = 0;
	a->last = 0;
	a->total_count = 0;
	a->total_value = 0;
}

/* In-place rehash. Every entry is first renumbered and flagged as moving;
 * then each moving entry goes to the first slot of its new probe sequence
 * that is empty or holds another moving entry (swapping that one into its
 * place to be moved next). A settled entry never moves again, and every
 * slot between its home and its position was settled when it settled, so
 * lookups, which stop at the first empty slot, still find every key. Each
 * step settles one entry: O(n) probes in all. */
void agg_renumber(struct agg *a, agg_map_fn map_node, agg_map_fn map_labels,
		  const void *arg)
{
	size_t mask = a->cap - 1;

	for (size_t i = 0; i < a->cap; i++) {
		struct agg_entry *e = &a->slots[i];
		if (!e->node)
			continue;
		e->node = map_node(arg, e->node);
		assert(e->node != 0);
		if (e->labels)
			e->labels = map_labels(arg, e->labels);
		e->flags |= AGG_MOVING;
	}
	for (size_t i = 0; i < a->cap; i++) {
		while (a->slots[i].node && (a->slots[i].flags & AGG_MOVING)) {
			struct agg_entry e = a->slots[i];
			e.flags &= ~AGG_MOVING;
			size_t j = key_hash(e.node, e.thread, e.flags,
					    e.labels) &
				   mask;
			while (a->slots[j].node &&
			       !(a->slots[j].flags & AGG_MOVING))
				j = (j + 1) & mask;
			if (j == i) {
				a->slots[i] = e;
			} else if (!a->slots[j].node) {
				a->slots[j] = e;
				a->slots[i] = (struct agg_entry){ 0 };
			} else {
				a->slots[i] = a->slots[j];
				a->slots[j] = e;
			}
		}
	}
	a->last = 0;
}
