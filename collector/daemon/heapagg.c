/*
 * heapagg.c - one process's heap profile (see heapagg.h).
 *
 * Two open-addressing tables with linear probing:
 *   live  address -> (node, labels, size) of each sampled block in use;
 *         removal shifts the following entries back (no tombstones), so
 *         a long-running process's churn does not slow lookups;
 *   acc   (node, labels) -> unbiased allocation sums of the window; only
 *         grows within a window, emptied by heapagg_window_reset.
 * Both double when half full. Hashes are Fibonacci hashing of the key.
 */
#include "daemon/heapagg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEAPAGG_MIN_CAP 64

struct live {
	uint64_t addr; /* 0: empty */
	uint64_t size;
	uint32_t node;
	uint32_t labels;
};

struct acc {
	uint32_t node; /* 0: empty */
	uint32_t labels;
	double objects, bytes;
};

/* acc's key as one number to hash. */
static uint64_t acc_key(uint32_t node, uint32_t labels)
{
	return (uint64_t)labels << 32 | node;
}

struct heapagg {
	struct live *live;
	size_t live_n, live_cap;
	struct acc *acc;
	size_t acc_n, acc_cap;
	int acc_unhashed; /* a renumbering could not rehash acc: entries
			     are off their hash positions until it grows */
	uint64_t rate;
	double lost_objects, lost_bytes;
	uint64_t n_over; /* allocations lost to HEAPAGG_LIVE_MAX */
};

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

struct heapagg *heapagg_new(void)
{
	return calloc(1, sizeof(struct heapagg));
}

void heapagg_free(struct heapagg *h)
{
	if (!h)
		return;
	free(h->live);
	free(h->acc);
	free(h);
}

double heapagg_scale(uint64_t size, uint64_t rate)
{
	if (rate <= 1 || size == 0)
		return 1.0;
	double p = -expm1(-(double)size / (double)rate); /* 1 - e^(-S/R) */
	return p > 0 ? 1.0 / p : 1.0;
}

/* ---- live blocks ---------------------------------------------------------- */

static struct live *live_find(const struct heapagg *h, uint64_t addr)
{
	if (!h->live_cap)
		return NULL;
	for (size_t i = slot_of(addr, h->live_cap);; i = (i + 1) &
						      (h->live_cap - 1)) {
		if (h->live[i].addr == addr)
			return &h->live[i];
		if (!h->live[i].addr)
			return NULL;
	}
}

static void live_put(struct live *t, size_t cap, const struct live *e)
{
	size_t i = slot_of(e->addr, cap);
	while (t[i].addr)
		i = (i + 1) & (cap - 1);
	t[i] = *e;
}

static int live_grow(struct heapagg *h)
{
	size_t cap = h->live_cap ? 2 * h->live_cap : HEAPAGG_MIN_CAP;
	struct live *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < h->live_cap; i++)
		if (h->live[i].addr)
			live_put(t, cap, &h->live[i]);
	free(h->live);
	h->live = t;
	h->live_cap = cap;
	return 0;
}

/* Removes the entry at slot i, shifting back the entries of its cluster
 * that would no longer be found past the hole. */
static void live_remove_at(struct heapagg *h, size_t i)
{
	size_t mask = h->live_cap - 1, j = i;
	h->live[i].addr = 0;
	for (;;) {
		j = (j + 1) & mask;
		if (!h->live[j].addr)
			break;
		size_t home = slot_of(h->live[j].addr, h->live_cap);
		/* j's entry may move to the hole i unless its home lies
		 * cyclically in (i, j] */
		int stays = i <= j ? (home > i && home <= j)
				   : (home > i || home <= j);
		if (stays)
			continue;
		h->live[i] = h->live[j];
		h->live[j].addr = 0;
		i = j;
	}
	h->live_n--;
}

void heapagg_release(struct heapagg *h, uint64_t addr)
{
	struct live *e = live_find(h, addr);
	if (e)
		live_remove_at(h, (size_t)(e - h->live));
}

/* ---- allocation sums ------------------------------------------------------ */

static struct acc *acc_get(struct heapagg *h, uint32_t node, uint32_t labels)
{
	uint64_t key = acc_key(node, labels);

	if (2 * (h->acc_n + 1) > h->acc_cap) {
		size_t cap = h->acc_cap ? 2 * h->acc_cap : HEAPAGG_MIN_CAP;
		struct acc *t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < h->acc_cap; i++) {
			if (!h->acc[i].node)
				continue;
			size_t k = slot_of(acc_key(h->acc[i].node,
						   h->acc[i].labels), cap);
			while (t[k].node)
				k = (k + 1) & (cap - 1);
			t[k] = h->acc[i];
		}
		free(h->acc);
		h->acc = t;
		h->acc_cap = cap;
		h->acc_unhashed = 0;
	}
	if (h->acc_unhashed)
		for (size_t k = 0; k < h->acc_cap; k++)
			if (h->acc[k].node == node && h->acc[k].labels == labels)
				return &h->acc[k];
	size_t i = slot_of(key, h->acc_cap);
	while (h->acc[i].node &&
	       acc_key(h->acc[i].node, h->acc[i].labels) != key)
		i = (i + 1) & (h->acc_cap - 1);
	if (!h->acc[i].node) {
		h->acc[i].node = node;
		h->acc[i].labels = labels;
		h->acc_n++;
	}
	return &h->acc[i];
}

int heapagg_alloc(struct heapagg *h, uint64_t rate, uint32_t node,
		  uint32_t labels, uint64_t size, uint64_t addr)
{
	struct live e = { .addr = addr, .size = size, .node = node,
			  .labels = labels };
	struct acc *a;

	if (!addr || !node)
		return -EINVAL;
	if (h->live_n >= HEAPAGG_LIVE_MAX && !live_find(h, addr)) {
		/* full: a new block is not kept (its FREE, if it comes, is
		 * ignored as an unknown address) but counted */
		heapagg_lost(h, rate, 1, size);
		h->n_over++;
		return 1;
	}
	if (2 * (h->live_n + 1) > h->live_cap && live_grow(h) < 0)
		return -ENOMEM;
	if (!(a = acc_get(h, node, labels)))
		return -ENOMEM;
	h->rate = rate;
	heapagg_release(h, addr); /* its FREE was lost */
	live_put(h->live, h->live_cap, &e);
	h->live_n++;
	double w = heapagg_scale(size, rate);
	a->objects += w;
	a->bytes += w * (double)size;
	return 0;
}

void heapagg_lost(struct heapagg *h, uint64_t rate, uint64_t n, uint64_t bytes)
{
	if (!n)
		return;
	h->rate = rate;
	double w = heapagg_scale(bytes / n, rate);
	h->lost_objects += w * (double)n;
	h->lost_bytes += w * (double)bytes;
}

int heapagg_has_data(const struct heapagg *h)
{
	return h && (h->acc_n || h->live_n || h->lost_objects > 0);
}

uint64_t heapagg_rate_of(const struct heapagg *h)
{
	return h->rate;
}

uint64_t heapagg_n_over(const struct heapagg *h)
{
	return h->n_over;
}

size_t heapagg_n_live(const struct heapagg *h)
{
	return h->live_n;
}

void heapagg_window_reset(struct heapagg *h)
{
	free(h->acc);
	h->acc = NULL;
	h->acc_n = h->acc_cap = 0;
	h->acc_unhashed = 0;
	h->lost_objects = h->lost_bytes = 0;
}

/* ---- reading ------------------------------------------------------------- */

static uint64_t row_key(const struct heapagg_row *r)
{
	return (uint64_t)r->node << 32 | r->labels;
}

static int row_cmp(const void *a, const void *b)
{
	uint64_t x = row_key(a), y = row_key(b);
	return x < y ? -1 : x > y;
}

/* The row of (node, labels) among rows[0..n), sorted, or NULL. */
static struct heapagg_row *row_find(struct heapagg_row *rows, size_t n,
				    uint32_t node, uint32_t labels)
{
	struct heapagg_row key = { .node = node, .labels = labels };
	return bsearch(&key, rows, n, sizeof(*rows), row_cmp);
}

int heapagg_rows(const struct heapagg *h, struct heapagg_row **out,
		 size_t *out_n, struct heapagg_row *lost)
{
	size_t cap = h->acc_n + h->live_n, n = 0;
	struct heapagg_row *rows = malloc((cap ? cap : 1) * sizeof(*rows));

	*out = NULL;
	*out_n = 0;
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < h->acc_cap; i++)
		if (h->acc[i].node)
			rows[n++] = (struct heapagg_row){
				.node = h->acc[i].node,
				.labels = h->acc[i].labels,
				.alloc_objects = h->acc[i].objects,
				.alloc_bytes = h->acc[i].bytes,
			};
	qsort(rows, n, sizeof(*rows), row_cmp);
	/* in-use: blocks of stacks without allocations in the window get
	 * rows of their own, appended, then everything is sorted again */
	size_t n_acc = n;
	for (size_t i = 0; i < h->live_cap; i++) {
		const struct live *e = &h->live[i];
		if (!e->addr)
			continue;
		struct heapagg_row *r = row_find(rows, n_acc, e->node,
						 e->labels);
		if (!r) {
			for (size_t k = n_acc; k < n; k++)
				if (rows[k].node == e->node &&
				    rows[k].labels == e->labels) {
					r = &rows[k];
					break;
				}
		}
		if (!r) {
			r = &rows[n++];
			*r = (struct heapagg_row){ .node = e->node,
						   .labels = e->labels };
		}
		double w = heapagg_scale(e->size, h->rate);
		r->inuse_objects += w;
		r->inuse_bytes += w * (double)e->size;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	*lost = (struct heapagg_row){ .alloc_objects = h->lost_objects,
				      .alloc_bytes = h->lost_bytes };
	*out = rows;
	*out_n = n;
	return 0;
}

void heapagg_each_key(const struct heapagg *h,
		      void (*fn)(void *arg, uint32_t node, uint32_t labels),
		      void *arg)
{
	for (size_t i = 0; i < h->acc_cap; i++)
		if (h->acc[i].node)
			fn(arg, h->acc[i].node, h->acc[i].labels);
	for (size_t i = 0; i < h->live_cap; i++)
		if (h->live[i].addr)
			fn(arg, h->live[i].node, h->live[i].labels);
}

/* A key renumbered (heapagg_renumber's maps). */
struct renumber {
	uint32_t (*node)(const void *arg, uint32_t node);
	uint32_t (*labels)(const void *arg, uint32_t labels);
	const void *arg;
};

static void renumber_key(const struct renumber *m, uint32_t *node,
			 uint32_t *labels)
{
	*node = m->node(m->arg, *node);
	if (*labels)
		*labels = m->labels(m->arg, *labels);
}

void heapagg_renumber(struct heapagg *h,
		      uint32_t (*map_node)(const void *arg, uint32_t node),
		      uint32_t (*map_labels)(const void *arg, uint32_t labels),
		      const void *arg)
{
	const struct renumber m = { map_node, map_labels, arg };
	for (size_t i = 0; i < h->live_cap; i++)
		if (h->live[i].addr)
			renumber_key(&m, &h->live[i].node,
				     &h->live[i].labels);
	/* acc is keyed by node: rebuild it in place of the old one */
	if (!h->acc_cap)
		return;
	struct acc *old = h->acc;
	size_t cap = h->acc_cap;
	struct acc *t = calloc(cap, sizeof(*t));
	if (!t) {
		/* cannot rehash: renumber in place; acc_get scans the
		 * whole table until the next growth rehashes it */
		for (size_t i = 0; i < cap; i++)
			if (old[i].node)
				renumber_key(&m, &old[i].node,
					     &old[i].labels);
		h->acc_unhashed = 1;
		return;
	}
	for (size_t i = 0; i < cap; i++) {
		if (!old[i].node)
			continue;
		struct acc e = old[i];
		renumber_key(&m, &e.node, &e.labels);
		size_t k = slot_of(acc_key(e.node, e.labels), cap);
		while (t[k].node)
			k = (k + 1) & (cap - 1);
		t[k] = e;
	}
	free(old);
	h->acc = t;
}
