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
	char *buf = NULL, err[VIEW_ERR_LEN];
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

int main(void)
{
	struct fx fb, fn;
	/* Base: alpha 50, beta 50 (1 s). New: alpha 160, beta 20, gamma 20
	 * (2 s): alpha's share grew 30 points, beta's shrank 40, gamma is
	 * new with 10. */
	struct view_profile *base = make(&fb, 50, 50, 0);
	struct view_profile *cur = make(&fn, 160, 20, 20);
	struct view_diff_opts o = { 0 };
	char *buf = NULL, err[VIEW_ERR_LEN];
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
	return check_summary();
}
