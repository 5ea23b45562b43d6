/*
 * view_top.c - `pyprof top`: the table of functions (or lines) with flat
 * and cumulative values, the summary by label, and the per-opcode table.
 *
 * Flat is the value of samples whose leaf frame is the key; cum the value
 * of samples with the key anywhere on the stack, counted once per sample
 * however often recursion repeats it (a stamp per key remembers the last
 * sample that counted). Percentages are of the total of the samples shown
 * (after --tag filtering), as in `go tool pprof -top`.
 *
 * The opcode table groups samples by their "opcode" label (the collector
 * writes it when the library ran with PYPROF_OPCODES=1) and names, for
 * each opcode, the leaf functions that ran it most.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "views/view_stats.h"

#define TOP_VALUE_W 10
#define TOP_HOT_FUNCS 3
#define TOP_OPCODE_W 28 /* the opcode column at least, wider for longer names */
#define TOP_MAX_LABEL 256

/* The values of the label time (--split): python, native, system. */
#define TOP_KINDS 3
static const char *const top_kind[TOP_KINDS] = { "python", "native",
						 "system" };

struct row {
	uint32_t key;
	int64_t flat, cum;
	int64_t count;		     /* samples, for label and opcode tables */
	int64_t kind_cum[TOP_KINDS]; /* --split */
};

/* Which of top_kind s's time label names, or -1. */
static int sample_kind(const struct view_sample *s)
{
	char buf[16];
	const char *v = view_sample_label(s, "time", buf, sizeof(buf));

	for (int k = 0; v && k < TOP_KINDS; k++)
		if (!strcmp(v, top_kind[k]))
			return k;
	return -1;
}

static enum view_top_sort sort_by;
static const struct view_keys *sort_keys;

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int64_t kx = sort_by == VIEW_SORT_CUM ? x->cum : x->flat;
	int64_t ky = sort_by == VIEW_SORT_CUM ? y->cum : y->flat;
	int64_t ox = sort_by == VIEW_SORT_CUM ? x->flat : x->cum;
	int64_t oy = sort_by == VIEW_SORT_CUM ? y->flat : y->cum;
	int c;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (ox != oy)
		return ox > oy ? -1 : 1;
	c = strcmp(sort_keys->v[x->key].name, sort_keys->v[y->key].name);
	if (c)
		return c;
	c = strcmp(sort_keys->v[x->key].file, sort_keys->v[y->key].file);
	if (c)
		return c;
	return sort_keys->v[x->key].line < sort_keys->v[y->key].line ? -1 : 1;
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* "file:line", "file", or "" for a key. */
static void key_where(const struct view_key *k, char *buf, size_t n)
{
	if (k->file[0] && k->line > 0)
		snprintf(buf, n, "%s:%" PRId64, k->file, k->line);
	else
		snprintf(buf, n, "%s", k->file);
}

static void header(FILE *out, const struct view_profile *p, size_t type,
		   int64_t total, int64_t n_samples, int count_type)
{
	const struct view_type *t = &p->types[type];
	char buf[32];

	fprintf(out, "Type: %s (%s), total %s", t->type, t->unit,
		view_fmt_value(buf, sizeof(buf), total, t->unit));
	if (count_type == (int)type)
		fprintf(out, " samples");
	else if (count_type >= 0)
		fprintf(out, " in %" PRId64 " samples", n_samples);
	fprintf(out, "\n");
}

/* ---- functions and lines --------------------------------------------------------- */

/* "[ 9.10, 11.20]": the interval of share v/total from n samples. */
static void interval(FILE *out, int64_t v, int64_t total, int64_t n, double z)
{
	double lo, hi;

	stats_wilson(total ? (double)v / (double)total : 0, (double)n, z, &lo,
		     &hi);
	fprintf(out, " [%6.2f,%6.2f]", 100 * lo, 100 * hi);
}

/* top_keys' table: the header, then the first rows (sorted, n_rows of
 * them) with their shares of total, intervals from n_samples, and
 * --split's columns as o asks. */
static void top_table(FILE *out, const struct view_profile *p, size_t type,
		      int count_type, const struct view_top_opts *o,
		      const struct view_keys *keys, const struct row *rows,
		      size_t n_rows, int64_t total, int64_t n_samples)
{
	int64_t sum = 0;
	size_t shown;
	const char *unit = p->types[type].unit;
	char a[32], b[32], where[4096];
	double z = o->level > 0 ? stats_z(o->level) : 0;

	shown = o->n_rows && o->n_rows < n_rows ? o->n_rows : n_rows;
	header(out, p, type, total, n_samples, count_type);
	fprintf(out, "Showing %zu of %zu %s, sorted by %s\n", shown, n_rows,
		o->by == VIEW_BY_LINE ? "lines" : "functions",
		o->sort == VIEW_SORT_CUM ? "cum" : "flat");
	if (o->level > 0)
		fprintf(out, "Intervals: %g%%, of each share, from %" PRId64 " samples taken as independent (docs/reading.md)\n",
			100 * o->level, n_samples);
	fprintf(out, "%*s %7s %7s %*s %7s", TOP_VALUE_W, "flat", "flat%",
		"sum%", TOP_VALUE_W, "cum", "cum%");
	if (o->level > 0)
		fprintf(out, " %15s %15s", "flat% interval", "cum% interval");
	if (o->split)
		fprintf(out, " %7s %7s %7s", "python", "native", "system");
	fprintf(out, "  %s\n", o->by == VIEW_BY_LINE ? "line" : "function");
	for (size_t i = 0; i < shown; i++) {
		const struct view_key *k = &keys->v[rows[i].key];
		sum += rows[i].flat;
		key_where(k, where, sizeof(where));
		fprintf(out, "%*s %6.2f%% %6.2f%% %*s %6.2f%%", TOP_VALUE_W,
			view_fmt_value(a, sizeof(a), rows[i].flat, unit),
			pct(rows[i].flat, total), pct(sum, total), TOP_VALUE_W,
			view_fmt_value(b, sizeof(b), rows[i].cum, unit),
			pct(rows[i].cum, total));
		if (o->level > 0) {
			interval(out, rows[i].flat, total, n_samples, z);
			interval(out, rows[i].cum, total, n_samples, z);
		}
		for (int kk = 0; o->split && kk < TOP_KINDS; kk++)
			fprintf(out, " %6.2f%%", pct(rows[i].kind_cum[kk], total));
		fprintf(out, "  %s%s%s\n", k->name, where[0] ? "  " : "", where);
	}
}

static int top_keys(FILE *out, const struct view_profile *p, size_t type,
		    int count_type, const struct view_top_opts *o, char *err)
{
	struct view_keys keys;
	uint32_t *kmap = NULL, *stamp = NULL;
	struct row *rows = NULL;
	int64_t total = 0, n_samples = 0;
	size_t n_rows = 0;
	int rc = -ENOMEM;

	view_keys_init(&keys, o->by);
	if (o->level > 0 && count_type < 0) {
		/* A heap or block profile's values are no count of equal
		 * samples: there is no sampling variance to speak of. */
		snprintf(err, ERR_LEN, "intervals need a profile with "
				       "a samples/count type (CPU or wall)");
		rc = -ENOENT;
		goto out;
	}
	if (view_keys_map(&keys, p, &kmap) < 0)
		goto out;
	rows = calloc(keys.n + 1, sizeof(*rows));
	stamp = calloc(keys.n + 1, sizeof(*stamp));
	if (!rows || !stamp)
		goto out;
	for (size_t i = 0; i < keys.n; i++)
		rows[i].key = (uint32_t)i;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t v = s->values[type];
		if (o->filter && !view_sample_matches(s, o->filter))
			continue;
		total += v;
		if (count_type >= 0)
			n_samples += s->values[count_type];
		if (s->n_frames == 0)
			continue;
		int kind = o->split ? sample_kind(s) : -1;
		rows[kmap[s->frames[0]]].flat += v;
		for (uint32_t j = 0; j < s->n_frames; j++) {
			uint32_t k = kmap[s->frames[j]];
			if (stamp[k] == i + 1)
				continue; /* recursion: once per sample */
			stamp[k] = (uint32_t)(i + 1);
			rows[k].cum += v;
			if (kind >= 0)
				rows[k].kind_cum[kind] += v;
		}
	}
	/* Keys no sample passing the filter touched are not rows. */
	for (size_t i = 0; i < keys.n; i++)
		if (rows[i].flat || rows[i].cum)
			rows[n_rows++] = rows[i];
	sort_by = o->sort;
	sort_keys = &keys;
	qsort(rows, n_rows, sizeof(*rows), cmp_row);
	sort_keys = NULL;

	top_table(out, p, type, count_type, o, &keys, rows, n_rows, total,
		  n_samples);
	rc = 0;
out:
	free(rows);
	free(stamp);
	free(kmap);
	view_keys_fini(&keys);
	return rc;
}

/* ---- by label and by opcode -------------------------------------------------------- */

/* A small string -> row table; label values are few (pids, threads,
 * opcodes), so a linear list with a hash would be overkill: a sorted
 * insert is not needed either, rows are sorted at the end. */
struct lrow {
	char *name;
	int64_t value, count;
	/* opcode table: value per leaf function key */
	int64_t *per_key;
};

struct ltable {
	struct lrow *v;
	size_t n, cap;
	size_t n_keys; /* per_key length, 0 if unused */
};

static struct lrow *ltable_get(struct ltable *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	if (grow_array(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 32) < 0)
		return NULL;
	struct lrow *r = &t->v[t->n];
	memset(r, 0, sizeof(*r));
	r->name = strdup(name);
	if (t->n_keys)
		r->per_key = calloc(t->n_keys, sizeof(int64_t));
	if (!r->name || (t->n_keys && !r->per_key)) {
		free(r->name);
		free(r->per_key);
		return NULL;
	}
	t->n++;
	return r;
}

static void ltable_fini(struct ltable *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].name);
		free(t->v[i].per_key);
	}
	free(t->v);
}

static int cmp_lrow(const void *a, const void *b)
{
	const struct lrow *x = a, *y = b;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* What the label tables add up. */
struct tally {
	size_t type;
	int count_type; /* -1: no count of samples */
	int64_t total;	/* of the samples passing the filter */
	int64_t n_samples;
	int64_t with; /* of those with the label */
	int any;      /* a sample has the label */
};

/* Adds each sample passing the filter to the row of its label key's value
 * in t (to the row none when it has no such label, or to no row when none
 * is NULL) and to the leaf function's share of that row when t has
 * per-key values (kmap). 0 or -ENOMEM. */
static int tally_label(struct ltable *t, struct tally *y,
		       const struct view_profile *p,
		       const struct view_filter *filter, const char *key,
		       const char *none, const uint32_t *kmap)
{
	char buf[TOP_MAX_LABEL];

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t v = s->values[y->type];
		const char *lv;
		struct lrow *r;
		if (filter && !view_sample_matches(s, filter))
			continue;
		y->total += v;
		if (y->count_type >= 0)
			y->n_samples += s->values[y->count_type];
		lv = view_sample_label(s, key, buf, sizeof(buf));
		y->any |= lv != NULL;
		if (!lv && !none)
			continue;
		r = ltable_get(t, lv ? lv : none);
		if (!r)
			return -ENOMEM;
		y->with += lv ? v : 0;
		r->value += v;
		if (y->count_type >= 0)
			r->count += s->values[y->count_type];
		if (t->n_keys && s->n_frames)
			r->per_key[kmap[s->frames[0]]] += v;
	}
	return 0;
}

static int top_label(FILE *out, const struct view_profile *p, size_t type,
		     int count_type, const struct view_top_opts *o, char *err)
{
	struct ltable t = { 0 };
	struct tally y = { .type = type, .count_type = count_type };
	const char *unit = p->types[type].unit;
	char a[32];
	size_t shown;
	int rc;

	rc = tally_label(&t, &y, p, o->filter, o->by_label, "(none)", NULL);
	if (rc < 0)
		goto out;
	if (!y.any) {
		snprintf(err, ERR_LEN, "no sample has a label '%s'",
			 o->by_label);
		rc = -ENOENT;
		goto out;
	}
	qsort(t.v, t.n, sizeof(*t.v), cmp_lrow);
	shown = o->n_rows && o->n_rows < t.n ? o->n_rows : t.n;
	header(out, p, type, y.total, y.n_samples, count_type);
	fprintf(out, "Showing %zu of %zu values of label %s\n", shown, t.n,
		o->by_label);
	fprintf(out, "%*s %7s %10s  %s\n", TOP_VALUE_W, p->types[type].type,
		"%", count_type >= 0 ? "samples" : "", o->by_label);
	for (size_t i = 0; i < shown; i++) {
		char cnt[24] = "";
		if (count_type >= 0)
			snprintf(cnt, sizeof(cnt), "%" PRId64, t.v[i].count);
		fprintf(out, "%*s %6.2f%% %10s  %s\n", TOP_VALUE_W,
			view_fmt_value(a, sizeof(a), t.v[i].value, unit),
			pct(t.v[i].value, y.total), cnt, t.v[i].name);
	}
	rc = 0;
out:
	ltable_fini(&t);
	return rc;
}

/* The hottest leaf functions of one opcode, "f (61%), g (30%)". */
static void hot_funcs(const struct lrow *r, const struct view_keys *keys,
		      char *buf, size_t n)
{
	size_t len = 0;
	uint32_t best[TOP_HOT_FUNCS];
	size_t n_best = 0;

	for (size_t k = 0; k < keys->n; k++) {
		int64_t v = r->per_key[k];
		size_t j = n_best, m;
		if (v <= 0)
			continue;
		/* Insertion into a tiny list sorted by value, largest first. */
		while (j > 0 && r->per_key[best[j - 1]] < v)
			j--;
		if (j >= TOP_HOT_FUNCS)
			continue;
		m = n_best < TOP_HOT_FUNCS ? n_best : TOP_HOT_FUNCS - 1;
		for (; m > j; m--)
			best[m] = best[m - 1];
		best[j] = (uint32_t)k;
		if (n_best < TOP_HOT_FUNCS)
			n_best++;
	}
	buf[0] = 0;
	for (size_t i = 0; i < n_best && len < n; i++) {
		const struct view_key *k = &keys->v[best[i]];
		const char *base = strrchr(k->file, '/');
		int twin = 0, w;
		/* Two "<module>"s say which file each is. */
		for (size_t j = 0; j < n_best; j++)
			twin |= j != i && !strcmp(keys->v[best[j]].name, k->name);
		base = base ? base + 1 : k->file;
		w = snprintf(buf + len, n - len, "%s%s%s%s (%.0f%%)",
			     i ? ", " : "", k->name, twin ? " " : "",
			     twin ? base : "", pct(r->per_key[best[i]], r->value));
		if (w < 0)
			break;
		len += (size_t)w;
	}
}

static int top_opcode(FILE *out, const struct view_profile *p, size_t type,
		      int count_type, const struct view_top_opts *o, char *err)
{
	struct view_keys keys;
	struct ltable t = { 0 };
	struct tally y = { .type = type, .count_type = count_type };
	uint32_t *kmap = NULL;
	const char *unit = p->types[type].unit;
	char a[32], hot[1024];
	size_t shown;
	int rc = -ENOMEM, name_w = TOP_OPCODE_W;

	view_keys_init(&keys, VIEW_BY_FUNCTION);
	if (view_keys_map(&keys, p, &kmap) < 0)
		goto out;
	t.n_keys = keys.n + 1;
	rc = tally_label(&t, &y, p, o->filter, "opcode", NULL, kmap);
	if (rc < 0)
		goto out;
	if (t.n == 0) {
		snprintf(err, ERR_LEN, "no sample has an opcode label "
				       "(record with PYPROF_OPCODES=1)");
		rc = -ENOENT;
		goto out;
	}
	qsort(t.v, t.n, sizeof(*t.v), cmp_lrow);
	shown = o->n_rows && o->n_rows < t.n ? o->n_rows : t.n;
	/* The column as wide as the longest name shown (3.11's
	 * PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS is 43 bytes), so
	 * "hottest in" starts at one place on every line. */
	for (size_t i = 0; i < shown; i++)
		if (strlen(t.v[i].name) > (size_t)name_w)
			name_w = (int)strlen(t.v[i].name);
	header(out, p, type, y.total, y.n_samples, count_type);
	fprintf(out, "Showing %zu of %zu opcodes; %.2f%% of the total has an "
		     "opcode (samples in Python code)\n",
		shown, t.n,
		pct(y.with, y.total));
	fprintf(out, "%*s %7s %8s  %-*s %s\n", TOP_VALUE_W,
		p->types[type].type, "share", count_type >= 0 ? "samples" : "",
		name_w, "opcode", "hottest in");
	for (size_t i = 0; i < shown; i++) {
		char cnt[24] = "";
		if (count_type >= 0)
			snprintf(cnt, sizeof(cnt), "%" PRId64, t.v[i].count);
		hot_funcs(&t.v[i], &keys, hot, sizeof(hot));
		fprintf(out, "%*s %6.2f%% %8s  %-*s %s\n", TOP_VALUE_W,
			view_fmt_value(a, sizeof(a), t.v[i].value, unit),
			pct(t.v[i].value, y.total), cnt, name_w, t.v[i].name,
			hot);
	}
	rc = 0;
out:
	ltable_fini(&t);
	free(kmap);
	view_keys_fini(&keys);
	return rc;
}

int view_top(FILE *out, const struct view_profile *p,
	     const struct view_top_opts *o, char *err)
{
	size_t type;
	int count_type, rc;

	err[0] = 0;
	if (view_need_type(p, o->sample_type, &type, err) < 0)
		return -ENOENT;
	count_type = view_count_type(p);
	if (o->by_opcode)
		rc = top_opcode(out, p, type, count_type, o, err);
	else if (o->by_label)
		rc = top_label(out, p, type, count_type, o, err);
	else
		rc = top_keys(out, p, type, count_type, o, err);
	if (rc == -ENOMEM && !err[0])
		snprintf(err, ERR_LEN, "out of memory");
	if (rc == 0 && ferror(out)) {
		snprintf(err, ERR_LEN, "write error");
		rc = -EIO;
	}
	return rc;
}
