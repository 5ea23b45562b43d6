/*
 * heapagg.c - one process's heap profile (see heapagg.h).
 *
 * Two open-addressing tables with linear probing:
 *   live  address -> (node, labels, size, scale) of each sampled block
 *         in use;
 *         removal shifts the following entries back (no tombstones), so
 *         a long-running process's churn does not slow lookups;
 *   acc   (node, labels) -> unbiased allocation sums of the window; only
 *         grows within a window, emptied by heapagg_window_reset;
 * and, for the peak, an array:
 *   peak  a copy of live's entries (node, labels, size, scale) at the
 *         window's last copy, summed per (node, labels) only when a
 *         profile is built.
 * Both tables double when half full. Hashes are Fibonacci hashing of the
 * key.
 *
 * The peak. inuse_est is the in-use estimate kept as records arrive: the
 * sum over live blocks of their unbiased bytes, each rounded to an integer
 * (block_est) from the scale its entry keeps, so that a block's free
 * takes off exactly what its allocation added, at the current rate (a new
 * rate recomputes the scales: rare). When it passes the last copy's value
 * by more than 1/2^HEAPAGG_PEAK_SLACK_SHIFT, live is copied to peak
 * again. A copy is one pass over live, a few instructions per slot (a
 * copy summed per stack at once cost four times as much: the collector
 * took a third more instructions than before the peak on
 * tests/bench/ingest.c --heap, where the heap reaches a new high every
 * 200,000 records, against 14% now; docs/heap.md); growing from B to
 * 2B bytes takes about 45 copies at 1/64, whatever the number of
 * allocations, and churn under the last high costs nothing but the
 * estimate's add and subtract. So the peak's total is within 1/64 below
 * the true high of the estimate, which is kept exactly (win_max, and the
 * table's life's life_max for the line `pyprof record` prints, with their
 * times). A window starts with a copy
 * of what is in use then (the peak of a window of frees is its start).
 */
#include "daemon/heapagg.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HEAPAGG_MIN_CAP 64

struct live {
	uint64_t addr; /* 0: empty */
	uint64_t size;
	double w; /* heapagg_scale(size, rate), rate the current one */
	uint32_t node;
	uint32_t labels;
};

struct acc {
	uint32_t node; /* 0: empty */
	uint32_t labels;
	double objects, bytes;
};

/* A block in use at the peak: live's entry without its address. */
struct peak_block {
	uint64_t size;
	double w;
	uint32_t node;
	uint32_t labels;
};

/* An open-addressing table of struct acc (the window's allocation sums;
 * a struct of its own for sums_renumber). */
struct sums {
	struct acc *v;
	size_t n, cap;
	int unhashed; /* a renumbering could not rehash it: entries are off
			 their hash positions until it grows */
};

/* acc's key as one number to hash. */
static uint64_t acc_key(uint32_t node, uint32_t labels)
{
	return (uint64_t)labels << 32 | node;
}

struct heapagg {
	struct live *live;
	size_t live_n, live_cap;
	struct sums acc;
	uint64_t rate;
	double lost_objects, lost_bytes;
	uint64_t n_over;    /* allocations lost to HEAPAGG_LIVE_MAX */
	uint64_t now_ns;    /* heapagg_set_now's clock */
	uint64_t inuse_est; /* sum of block_est over live */
	/* the window's peak */
	struct peak_block *peak; /* live's blocks at the last copy */
	size_t peak_n, peak_cap;
	uint64_t peak_copy; /* inuse_est at that copy */
	int peak_copied;    /* a copy was made in this window */
	int peak_failed;    /* the last copy ran out of memory: the
			       table is empty, the next rise retries */
	struct heapagg_peak win_max, life_max;
};

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static void sums_free(struct sums *t)
{
	free(t->v);
	*t = (struct sums){ 0 };
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
	sums_free(&h->acc);
	free(h->peak);
	free(h);
}

double heapagg_scale(uint64_t size, uint64_t rate)
{
	if (rate <= 1 || size == 0)
		return 1.0;
	double p = -expm1(-(double)size / (double)rate); /* 1 - e^(-S/R) */
	return p > 0 ? 1.0 / p : 1.0;
}

/* A block's share of inuse_est: its unbiased bytes (w its scale),
 * rounded, at most 2^43 (8 TiB) so that HEAPAGG_LIVE_MAX of them cannot
 * wrap the sum. The scale is kept in the block's entry: computing it
 * again (expm1) at every FREE cost a third more of the collector's time
 * on a heap-heavy stream (tests/bench/ingest.c --heap), and at every
 * peak copy as much again. */
static uint64_t block_est(uint64_t size, double w)
{
	double v = w * (double)size;
	return v >= 0x1p43 ? 1ull << 43 : (uint64_t)(v + 0.5);
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
	if (!e)
		return;
	h->inuse_est -= block_est(e->size, e->w);
	live_remove_at(h, (size_t)(e - h->live));
}

/* ---- allocation sums ------------------------------------------------------ */

/* The entry of (node, labels), added with zero sums if new; NULL when
 * out of memory. */
static struct acc *sums_get(struct sums *t, uint32_t node, uint32_t labels)
{
	uint64_t key = acc_key(node, labels);

	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : HEAPAGG_MIN_CAP;
		struct acc *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->v[i].node)
				continue;
			uint64_t key_i = acc_key(t->v[i].node,
						 t->v[i].labels);
			size_t k = slot_of(key_i, cap);
			while (v[k].node)
				k = (k + 1) & (cap - 1);
			v[k] = t->v[i];
		}
		free(t->v);
		t->v = v;
		t->cap = cap;
		t->unhashed = 0;
	}
	if (t->unhashed)
		for (size_t k = 0; k < t->cap; k++)
			if (t->v[k].node == node && t->v[k].labels == labels)
				return &t->v[k];
	size_t i = slot_of(key, t->cap);
	while (t->v[i].node && acc_key(t->v[i].node, t->v[i].labels) != key)
		i = (i + 1) & (t->cap - 1);
	if (!t->v[i].node) {
		t->v[i].node = node;
		t->v[i].labels = labels;
		t->n++;
	}
	return &t->v[i];
}

/* ---- the peak ------------------------------------------------------------- */

/* Copies what is in use now into the peak. */
static void peak_copy_now(struct heapagg *h)
{
	h->peak_copied = 1;
	h->peak_copy = h->inuse_est;
	h->peak_failed = 0;
	h->peak_n = 0;
	/* grow by doubling; give back what a much smaller heap leaves */
	if (h->live_n > h->peak_cap || 4 * h->live_n + 64 < h->peak_cap) {
		size_t cap = h->live_n > h->peak_cap ? 2 * h->live_n
						     : h->live_n + 64;
		struct peak_block *v = realloc(h->peak, cap * sizeof(*v));
		if (!v) {
			/* no room: no peak rather than a partial one; the
			 * next rise tries again */
			h->peak_failed = 1;
			return;
		}
		h->peak = v;
		h->peak_cap = cap;
	}
	for (size_t i = 0; i < h->live_cap; i++) {
		const struct live *e = &h->live[i];
		if (e->addr)
			h->peak[h->peak_n++] = (struct peak_block){
				e->size, e->w, e->node, e->labels
			};
	}
}

/* inuse_est passed the window's high: the highs, and a copy if it passed
 * the last copy by the slack (or the last one failed, or there is none).
 * Called on a new high only (one compare per allocation otherwise): the
 * high is never below the last copy, and never more than the slack above
 * it without a copy, so passing the copy by the slack is a new high. */
static void peak_rise(struct heapagg *h)
{
	uint64_t v = h->inuse_est;

	assert(v > h->win_max.bytes && h->win_max.bytes >= h->peak_copy);
	h->win_max = (struct heapagg_peak){ v, h->now_ns };
	if (v > h->life_max.bytes)
		h->life_max = (struct heapagg_peak){ v, h->now_ns };
	if (!h->peak_copied || h->peak_failed ||
	    v - h->peak_copy > h->peak_copy >> HEAPAGG_PEAK_SLACK_SHIFT)
		peak_copy_now(h);
}

/* The rate every block is unbiased at (the last one heard, as
 * heapagg_rows uses): a new one recomputes inuse_est. */
static void set_rate(struct heapagg *h, uint64_t rate)
{
	if (rate == h->rate)
		return;
	h->rate = rate;
	h->inuse_est = 0;
	for (size_t i = 0; i < h->live_cap; i++) {
		struct live *e = &h->live[i];
		if (!e->addr)
			continue;
		e->w = heapagg_scale(e->size, rate);
		h->inuse_est += block_est(e->size, e->w);
	}
}

void heapagg_set_now(struct heapagg *h, uint64_t unix_ns)
{
	h->now_ns = unix_ns;
}

uint64_t heapagg_inuse_est(const struct heapagg *h)
{
	return h->inuse_est;
}

struct heapagg_peak heapagg_window_peak(const struct heapagg *h)
{
	return h->win_max;
}

struct heapagg_peak heapagg_life_peak(const struct heapagg *h)
{
	return h->life_max;
}

/* ---- records -------------------------------------------------------------- */

int heapagg_alloc(struct heapagg *h, uint64_t rate, uint32_t node,
		  uint32_t labels, uint64_t size, uint64_t addr)
{
	struct live e = { .addr = addr, .size = size, .node = node, .labels = labels };
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
	if (!(a = sums_get(&h->acc, node, labels)))
		return -ENOMEM;
	set_rate(h, rate);
	heapagg_release(h, addr); /* its FREE was lost */
	e.w = heapagg_scale(size, rate);
	live_put(h->live, h->live_cap, &e);
	h->live_n++;
	a->objects += e.w;
	a->bytes += e.w * (double)size;
	h->inuse_est += block_est(size, e.w);
	if (h->inuse_est > h->win_max.bytes)
		peak_rise(h);
	return 0;
}

void heapagg_lost(struct heapagg *h, uint64_t rate, uint64_t n, uint64_t bytes)
{
	if (!n)
		return;
	set_rate(h, rate);
	if (h->inuse_est > h->win_max.bytes) /* a new rate may raise it */
		peak_rise(h);
	double w = heapagg_scale(bytes / n, rate);
	h->lost_objects += w * (double)n;
	h->lost_bytes += w * (double)bytes;
}

int heapagg_has_data(const struct heapagg *h)
{
	return h && (h->acc.n || h->live_n || h->lost_objects > 0 ||
		     h->peak_n);
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
	sums_free(&h->acc);
	h->lost_objects = h->lost_bytes = 0;
	/* the new window's peak is, so far, what is in use now */
	h->win_max = (struct heapagg_peak){ h->inuse_est, h->now_ns };
	peak_copy_now(h);
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

static int peak_block_cmp(const void *a, const void *b)
{
	const struct peak_block *x = a, *y = b;
	uint64_t kx = acc_key(x->node, x->labels), ky = acc_key(y->node,
								y->labels);
	return kx < ky ? -1 : kx > ky;
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
	/* the peak's blocks sorted by (node, labels): runs of one key */
	struct peak_block *peak = malloc((h->peak_n ? h->peak_n : 1) *
					 sizeof(*peak));
	size_t cap = h->acc.n + h->live_n + h->peak_n, n = 0;
	struct heapagg_row *rows = malloc((cap ? cap : 1) * sizeof(*rows));

	*out = NULL;
	*out_n = 0;
	if (!rows || !peak) {
		free(rows);
		free(peak);
		return -ENOMEM;
	}
	if (h->peak_n)
		memcpy(peak, h->peak, h->peak_n * sizeof(*peak));
	qsort(peak, h->peak_n, sizeof(*peak), peak_block_cmp);
	for (size_t i = 0; i < h->acc.cap; i++)
		if (h->acc.v[i].node)
			rows[n++] = (struct heapagg_row){
				.node = h->acc.v[i].node,
				.labels = h->acc.v[i].labels,
				.alloc_objects = h->acc.v[i].objects,
				.alloc_bytes = h->acc.v[i].bytes,
			};
	qsort(rows, n, sizeof(*rows), row_cmp);
	/* the peak: its stacks without allocations in the window get rows
	 * of their own (the keys of a sums table are distinct) */
	size_t n_acc = n;
	for (size_t i = 0; i < h->peak_n;) {
		const struct peak_block *p = &peak[i];
		struct heapagg_row *r = row_find(rows, n_acc, p->node,
						 p->labels);
		if (!r) {
			r = &rows[n++];
			*r = (struct heapagg_row){ .node = p->node,
						   .labels = p->labels };
		}
		while (i < h->peak_n && peak[i].node == p->node &&
		       peak[i].labels == p->labels) {
			r->peak_objects += peak[i].w;
			r->peak_bytes += peak[i].w * (double)peak[i].size;
			i++;
		}
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	/* in-use: blocks of stacks without a row yet get rows of their
	 * own, appended, then everything is sorted again */
	size_t n_sorted = n;
	for (size_t i = 0; i < h->live_cap; i++) {
		const struct live *e = &h->live[i];
		if (!e->addr)
			continue;
		struct heapagg_row *r = row_find(rows, n_sorted, e->node,
						 e->labels);
		if (!r) {
			for (size_t k = n_sorted; k < n; k++)
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
		/* e->w is heapagg_scale(e->size, h->rate) (set_rate) */
		r->inuse_objects += e->w;
		r->inuse_bytes += e->w * (double)e->size;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	free(peak);
	*lost = (struct heapagg_row){ .alloc_objects = h->lost_objects,
				      .alloc_bytes = h->lost_bytes };
	*out = rows;
	*out_n = n;
	return 0;
}

static void sums_each_key(const struct sums *t,
			  void (*fn)(void *arg, uint32_t node, uint32_t labels),
			  void *arg)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].node)
			fn(arg, t->v[i].node, t->v[i].labels);
}

void heapagg_each_key(const struct heapagg *h,
		      void (*fn)(void *arg, uint32_t node, uint32_t labels),
		      void *arg)
{
	sums_each_key(&h->acc, fn, arg);
	for (size_t i = 0; i < h->peak_n; i++)
		fn(arg, h->peak[i].node, h->peak[i].labels);
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

/* t is keyed by node: rebuilt in place of the old one. */
static void sums_renumber(struct sums *t, const struct renumber *m)
{
	if (!t->cap)
		return;
	struct acc *old = t->v;
	size_t cap = t->cap;
	struct acc *v = calloc(cap, sizeof(*v));
	if (!v) {
		/* cannot rehash: renumber in place; sums_get scans the
		 * whole table until the next growth rehashes it */
		for (size_t i = 0; i < cap; i++)
			if (old[i].node)
				renumber_key(m, &old[i].node, &old[i].labels);
		t->unhashed = 1;
		return;
	}
	for (size_t i = 0; i < cap; i++) {
		if (!old[i].node)
			continue;
		struct acc e = old[i];
		renumber_key(m, &e.node, &e.labels);
		size_t k = slot_of(acc_key(e.node, e.labels), cap);
		while (v[k].node)
			k = (k + 1) & (cap - 1);
		v[k] = e;
	}
	free(old);
	t->v = v;
	t->unhashed = 0;
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
	sums_renumber(&h->acc, &m);
	for (size_t i = 0; i < h->peak_n; i++)
		renumber_key(&m, &h->peak[i].node, &h->peak[i].labels);
}
