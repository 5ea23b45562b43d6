/*
 * view_diff.c - `pyprof diff BASE NEW`: what changed between two profiles.
 *
 * Both profiles' frames are keyed in one view_keys, so a function is the
 * same row (and the same flame-graph frame) in both when its name and file
 * match. Shares are of each profile's own total, so a longer or busier run
 * does not make everything look like it grew: the question is where the
 * time went, not how much there was. For heap profiles the question is how
 * much: they compare values in the type's unit (bytes, objects) by
 * default, as go tool pprof -diff_base does; either way on request.
 *
 * The table sorts by the change of cumulative share, largest first in
 * either direction (what a person asking "what got slower" looks for
 * first: a caller whose whole subtree grew by 17 points, not a leaf that
 * moved by a quarter), and shows the change of flat share beside it;
 * --sort flat sorts by the latter, as go tool pprof's top does. The flame graph has NEW's shape (widths are NEW's values) and
 * colours each frame by the change of its cumulative share: red grew,
 * blue shrank, the strongest change saturated; a stack only BASE had is
 * not drawn (it has no width in NEW) but shows up in the table.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "views/view_flame.h"
#include "views/view_tree.h"

#define DIFF_DEFAULT_ROWS 20

struct drow {
	uint32_t key;
	int64_t flat[2], cum[2];
	double dflat, dcum; /* change of share, in points */
};

static int pick(const struct view_profile *p, const char *name, size_t *type,
		const char *which, char *err)
{
	if (view_pick_type(p, name, type) == 0)
		return 0;
	snprintf(err, ERR_LEN, "the %s profile has no sample type '%s'",
		 which, name);
	return -ENOENT;
}

/* Same type in both: by name, or the default type of base looked up in
 * cur (so a cpu profile is compared with a cpu profile). */
static int pick_types(const struct view_profile *base,
		      const struct view_profile *cur, const char *name,
		      size_t type[2], char *err)
{
	int rc = pick(base, name, &type[0], "base", err);
	if (rc < 0)
		return rc;
	if (!name || !name[0])
		name = base->types[type[0]].type;
	return pick(cur, name, &type[1], "new", err);
}

/* Whether the diff compares values (else shares) for type t. */
static int by_values(const struct view_diff_opts *o, const struct view_type *t)
{
	if (o->compare != VIEW_DIFF_AUTO)
		return o->compare == VIEW_DIFF_VALUES;
	/* heap: bytes and objects are no budget to share; waits: a change
	 * that shortens every wait alike would show as no change of share */
	return !strncmp(t->type, "alloc_", 6) || !strncmp(t->type, "inuse_", 6) ||
	       !strncmp(t->type, "peak_", 5) ||
	       (!strcmp(t->type, "delay") && !strcmp(t->unit, "nanoseconds")) ||
	       (!strcmp(t->type, "contentions") && !strcmp(t->unit, "count"));
}

/* A signed value in unit: "+42.0MB", "-3", "0". */
static const char *fmt_change(char *buf, size_t n, int64_t v, const char *unit)
{
	char tmp[30];
	view_fmt_value(tmp, sizeof(tmp), v, unit);
	snprintf(buf, n, "%s%s", v > 0 ? "+" : "", tmp);
	return buf;
}

static void add_flat_cum(struct drow *rows, uint32_t *stamp,
			 const struct view_profile *p, const uint32_t *kmap,
			 size_t type, const struct view_filter *f, int slot,
			 int64_t *total)
{
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t v = s->values[type];
		if (f && !view_sample_matches(s, f))
			continue;
		*total += v;
		if (!s->n_frames)
			continue;
		rows[kmap[s->frames[0]]].flat[slot] += v;
		for (uint32_t j = 0; j < s->n_frames; j++) {
			uint32_t k = kmap[s->frames[j]];
			/* Once per sample: slot 0 stamps i+1, slot 1 ~i, so
			 * the two passes never see each other's marks. */
			uint32_t mark = slot ? ~(uint32_t)i : (uint32_t)i + 1;
			if (stamp[k] == mark)
				continue;
			stamp[k] = mark;
			rows[k].cum[slot] += v;
		}
	}
}

static double pts(int64_t v, int64_t total)
{
	return total > 0 ? 100.0 * (double)v / (double)total : 0.0;
}

/* Larger first of the two changes' sizes, in the order given; then by
 * key, so that equal rows keep one order. */
static int cmp_changes(const struct drow *x, const struct drow *y,
		       double x1, double y1, double x2, double y2)
{
	if (fabs(x1) != fabs(y1))
		return fabs(x1) > fabs(y1) ? -1 : 1;
	if (fabs(x2) != fabs(y2))
		return fabs(x2) > fabs(y2) ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int cmp_drow_flat(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	return cmp_changes(x, y, x->dflat, y->dflat, x->dcum, y->dcum);
}

static int cmp_drow_cum(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	return cmp_changes(x, y, x->dcum, y->dcum, x->dflat, y->dflat);
}

/* What the table is about, for its lines. */
struct dtable {
	FILE *out;
	const struct view_keys *keys;
	const char *type, *unit;
	int64_t total[2];
	int values; /* changes of values, not of shares */
	int by_line;
	int sort_flat; /* --sort flat */
};

/* Keeps the rows that are in either profile, with their changes, largest
 * change first; returns how many. */
static size_t changed_rows(const struct dtable *t, struct drow *rows)
{
	size_t n = 0;

	for (size_t k = 0; k < t->keys->n; k++) {
		struct drow *r = &rows[k];
		if (!r->cum[0] && !r->cum[1] && !r->flat[0] && !r->flat[1])
			continue;
		r->key = (uint32_t)k;
		if (t->values) {
			r->dflat = (double)r->flat[1] - (double)r->flat[0];
			r->dcum = (double)r->cum[1] - (double)r->cum[0];
		} else {
			r->dflat = pts(r->flat[1], t->total[1]) -
				   pts(r->flat[0], t->total[0]);
			r->dcum = pts(r->cum[1], t->total[1]) -
				  pts(r->cum[0], t->total[0]);
		}
		rows[n++] = *r;
	}
	qsort(rows, n, sizeof(*rows),
	      t->sort_flat ? cmp_drow_flat : cmp_drow_cum);
	return n;
}

/* The totals, what is shown, and the column heads. */
static void table_head(const struct dtable *t, size_t shown, size_t n)
{
	const char *what = t->by_line ? "lines" : "functions";
	char a[32], b[32];

	fprintf(t->out, "Type: %s (%s); base total %s, new total %s",
		t->type, t->unit,
		view_fmt_value(a, sizeof(a), t->total[0], t->unit),
		view_fmt_value(b, sizeof(b), t->total[1], t->unit));
	if (t->values)
		fprintf(t->out, ", change %s",
			fmt_change(a, sizeof(a), t->total[1] - t->total[0],
				   t->unit));
	fprintf(t->out, "\n");
	const char *by = t->sort_flat ? "flat" : "cumulative";
	if (t->values)
		fprintf(t->out, "Showing %zu of %zu %s, by change of %s "
				"value (%s; + grew, - shrank)\n",
			shown, n, what, by,
			t->unit);
	else
		fprintf(t->out, "Showing %zu of %zu %s, by change of %s "
				"share (percentage points; + grew, - shrank)\n",
			shown,
			n, what, by);
	fprintf(t->out, t->values ? "%9s %9s %9s  %9s %9s %9s  %s\n" : "%9s %9s %8s  %9s %9s %8s  %s\n",
		"flat base", "flat new", "change", "cum base", "cum new",
		"change", t->by_line ? "line" : "function");
}

/* One row: base, new and change, flat then cumulative, and the name. */
static void table_row(const struct dtable *t, const struct drow *r)
{
	const struct view_key *k = &t->keys->v[r->key];
	const char *unit = t->unit;
	char where[4096];

	if (k->file[0] && k->line > 0)
		snprintf(where, sizeof(where), "  %s:%" PRId64, k->file,
			 k->line);
	else if (k->file[0])
		snprintf(where, sizeof(where), "  %s", k->file);
	else
		where[0] = 0;
	if (t->values) {
		char v[6][32];
		fprintf(t->out, "%9s %9s %9s  %9s %9s %9s  %s%s\n",
			view_fmt_value(v[0], 32, r->flat[0], unit),
			view_fmt_value(v[1], 32, r->flat[1], unit),
			fmt_change(v[2], 32, r->flat[1] - r->flat[0], unit),
			view_fmt_value(v[3], 32, r->cum[0], unit),
			view_fmt_value(v[4], 32, r->cum[1], unit),
			fmt_change(v[5], 32, r->cum[1] - r->cum[0], unit),
			k->name, where);
		return;
	}
	fprintf(t->out, "%8.2f%% %8.2f%% %+8.2f  %8.2f%% %8.2f%% %+8.2f  "
			"%s%s\n",
		pts(r->flat[0], t->total[0]),
		pts(r->flat[1], t->total[1]), r->dflat,
		pts(r->cum[0], t->total[0]), pts(r->cum[1], t->total[1]),
		r->dcum, k->name, where);
}

int view_diff_table(FILE *out, const struct view_profile *base,
		    const struct view_profile *cur,
		    const struct view_diff_opts *o, char *err)
{
	struct view_keys keys;
	uint32_t *km[2] = { NULL, NULL }, *stamp = NULL;
	struct drow *rows = NULL;
	struct dtable t = { .out = out, .keys = &keys, .by_line = o->by == VIEW_BY_LINE };
	size_t type[2], n, shown, want;
	int rc;

	err[0] = 0;
	if ((rc = pick_types(base, cur, o->sample_type, type, err)) < 0)
		return rc;
	t.values = by_values(o, &base->types[type[0]]);
	t.sort_flat = o->sort == VIEW_SORT_FLAT;
	t.type = base->types[type[0]].type;
	t.unit = base->types[type[0]].unit;
	view_keys_init(&keys, o->by);
	rc = -ENOMEM;
	if (view_keys_map(&keys, base, &km[0]) < 0 ||
	    view_keys_map(&keys, cur, &km[1]) < 0)
		goto out;
	rows = calloc(keys.n + 1, sizeof(*rows));
	stamp = calloc(keys.n + 1, sizeof(*stamp));
	if (!rows || !stamp)
		goto out;
	add_flat_cum(rows, stamp, base, km[0], type[0], o->filter, 0,
		     &t.total[0]);
	add_flat_cum(rows, stamp, cur, km[1], type[1], o->filter, 1,
		     &t.total[1]);
	n = changed_rows(&t, rows);
	want = o->n_rows ? o->n_rows : DIFF_DEFAULT_ROWS;
	shown = want < n ? want : n;
	table_head(&t, shown, n);
	for (size_t i = 0; i < shown; i++)
		table_row(&t, &rows[i]);
	rc = ferror(out) ? -EIO : 0;
out:
	view_errno_text(rc, err);
	free(rows);
	free(stamp);
	free(km[0]);
	free(km[1]);
	view_keys_fini(&keys);
	return rc;
}

int view_diff_flame(FILE *out, const struct view_profile *base,
		    const struct view_profile *cur,
		    const struct view_diff_opts *o, char *err)
{
	struct view_keys keys;
	struct view_tree tree;
	struct flame_spec s = { 0 };
	uint32_t *km[2] = { NULL, NULL };
	size_t type[2];
	char sub[256], a[32], b[32];
	int rc, values;

	err[0] = 0;
	if ((rc = pick_types(base, cur, o->sample_type, type, err)) < 0)
		return rc;
	view_keys_init(&keys, o->by);
	rc = view_tree_init(&tree);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	if (view_keys_map(&keys, base, &km[0]) < 0 ||
	    view_keys_map(&keys, cur, &km[1]) < 0)
		goto out;
	rc = view_tree_add_profile(&tree, base, km[0], o->filter,
				   (int[2]){ (int)type[0], -1 });
	if (rc == 0)
		rc = view_tree_add_profile(&tree, cur, km[1], o->filter,
					   (int[2]){ -1, (int)type[1] });
	if (rc < 0)
		goto out;
	values = by_values(o, &cur->types[type[1]]);
	snprintf(sub, sizeof(sub), "%s: new total %s, base total %s; red: "
				   "%s grew, blue: %s shrank (widths: new)",
		 cur->types[type[1]].type,
		 view_fmt_value(a, sizeof(a), tree.v[0].total[1],
				cur->types[type[1]].unit),
		 view_fmt_value(b, sizeof(b), tree.v[0].total[0],
				base->types[type[0]].unit),
		 values ? "value" : "share", values ? "value" : "share");
	s.tree = &tree;
	s.keys = &keys;
	s.unit = cur->types[type[1]].unit;
	s.type = cur->types[type[1]].type;
	s.count_slot = -1;
	s.diff = 1;
	s.diff_values = values;
	s.min_width = VIEW_FLAME_MIN_WIDTH;
	s.title = "Differential flame graph";
	s.subtitle = sub;
	rc = flame_write(out, &s);
out:
	view_errno_text(rc, err);
	free(km[0]);
	free(km[1]);
	view_tree_fini(&tree);
	view_keys_fini(&keys);
	return rc;
}
