/*
 * test_view_diff.c - `pyprof diff`'s table (view_diff_table): shares of
 * each profile's own total, rows ordered by the size of the change of
 * flat share, functions only one profile has, the exact text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "view.h"
#include "views.h"
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
	return check_summary();
}
