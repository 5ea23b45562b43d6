/*
 * view_helpers.c - the helpers every view shares (see view_read.h, which
 * declares them): label filters (--tag KEY=VALUE) and a sample's labels,
 * keys (functions or lines, interned across profiles, so that a diff
 * compares the same function in both) and their ranking, and values
 * formatted in their unit.
 *
 * Called by the views and the pyprof command; single-threaded.
 */
#include "views/view_read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/sorted.h"

/* ---- filters ------------------------------------------------------------------- */

int view_filter_add(struct view_filter *f, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (!eq || eq == kv)
		return -EINVAL;
	if (f->n == VIEW_MAX_TAGS)
		return -E2BIG;
	f->tags[f->n].key = kv;
	f->tags[f->n].value = eq + 1;
	f->n++;
	return 0;
}

/* Does the key of tag i (which ends at its '=') equal key? */
static int tag_key_is(const struct view_filter *f, size_t i, const char *key)
{
	const char *k = f->tags[i].key;
	size_t len = (size_t)(f->tags[i].value - 1 - k);
	return strlen(key) == len && !memcmp(k, key, len);
}

static int label_is(const struct view_label *l, const char *value)
{
	char buf[32];
	if (l->str)
		return !strcmp(l->str, value);
	snprintf(buf, sizeof(buf), "%" PRId64, l->num);
	return !strcmp(buf, value);
}

/* Do tags i and j name the same key? */
static int same_key(const struct view_filter *f, size_t i, size_t j)
{
	size_t li = (size_t)(f->tags[i].value - f->tags[i].key);
	size_t lj = (size_t)(f->tags[j].value - f->tags[j].key);
	return li == lj && !memcmp(f->tags[i].key, f->tags[j].key, li);
}

int view_sample_matches(const struct view_sample *s,
			const struct view_filter *f)
{
	for (size_t i = 0; i < f->n; i++) {
		int seen = 0, ok = 0;
		/* Each key is checked once, at its first tag. */
		for (size_t j = 0; j < i && !seen; j++)
			seen = same_key(f, i, j);
		if (seen)
			continue;
		/* Any of the values given for this key will do. */
		for (size_t j = i; j < f->n && !ok; j++) {
			if (!same_key(f, i, j))
				continue;
			for (uint32_t k = 0; k < s->n_labels && !ok; k++)
				ok = tag_key_is(f, j, s->labels[k].key) &&
				     label_is(&s->labels[k], f->tags[j].value);
		}
		if (!ok)
			return 0;
	}
	return 1;
}

const char *view_sample_label(const struct view_sample *s, const char *key,
			      char *buf, size_t n)
{
	for (uint32_t k = 0; k < s->n_labels; k++) {
		const struct view_label *l = &s->labels[k];
		if (strcmp(l->key, key))
			continue;
		if (l->str)
			snprintf(buf, n, "%s", l->str);
		else
			snprintf(buf, n, "%" PRId64, l->num);
		return buf;
	}
	return NULL;
}

/* ---- keys --------------------------------------------------------------------- */

struct key_probe {
	const struct view_keys *k;
	const char *name, *file;
	int64_t line;
};

static int key_eq(const void *ctx, uint32_t id)
{
	const struct key_probe *q = ctx;
	const struct view_key *v = &q->k->v[id - 1];
	return v->line == q->line && !strcmp(v->name, q->name) &&
	       !strcmp(v->file, q->file);
}

void view_keys_init(struct view_keys *k, enum view_by by)
{
	memset(k, 0, sizeof(*k));
	k->by = by;
	idhash_init(&k->hash);
}

void view_keys_fini(struct view_keys *k)
{
	free(k->v);
	idhash_fini(&k->hash);
	memset(k, 0, sizeof(*k));
}

static int key_intern(struct view_keys *k, uint64_t h, const char *name,
		      const char *file, int64_t line, uint32_t *id)
{
	struct key_probe q = { k, name, file, line };
	uint32_t got = idhash_find(&k->hash, h, key_eq, &q);

	if (got) {
		*id = got - 1;
		return 0;
	}
	if (grow_array(&k->v, &k->cap, k->n + 1, sizeof(*k->v), 256) < 0)
		return -ENOMEM;
	if (k->n >= UINT32_MAX - 1 ||
	    idhash_insert(&k->hash, h, (uint32_t)k->n + 1) < 0)
		return -ENOMEM;
	k->v[k->n] = (struct view_key){ name, file, line };
	*id = (uint32_t)k->n++;
	return 0;
}

int view_keys_map(struct view_keys *k, const struct view_profile *p,
		  uint32_t **of_frame)
{
	uint32_t *fkey = NULL, *map = NULL;
	uint64_t *fhash = NULL;
	int rc = -ENOMEM;

	*of_frame = NULL;
	fkey = malloc(p->n_funcs * sizeof(*fkey) + 1);
	fhash = malloc(p->n_funcs * sizeof(*fhash) + 1);
	map = malloc(p->n_frames * sizeof(*map) + 1);
	if (!fkey || !fhash || !map)
		goto out;
	/* Per function first (a profile has far fewer functions than
	 * frames), then per frame. */
	for (size_t i = 0; i < p->n_funcs; i++) {
		const struct view_func *f = &p->funcs[i];
		uint64_t h = idhash_combine(idhash_bytes(f->name,
							 strlen(f->name)),
					    idhash_bytes(f->file,
							 strlen(f->file)));
		fhash[i] = h;
		if (k->by == VIEW_BY_FUNCTION &&
		    key_intern(k, idhash_combine(h, (uint64_t)f->start_line),
			       f->name, f->file, f->start_line, &fkey[i]) < 0)
			goto out;
	}
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct view_frame *fr = &p->frames[i];
		const struct view_func *f = &p->funcs[fr->func];
		if (k->by == VIEW_BY_FUNCTION)
			map[i] = fkey[fr->func];
		else if (key_intern(k, idhash_combine(fhash[fr->func], (uint64_t)fr->line),
				    f->name, f->file, fr->line, &map[i]) < 0)
			goto out;
	}
	*of_frame = map;
	map = NULL;
	rc = 0;
out:
	free(fkey);
	free(fhash);
	free(map);
	return rc;
}

static const struct view_keys *rank_keys; /* qsort has no context */

static int cmp_key(const void *a, const void *b)
{
	const struct view_key *x = &rank_keys->v[*(const uint32_t *)a];
	const struct view_key *y = &rank_keys->v[*(const uint32_t *)b];
	int c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->file, y->file);
	if (!c)
		c = x->line < y->line ? -1 : x->line > y->line;
	return c;
}

uint32_t *view_keys_rank(const struct view_keys *k)
{
	uint32_t *order = malloc(k->n * sizeof(*order) + 1);
	uint32_t *rank = malloc(k->n * sizeof(*rank) + 1);

	if (!order || !rank) {
		free(order);
		free(rank);
		return NULL;
	}
	for (size_t i = 0; i < k->n; i++)
		order[i] = (uint32_t)i;
	rank_keys = k;
	qsort(order, k->n, sizeof(*order), cmp_key);
	rank_keys = NULL;
	for (size_t i = 0; i < k->n; i++)
		rank[order[i]] = (uint32_t)i;
	free(order);
	return rank;
}

/* ---- formatting --------------------------------------------------------------- */

static double time_scale(const char *unit)
{
	if (!strcmp(unit, "nanoseconds") || !strcmp(unit, "ns"))
		return 1;
	if (!strcmp(unit, "microseconds") || !strcmp(unit, "us"))
		return 1e3;
	if (!strcmp(unit, "milliseconds") || !strcmp(unit, "ms"))
		return 1e6;
	if (!strcmp(unit, "seconds") || !strcmp(unit, "s"))
		return 1e9;
	return 0;
}

int view_unit_is_time(const char *unit)
{
	return time_scale(unit) != 0;
}

/* Three significant digits. */
static void fmt3(char *buf, size_t n, double x, const char *suffix)
{
	double a = fabs(x);
	if (a >= 99.95)
		snprintf(buf, n, "%.0f%s", x, suffix);
	else if (a >= 9.995)
		snprintf(buf, n, "%.1f%s", x, suffix);
	else
		snprintf(buf, n, "%.2f%s", x, suffix);
}

const char *view_fmt_value(char *buf, size_t n, int64_t v, const char *unit)
{
	double scale = time_scale(unit);
	double ns, a;

	if (v == 0) {
		snprintf(buf, n, "0");
		return buf;
	}
	if (scale) {
		ns = (double)v * scale;
		a = fabs(ns);
		if (a >= 1e9)
			fmt3(buf, n, ns / 1e9, "s");
		else if (a >= 1e6)
			fmt3(buf, n, ns / 1e6, "ms");
		else if (a >= 1e3)
			fmt3(buf, n, ns / 1e3, "us");
		else
			snprintf(buf, n, "%.0fns", ns);
		return buf;
	}
	if (!strcmp(unit, "bytes")) {
		a = fabs((double)v);
		if (a >= 1024.0 * 1024 * 1024)
			fmt3(buf, n, (double)v / (1024.0 * 1024 * 1024), "GB");
		else if (a >= 1024.0 * 1024)
			fmt3(buf, n, (double)v / (1024.0 * 1024), "MB");
		else if (a >= 1024.0)
			fmt3(buf, n, (double)v / 1024.0, "kB");
		else
			snprintf(buf, n, "%" PRId64 "B", v);
		return buf;
	}
	snprintf(buf, n, "%" PRId64, v);
	return buf;
}
