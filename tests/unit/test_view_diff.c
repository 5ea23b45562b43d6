/*
 * test_view_diff.c - `pyprof diff`'s table (view_diff_table): shares of
 * each profile's own total, rows ordered by the size of the change of
 * flat share, functions only one profile has, the exact text; heap
 * profiles compared in bytes by default, shares on request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

static struct view_profile *make(struct fx *f, int64_t a, int64_t b,
				 int64_t c)
{
	fx_init(f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t lm = fx_loc(f, fx_func(f, "main", "m.py", 1), 1);
	uint64_t la = fx_loc(f, fx_func(f, "alpha", "m.py", 10), 11);
	uint64_t lb = fx_loc(f, fx_func(f, "beta", "m.py", 20), 21);
	uint64_t lc = fx_loc(f, fx_func(f, "gamma", "g.py", 30), 31);
	if (a)
		fx_sample(f, (uint64_t[]){ la, lm }, 2,
			  (int64_t[]){ a, a * 10000000 }, NULL);
	if (b)
		fx_sample(f, (uint64_t[]){ lb, lm }, 2,
			  (int64_t[]){ b, b * 10000000 }, NULL);
	if (c)
		fx_sample(f, (uint64_t[]){ lc, lm }, 2,
			  (int64_t[]){ c, c * 10000000 }, NULL);
	return fx_view(f);
}

/* A heap snapshot: leak holds `leak` MiB in use, cache `cache` MiB. */
static struct view_profile *heap(struct fx *f, int64_t leak, int64_t cache)
{
	fx_init(f, 2, "alloc_space", "bytes", "inuse_space", "bytes");
	uint64_t lm = fx_loc(f, fx_func(f, "main", "m.py", 1), 1);
	uint64_t ll = fx_loc(f, fx_func(f, "leak", "m.py", 10), 11);
	uint64_t lc = fx_loc(f, fx_func(f, "cache", "m.py", 20), 21);
	fx_sample(f, (uint64_t[]){ ll, lm }, 2,
		  (int64_t[]){ leak << 20, leak << 20 }, NULL);
	fx_sample(f, (uint64_t[]){ lc, lm }, 2,
		  (int64_t[]){ cache << 20, cache << 20 }, NULL);
	return fx_view(f);
}

static char *table(const struct view_profile *base,
		   const struct view_profile *cur,
		   const struct view_diff_opts *o)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_diff_table(out, base, cur, o, err);
	fclose(out);
	if (rc < 0) {
		fprintf(stderr, "view_diff_table: %s\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

/* 2. A leak that grew from 44 to 86 MiB beside a steady 20 MiB cache: in
 * bytes by default (the cache did not change), shares on request (where
 * the cache's share fell although it did not shrink). */
static void test_heap(void)
{
	struct fx fb, fn;
	struct view_profile *base = heap(&fb, 44, 20);
	struct view_profile *cur = heap(&fn, 86, 20);
	struct view_diff_opts o = { .sample_type = "inuse_space" };
	char *t = table(base, cur, &o);
	const char *want =
		"Type: inuse_space (bytes); base total 64.0MB, new total 106MB, change "
		"+42.0MB\n"
		"Showing 3 of 3 functions, by change of flat value (bytes; + grew, - "
		"shrank)\n"
		"flat base  flat new    change   cum base   cum new    change  function\n"
		"   44.0MB    86.0MB   +42.0MB     44.0MB    86.0MB   +42.0MB  leak  "
		"m.py:10\n";
	CHECK(t && !strncmp(t, want, strlen(want)),
	      "2.1 heap: bytes by default, the leak first");
	if (t && strncmp(t, want, strlen(want)))
		fprintf(stderr, "--- want (start)\n%s--- got\n%s", want, t);
	CHECK(t && strstr(t, "   20.0MB    20.0MB         0  "),
	      "2.2 the steady cache: no change");
	free(t);
	o.compare = VIEW_DIFF_SHARES;
	t = table(base, cur, &o);
	CHECK(t && strstr(t, "by change of flat share") &&
		      strstr(t, "   31.25%    18.87%   -12.38  "),
	      "2.3 --shares: the cache's share fell");
	if (t && !strstr(t, "   31.25%    18.87%   -12.38  "))
		fprintf(stderr, "--- got\n%s", t);
	free(t);
	view_free(base);
	view_free(cur);
	fx_fini(&fb);
	fx_fini(&fn);
}

/* view_diff_test's table into a string; *fail its count of failing
 * changes. */
static char *tested(struct view_profile **p, size_t nb, size_t na,
		    const struct view_diff_opts *o, size_t *fail)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_diff_test(out, (const struct view_profile *const *)p,
				nb, na, o, fail, err);
	fclose(out);
	if (rc < 0) {
		fprintf(stderr, "view_diff_test: %s\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

/* The line of t about function name, or "". */
static const char *row_of(const char *t, const char *name)
{
	static char line[512];
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "  %s  ", name);
	at = t ? strstr(t, pat) : NULL;
	if (!at)
		return "";
	while (at > t && at[-1] != '\n')
		at--;
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
	return line;
}

/* 3. --test with one profile a side: 1000 samples each, alpha 10% ->
 * 15% is real (z = 3.4, Holm over 4 functions), beta 45% -> 43% is not
 * (z = 0.9); --fail-on-increase above the change passes; a 1-point
 * change in 1000 samples is noise. */
static void test_one_a_side(void)
{
	struct fx f[4];
	struct view_profile *p[4];
	struct view_diff_opts o = { .sort = VIEW_SORT_CUM, .level = 0.95, .fail_on_increase = -1 };
	size_t fail = 99;
	char *t;

	p[0] = make(&f[0], 100, 450, 450);
	p[1] = make(&f[1], 150, 430, 420);
	t = tested(p, 1, 1, &o, &fail);
	CHECK(t && fail == 1, "3.1 one change fails the test");
	CHECK(!strncmp(row_of(t, "alpha"), "!   10.00%   15.00%   +5.00", 27),
	      "3.2 alpha's is real, and first");
	CHECK(t && strstr(t, "\n!   10.00%") &&
		      strstr(t, "\n!   10.00%") < strstr(t, "beta"),
	      "3.3 the real change before the others");
	CHECK(row_of(t, "beta")[0] == ' ', "3.4 beta's 2 points are not real");
	CHECK(t && strstr(t, "over the 4 functions") &&
		      strstr(t, "1 real change at 95%"),
	      "3.5 the family and the verdict");
	if (!t || fail != 1 || row_of(t, "alpha")[0] != '!')
		fprintf(stderr, "--- got\n%s", t ? t : "(null)\n");
	free(t);
	o.fail_on_increase = 6;
	t = tested(p, 1, 1, &o, &fail);
	CHECK(fail == 0 && row_of(t, "alpha")[0] == '*',
	      "3.6 --fail-on-increase 6: real, but too small to fail");
	free(t);
	o.fail_on_increase = -1;
	p[2] = make(&f[2], 100, 450, 450);
	p[3] = make(&f[3], 110, 445, 445);
	t = tested(p + 2, 1, 1, &o, &fail);
	CHECK(t && fail == 0 && strstr(t, "0 real changes at 95%"),
	      "3.7 one point in 1000 samples is no change");
	free(t);
	for (int i = 0; i < 4; i++) {
		view_free(p[i]);
		fx_fini(&f[i]);
	}
}

/* 4. Several profiles a side use the variance between runs: alpha at
 * 10, 12, 8% then 15, 17, 13% (sd 2 points, 3 runs: t = 3.06, 4 df, p =
 * 0.037, not real once Holm divides 0.05 among 4); steady runs 10.0,
 * 10.1, 9.9 -> 15.0, 15.1, 14.9 make the same change real although the
 * binomial floor (0.95 points a run) is what sets their variance. */
static void test_several(void)
{
	static const int64_t noisy[6] = { 100, 120, 80, 150, 170, 130 };
	static const int64_t steady[6] = { 1000, 1010, 990, 1500, 1510, 1490 };
	struct fx f[6];
	struct view_profile *p[6];
	struct view_diff_opts o = { .sort = VIEW_SORT_CUM, .level = 0.95, .fail_on_increase = -1 };
	size_t fail = 99;
	char *t;

	for (int i = 0; i < 6; i++) {
		int64_t a = noisy[i];
		p[i] = make(&f[i], a, (1000 - a) / 2, (1000 - a) / 2);
	}
	t = tested(p, 3, 3, &o, &fail);
	CHECK(t && strstr(t, "between runs (Welch's t)"), "4.1 Welch's t");
	CHECK(fail == 0 && !strncmp(row_of(t, "alpha"),
				    "    10.00%   15.00%   +5.00", 27),
	      "4.2 noisy runs: the same 5 points are not real");
	if (fail != 0)
		fprintf(stderr, "--- got\n%s", t ? t : "(null)\n");
	free(t);
	for (int i = 0; i < 6; i++) {
		view_free(p[i]);
		fx_fini(&f[i]);
		int64_t a = steady[i];
		p[i] = make(&f[i], a, (10000 - a) / 2, (10000 - a) / 2);
	}
	t = tested(p, 3, 3, &o, &fail);
	/* beta and gamma, 45 -> 42.5%, are real changes too */
	CHECK(fail == 3 && !strncmp(row_of(t, "alpha"),
				    "!   10.00%   15.00%   +5.00", 27),
	      "4.3 steady runs of 10000 samples: real");
	if (fail != 3)
		fprintf(stderr, "--- got\n%s", t ? t : "(null)\n");
	free(t);
	t = tested(p, 1, 3, &o, &fail);
	CHECK(t && strstr(t, "between the runs of the side with several"),
	      "4.4 one against three: the three's variance");
	free(t);
	for (int i = 0; i < 6; i++) {
		view_free(p[i]);
		fx_fini(&f[i]);
	}
}

/* 5. pyprof top over several runs (view_top_runs): alpha's mean share
 * of 10, 12 and 8% is 10%, its interval 10 +- t(2 df) * 2 / sqrt(3) =
 * [5.03, 14.97]; main is in every sample, and its interval is the
 * binomial floor's (at p = 1, none: [100, 100]). */
static void test_top_runs(void)
{
	static const int64_t a[3] = { 100, 120, 80 };
	struct fx f[3];
	struct view_profile *p[3];
	struct view_top_opts o = { .level = 0.95, .sort = VIEW_SORT_CUM };
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out;
	int rc;

	for (int i = 0; i < 3; i++)
		p[i] = make(&f[i], a[i], (1000 - a[i]) / 2, (1000 - a[i]) / 2);
	out = open_memstream(&buf, &len);
	rc = view_top_runs(out, (const struct view_profile *const *)p, 3, &o,
			   err);
	fclose(out);
	CHECK(rc == 0 && strstr(buf, "3 profiles, 3000 samples") &&
		      strstr(buf, "between the 3 runs (t, 2 df"),
	      "5.1 the header");
	CHECK(strstr(buf, " 10.00%  10.00% [  5.03, 14.97] [  5.03, 14.97]  "
			  "alpha"),
	      "5.2 alpha: mean 10%, t with 2 df");
	CHECK(strstr(buf, "100.00% [  0.00,  0.00] [100.00,100.00]  main"),
	      "5.3 main: always there");
	const char *m = strstr(buf, "\n  0.00% 100.00% ");
	CHECK(m && strstr(buf, "  alpha  ") && m < strstr(buf, "  alpha  "),
	      "5.4 sorted by cum: main first");
	if (rc != 0 || !strstr(buf, "[  5.03, 14.97]  alpha"))
		fprintf(stderr, "--- got\n%s", buf);
	free(buf);
	for (int i = 0; i < 3; i++) {
		view_free(p[i]);
		fx_fini(&f[i]);
	}
}

int main(void)
{
	struct fx fb, fn;
	/* Base: alpha 50, beta 50 (1 s). New: alpha 160, beta 20, gamma 20
	 * (2 s): alpha's share grew 30 points, beta's shrank 40, gamma is
	 * new with 10. */
	struct view_profile *base = make(&fb, 50, 50, 0);
	struct view_profile *cur = make(&fn, 160, 20, 20);
	struct view_diff_opts o = { 0 };
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(view_diff_table(out, base, cur, &o, err) == 0, "1.1 ran");
	fclose(out);
	const char *want =
		"Type: cpu (nanoseconds); base total 1.00s, new total 2.00s\n"
		"Showing 4 of 4 functions, by change of flat share (percentage points; + "
		"grew, - shrank)\n"
		"flat base  flat new   change   cum base   cum new   change  function\n"
		"   50.00%    10.00%   -40.00     50.00%    10.00%   -40.00  beta  m.py:20\n"
		"   50.00%    80.00%   +30.00     50.00%    80.00%   +30.00  alpha  m.py:10\n"
		"    0.00%    10.00%   +10.00      0.00%    10.00%   +10.00  gamma  g.py:30\n"
		"    0.00%     0.00%    +0.00    100.00%   100.00%    +0.00  main  m.py:1\n";
	CHECK(buf && !strcmp(buf, want), "1.2 the exact table");
	if (buf && strcmp(buf, want))
		fprintf(stderr, "--- want\n%s--- got\n%s", want, buf);
	free(buf);

	o.sample_type = "wall";
	out = open_memstream(&buf, &len);
	CHECK(view_diff_table(out, base, cur, &o, err) == -ENOENT,
	      "1.3 unknown type refused");
	fclose(out);
	free(buf);
	view_free(base);
	view_free(cur);
	fx_fini(&fb);
	fx_fini(&fn);
	test_heap();
	test_one_a_side();
	test_several();
	test_top_runs();
	return check_summary();
}
