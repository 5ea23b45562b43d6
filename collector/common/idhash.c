/*
 * idhash.c - open-addressed set of ids keyed by the owner's records (see
 * idhash.h). Used on definition frames only (strings, functions,
 * locations, nodes, threads), never per sample, so it favours simplicity:
 * linear probing, doubling at half full.
 */
#include "common/idhash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void idhash_init(struct idhash *h)
{
	h->slots = NULL;
	h->cap = 0;
	h->n = 0;
}

void idhash_fini(struct idhash *h)
{
	free(h->slots);
	idhash_init(h);
}

size_t idhash_mem(const struct idhash *h)
{
	return h->cap * sizeof(*h->slots);
}

uint64_t idhash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 0x243f6a8885a308d3ULL ^ len;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = idhash_combine(h, w);
		s += 8;
		len -= 8;
	}
	uint64_t tail = 0;
	for (size_t i = 0; i < len; i++)
		tail |= (uint64_t)s[i] << (8 * i);
	return idhash_combine(h, tail);
}

/* Where probing starts for a record: derived from the 32 hash bits a slot
 * keeps, so that growing can re-place slots without the full hash. */
static size_t slot_start(uint32_t tag, size_t mask)
{
	return (size_t)idhash_mix(tag) & mask;
}

uint32_t idhash_find(const struct idhash *h, uint64_t hash, idhash_eq_fn eq,
		     const void *ctx)
{
	if (h->cap == 0)
		return 0;
	uint32_t tag = (uint32_t)(hash >> 32);
	size_t mask = h->cap - 1;
	for (size_t i = slot_start(tag, mask);; i = (i + 1) & mask) {
		uint64_t s = h->slots[i];
		if (s == 0)
			return 0;
		if ((uint32_t)(s >> 32) == tag && eq(ctx, (uint32_t)s))
			return (uint32_t)s;
	}
}

/* Stores slot s; the caller guarantees a free slot exists. */
static void place(uint64_t *slots, size_t mask, uint64_t s)
{
	size_t i = slot_start((uint32_t)(s >> 32), mask);
	while (slots[i] != 0)
		i = (i + 1) & mask;
	slots[i] = s;
}

static int grow(struct idhash *h)
{
	size_t cap = h->cap ? 2 * h->cap : 64;
	uint64_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++)
		if (h->slots[i])
			place(slots, cap - 1, h->slots[i]);
	free(h->slots);
	h->slots = slots;
	h->cap = cap;
	return 0;
}

int idhash_insert(struct idhash *h, uint64_t hash, uint32_t id)
{
	int err;
	if ((h->n + 1) * 2 > h->cap && (err = grow(h)) < 0)
		return err;
	place(h->slots, h->cap - 1, (uint64_t)(uint32_t)(hash >> 32) << 32 | id);
	h->n++;
	return 0;
}
