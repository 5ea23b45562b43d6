/*
 * view_difftest.c - `pyprof diff --test BEFORE... -- AFTER...`: which
 * changes of share are more than sampling noise, per function, with the
 * family of functions compared corrected for (docs/reading.md, "Intervals
 * and tested diffs").
 *
 * Each profile gives each function a share (flat or cumulative, of that
 * profile's total) and a number of samples. The variance of a side's mean
 * share comes from:
 *   - one profile a side: the binomial variance of a share of n samples,
 *     the test's standard error pooled under the null (both sides share
 *     one p), the interval's not;
 *   - several on both sides: the variance between that side's runs
 *     (Welch's t, Satterthwaite's degrees of freedom), which holds what
 *     changes from run to run besides sampling (the program's own
 *     variation, the machine's);
 *   - several on one side only: that side's variance between runs for
 *     both (t with its runs less one degrees of freedom).
 * A between-run variance is never taken below the binomial variance of
 * one run: two or three runs that happen to agree closely must not make
 * a difference of a few samples "real".
 *
 * The family: functions whose mean share over both sides is at least
 * DIFFTEST_MIN_SHARE. The filter looks at the sum of both sides, not at
 * the change, so it does not pick the functions that moved (independent
 * filtering); it keeps the dozens of functions of a few samples each,
 * which no test could call changed, from diluting Holm's correction.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "views/view_stats.h"

#define DIFFTEST_MIN_SHARE 0.005
#define DIFFTEST_DEFAULT_ROWS 20

struct trow {
	uint32_t key;
	double mean[2];
	double d, lo, hi, pval;
	int tested, real;
};

/* One profile's share of every key (flat or cumulative) into share, its
 * number of samples into *n. */
static int profile_shares(const struct view_profile *p, struct view_keys *keys,
			  const struct view_filter *filter, int flat,
			  const char *type_name, double **share, double *n,
			  char *err)
{
	uint32_t *kmap = NULL, *stamp = NULL;
	int64_t *v = NULL, total = 0, count = 0;
	size_t type;
	int ct = view_count_type(p);
	double *sh;

	if (view_pick_type(p, type_name, &type) < 0) {
		snprintf(err, ERR_LEN, "a profile has no sample type "
				       "'%s'",
			 type_name);
		return -ENOENT;
	}
	if (ct < 0) {
		snprintf(err, ERR_LEN, "--test needs profiles with a "
				       "samples/count type (CPU or wall): a heap, block or "
				       "mutex profile's values are no count of samples");
		return -ENOENT;
	}
	if (view_keys_map(keys, p, &kmap) < 0)
		return -ENOMEM;
	/* keys grew: the arrays are as long as all keys so far */
	v = calloc(keys->n + 1, sizeof(*v));
	stamp = calloc(keys->n + 1, sizeof(*stamp));
	sh = calloc(keys->n + 1, sizeof(*sh));
	if (!v || !stamp || !sh) {
		free(kmap);
		free(v);
		free(stamp);
		free(sh);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t x = s->values[type];
		if (filter && !view_sample_matches(s, filter))
			continue;
		total += x;
		count += s->values[ct];
		for (uint32_t j = 0; j < s->n_frames && (!flat || j == 0);
		     j++) {
			uint32_t k = kmap[s->frames[j]];
			if (stamp[k] == i + 1)
				continue; /* recursion: once per sample */
			stamp[k] = (uint32_t)(i + 1);
			v[k] += x;
		}
	}
	for (size_t k = 0; k < keys->n; k++)
		sh[k] = total > 0 ? (double)v[k] / (double)total : 0;
	*share = sh;
	*n = (double)count;
	free(kmap);
	free(v);
	free(stamp);
	return 0;
}

/* The shares of every key in each of n_prof profiles (sh[r], as long as
 * keys->n + 1 once all are read: a key first seen in a later profile is
 * past the end of the earlier profiles' arrays, and those saw none of
 * it) and their numbers of samples (n[r]). */
static int all_shares(const struct view_profile *const *prof, size_t n_prof,
		      struct view_keys *keys, const struct view_filter *filter,
		      int flat, const char *type_name, double **sh, double *n,
		      char *err)
{
	size_t *nk = calloc(n_prof, sizeof(*nk));
	int rc = -ENOMEM;

	if (!nk)
		return rc;
	for (size_t r = 0; r < n_prof; r++) {
		rc = profile_shares(prof[r], keys, filter, flat, type_name,
				    &sh[r], &n[r], err);
		if (rc < 0)
			goto out;
		nk[r] = keys->n;
	}
	rc = -ENOMEM;
	for (size_t r = 0; r < n_prof; r++) {
		double *x = realloc(sh[r], (keys->n + 1) * sizeof(*x));
		if (!x)
			goto out;
		for (size_t k = nk[r]; k <= keys->n; k++)
			x[k] = 0;
		sh[r] = x;
	}
	rc = 0;
out:
	free(nk);
	return rc;
}

/* A side's runs for key k: the mean share, the variance of one run's share
 * (between runs when there are several, NAN for one run) and the binomial
 * variance of one run. */
struct side_stat {
	double mean, var, binom, n;
	size_t runs;
};

static struct side_stat side_of(double *const *sh, const double *n,
				size_t runs, size_t k)
{
	struct side_stat s = { .runs = runs, .var = NAN };

	for (size_t r = 0; r < runs; r++) {
		s.mean += sh[r][k] / (double)runs;
		s.n += n[r] / (double)runs;
	}
	s.binom = s.n > 0 ? s.mean * (1 - s.mean) / s.n : 0;
	if (runs >= 2) {
		double ss = 0;
		for (size_t r = 0; r < runs; r++)
			ss += (sh[r][k] - s.mean) * (sh[r][k] - s.mean);
		s.var = ss / (double)(runs - 1);
		if (s.var < s.binom)
			s.var = s.binom;
	}
	return s;
}

/* The test and interval of one key's change (after minus before). */
static void test_key(struct trow *t, const struct side_stat *b,
		     const struct side_stat *a, double level, double z)
{
	double se, q;

	t->mean[0] = b->mean;
	t->mean[1] = a->mean;
	t->d = a->mean - b->mean;
	if (b->runs == 1 && a->runs == 1) {
		double pbar = (b->mean * b->n + a->mean * a->n) / (b->n + a->n);
		double se0 = sqrt(pbar * (1 - pbar) * (1 / b->n + 1 / a->n));
		t->pval = se0 > 0 ? stats_p_normal(t->d / se0) : t->d == 0;
		se = sqrt(b->binom + a->binom);
		q = z;
	} else {
		double vb = b->var, va = a->var, df;
		if (b->runs == 1) {
			vb = va > b->binom ? va : b->binom;
			df = (double)a->runs - 1;
		} else if (a->runs == 1) {
			va = vb > a->binom ? vb : a->binom;
			df = (double)b->runs - 1;
		} else {
			double xb = vb / (double)b->runs;
			double xa = va / (double)a->runs;
			df = (xb + xa) * (xb + xa) /
			     (xb * xb / (double)(b->runs - 1) +
			      xa * xa / (double)(a->runs - 1));
		}
		se = sqrt(vb / (double)b->runs + va / (double)a->runs);
		t->pval = se > 0 ? stats_p_t(t->d / se, df) : t->d == 0;
		q = se > 0 ? stats_t(level, df) : 0;
	}
	t->lo = t->d - q * se;
	t->hi = t->d + q * se;
}

static int cmp_trow(const void *x_, const void *y_)
{
	const struct trow *x = x_, *y = y_;

	if (x->real != y->real)
		return x->real ? -1 : 1;
	if (fabs(x->d) != fabs(y->d))
		return fabs(x->d) > fabs(y->d) ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static void print_row(FILE *out, const struct view_keys *keys,
		      const struct trow *t, int fails)
{
	const struct view_key *k = &keys->v[t->key];
	char where[4096] = "";

	if (k->file[0] && k->line > 0)
		snprintf(where, sizeof(where), "  %s:%" PRId64, k->file,
			 k->line);
	else if (k->file[0])
		snprintf(where, sizeof(where), "  %s", k->file);
	char p[16] = "-"; /* not tested: too small to say */

	if (t->tested)
		snprintf(p, sizeof(p), "%.2g", t->pval);
	fprintf(out, "%c %7.2f%% %7.2f%% %+7.2f  [%+7.2f,%+7.2f]  %8s  %s%s\n",
		t->real ? (fails ? '!' : '*') : ' ', 100 * t->mean[0],
		100 * t->mean[1], 100 * t->d, 100 * t->lo, 100 * t->hi, p,
		k->name, where);
}

/* Whether a real change fails the test (exit status 1). */
static int fails(const struct trow *t, const struct view_diff_opts *o)
{
	if (!t->real)
		return 0;
	return o->fail_on_increase < 0 || 100 * t->d >= o->fail_on_increase;
}

/* Each of n_keys keys' test (rows[0..], those with a share on either
 * side): before's runs are sh[0..n_before), after's the n_after next.
 * The p-values of those tested go to pv, *n_tested of them (which starts
 * at 0). Returns how many rows. */
static size_t test_keys(struct trow *rows, size_t n_keys, double *const *sh,
			const double *n, size_t n_before, size_t n_after,
			double level, double z, double *pv, size_t *n_tested)
{
	size_t n_rows = 0;

	for (size_t k = 0; k < n_keys; k++) {
		struct side_stat s[2];
		struct trow *t = &rows[n_rows];
		for (int side = 0; side < 2; side++) {
			size_t first = side ? n_before : 0;
			size_t runs = side ? n_after : n_before;
			s[side] = side_of(sh + first, n + first, runs, k);
		}
		if (s[0].mean == 0 && s[1].mean == 0)
			continue;
		memset(t, 0, sizeof(*t));
		t->key = (uint32_t)k;
		test_key(t, &s[0], &s[1], level, z);
		t->tested = (s[0].mean + s[1].mean) / 2 >= DIFFTEST_MIN_SHARE;
		if (t->tested)
			pv[(*n_tested)++] = t->pval;
		n_rows++;
	}
	return n_rows;
}

/* view_diff_test's head: the type and the two sides (side_n samples),
 * the test's description (n_tested keys tested), how many rows are
 * shown, and the columns. */
static void test_head(FILE *out, const struct view_profile *p0, size_t type,
		      size_t n_before, size_t n_after, const double *side_n,
		      const struct view_diff_opts *o, size_t n_tested,
		      size_t shown, size_t n_rows)
{
	double level = o->level;
	int flat = o->sort == VIEW_SORT_FLAT;

	fprintf(out, "Type: %s (%s); before: %zu profile%s, %.0f samples; "
		     "after: %zu profile%s, %.0f samples\n",
		p0->types[type].type,
		p0->types[type].unit, n_before, n_before > 1 ? "s" : "",
		side_n[0], n_after, n_after > 1 ? "s" : "", side_n[1]);
	fprintf(out, "Test: change of %s share (percentage points), %g%% "
		     "intervals, variance %s; Holm's correction over the %zu %s "
		     "with a mean share of at least %.1f%%\n",
		flat ? "flat" : "cumulative", 100 * level,
		n_before == 1 && n_after == 1 ? "binomial (one profile a side)"
		: n_before > 1 && n_after > 1 ? "between runs (Welch's t)"
					      : "between the runs of the side "
						"with several (t)",
		n_tested, o->by == VIEW_BY_LINE ? "lines" : "functions",
		100 * DIFFTEST_MIN_SHARE);
	fprintf(out, "Showing %zu of %zu; real changes first (*; ! where "
		     "they fail the test), by size\n",
		shown, n_rows);
	fprintf(out, "%c %8s %8s %7s  %-17s  %8s  %s\n", ' ', "before",
		"after", "change", "interval", "p", o->by == VIEW_BY_LINE ? "line" : "function");
}

int view_diff_test(FILE *out, const struct view_profile *const *prof,
		   size_t n_before, size_t n_after,
		   const struct view_diff_opts *o, size_t *n_failing, char *err)
{
	struct view_keys keys;
	size_t n_prof = n_before + n_after, type, n_rows = 0, n_tested = 0;
	size_t n_real, n_fail = 0, shown, want;
	double **sh = calloc(n_prof, sizeof(*sh));
	double *n = calloc(n_prof, sizeof(*n)), side_n[2] = { 0, 0 };
	double level = o->level, z = stats_z(level), *pv = NULL;
	struct trow *rows = NULL;
	size_t *order = NULL;
	int *reject = NULL, flat = o->sort == VIEW_SORT_FLAT, rc = -ENOMEM;
	const char *type_name;

	err[0] = 0;
	view_keys_init(&keys, o->by);
	if (!sh || !n)
		goto out;
	if ((rc = view_need_type(prof[0], o->sample_type, &type, err)) < 0)
		goto out;
	type_name = prof[0]->types[type].type;
	rc = all_shares(prof, n_prof, &keys, o->filter, flat, type_name, sh, n,
			err);
	if (rc < 0)
		goto out;
	for (size_t r = 0; r < n_prof; r++)
		side_n[r >= n_before] += n[r];
	rc = -ENOMEM;
	rows = calloc(keys.n + 1, sizeof(*rows));
	pv = calloc(keys.n + 1, sizeof(*pv));
	order = calloc(keys.n + 1, sizeof(*order));
	reject = calloc(keys.n + 1, sizeof(*reject));
	if (!rows || !pv || !order || !reject)
		goto out;
	n_rows = test_keys(rows, keys.n, sh, n, n_before, n_after, level, z, pv,
			   &n_tested);
	n_real = stats_holm(pv, n_tested, 1 - level, order, reject);
	for (size_t i = 0, j = 0; i < n_rows; i++) {
		if (!rows[i].tested)
			continue;
		rows[i].real = reject[j++];
		n_fail += fails(&rows[i], o);
	}
	qsort(rows, n_rows, sizeof(*rows), cmp_trow);

	want = o->n_rows ? o->n_rows : DIFFTEST_DEFAULT_ROWS;
	shown = want > n_real ? want : n_real;
	shown = shown < n_rows ? shown : n_rows;
	test_head(out, prof[0], type, n_before, n_after, side_n, o, n_tested,
		  shown, n_rows);
	for (size_t i = 0; i < shown; i++)
		print_row(out, &keys, &rows[i], fails(&rows[i], o));
	if (o->fail_on_increase >= 0)
		fprintf(out, "%zu real change%s at %g%%, %zu real increase%s "
			     "of at least %g points\n",
			n_real,
			n_real == 1 ? "" : "s", 100 * level, n_fail,
			n_fail == 1 ? "" : "s", o->fail_on_increase);
	else
		fprintf(out, "%zu real change%s at %g%%\n", n_real,
			n_real == 1 ? "" : "s", 100 * level);
	*n_failing = n_fail;
	rc = ferror(out) ? -EIO : 0;
out:
	view_errno_text(rc, err);
	for (size_t r = 0; sh && r < n_prof; r++)
		free(sh[r]);
	free(sh);
	free(n);
	free(rows);
	free(pv);
	free(order);
	free(reject);
	view_keys_fini(&keys);
	return rc;
}

/* ---- pyprof top over several runs ----------------------------------------------- */

struct mrow {
	uint32_t key;
	double mean[2], lo[2], hi[2]; /* flat, cum */
};

static int mrow_by; /* 0 flat, 1 cum */

static int cmp_mrow(const void *x_, const void *y_)
{
	const struct mrow *x = x_, *y = y_;
	int a = mrow_by, b = !mrow_by;

	if (x->mean[a] != y->mean[a])
		return x->mean[a] > y->mean[a] ? -1 : 1;
	if (x->mean[b] != y->mean[b])
		return x->mean[b] > y->mean[b] ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* The mean of key k's shares over the runs and its interval: t with
 * runs - 1 degrees of freedom on the variance between runs, never below
 * one run's binomial variance. */
static void mean_interval(double *const *sh, const double *n, size_t runs,
			  size_t k, double tq, double *mean, double *lo,
			  double *hi)
{
	struct side_stat s = side_of(sh, n, runs, k);
	double half = tq * sqrt(s.var / (double)runs);

	*mean = s.mean;
	*lo = s.mean - half < 0 ? 0 : s.mean - half;
	*hi = s.mean + half > 1 ? 1 : s.mean + half;
}

/* One row of view_top_runs: the mean shares, their intervals, the key. */
static void print_mrow(FILE *out, const struct view_keys *keys,
		       const struct mrow *m)
{
	const struct view_key *k = &keys->v[m->key];
	char where[4096] = "";
	if (k->file[0] && k->line > 0)
		snprintf(where, sizeof(where), "  %s:%" PRId64, k->file,
			 k->line);
	else if (k->file[0])
		snprintf(where, sizeof(where), "  %s", k->file);
	fprintf(out, "%6.2f%% %6.2f%% [%6.2f,%6.2f] [%6.2f,%6.2f]  "
		     "%s%s\n",
		100 * m->mean[0], 100 * m->mean[1], 100 * m->lo[0],
		100 * m->hi[0], 100 * m->lo[1], 100 * m->hi[1], k->name, where);
}

int view_top_runs(FILE *out, const struct view_profile *const *prof,
		  size_t n_prof, const struct view_top_opts *o, char *err)
{
	struct view_keys keys;
	double **sh[2] = { calloc(n_prof, sizeof(double *)),
			   calloc(n_prof, sizeof(double *)) };
	double *n = calloc(n_prof, sizeof(*n)), n_all = 0;
	double tq = stats_t(o->level, (double)n_prof - 1);
	struct mrow *rows = NULL;
	size_t type, n_rows = 0, shown;
	const char *type_name;
	int rc = -ENOMEM;

	err[0] = 0;
	view_keys_init(&keys, o->by);
	if (!sh[0] || !sh[1] || !n)
		goto out;
	if ((rc = view_need_type(prof[0], o->sample_type, &type, err)) < 0)
		goto out;
	type_name = prof[0]->types[type].type;
	for (int c = 0; c < 2 && rc == 0; c++)
		rc = all_shares(prof, n_prof, &keys, o->filter, c == 0,
				type_name, sh[c], n, err);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	rows = calloc(keys.n + 1, sizeof(*rows));
	if (!rows)
		goto out;
	for (size_t r = 0; r < n_prof; r++)
		n_all += n[r];
	for (size_t k = 0; k < keys.n; k++) {
		struct mrow *m = &rows[n_rows];
		for (int c = 0; c < 2; c++)
			mean_interval(sh[c], n, n_prof, k, tq, &m->mean[c],
				      &m->lo[c], &m->hi[c]);
		if (m->mean[0] == 0 && m->mean[1] == 0)
			continue;
		m->key = (uint32_t)k;
		n_rows++;
	}
	mrow_by = o->sort == VIEW_SORT_CUM;
	qsort(rows, n_rows, sizeof(*rows), cmp_mrow);
	shown = o->n_rows && o->n_rows < n_rows ? o->n_rows : n_rows;
	fprintf(out, "Type: %s (%s); %zu profiles, %.0f samples\n", type_name,
		prof[0]->types[type].unit, n_prof, n_all);
	fprintf(out, "Showing %zu of %zu %s, sorted by %s (mean share of the "
		     "runs)\n",
		shown, n_rows,
		o->by == VIEW_BY_LINE ? "lines" : "functions",
		o->sort == VIEW_SORT_CUM ? "cum" : "flat");
	fprintf(out, "Intervals: %g%%, of each mean share, from the variance "
		     "between the %zu runs (t, %zu df; docs/reading.md)\n",
		100 * o->level, n_prof, n_prof - 1);
	fprintf(out, "%7s %7s %15s %15s  %s\n", "flat%", "cum%",
		"flat% interval", "cum% interval",
		o->by == VIEW_BY_LINE ? "line" : "function");
	for (size_t i = 0; i < shown; i++)
		print_mrow(out, &keys, &rows[i]);
	rc = ferror(out) ? -EIO : 0;
out:
	view_errno_text(rc, err);
	for (int c = 0; c < 2; c++) {
		for (size_t r = 0; sh[c] && r < n_prof; r++)
			free(sh[c][r]);
		free(sh[c]);
	}
	free(n);
	free(rows);
	view_keys_fini(&keys);
	return rc;
}
