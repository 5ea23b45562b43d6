/*
 * test_view_top.c - `pyprof top`'s tables (collector/views/renderers.h view_top) on
 * a profile whose answer is known: the exact text, rows in order, values
 * with their units and percentages; recursion counted once in cum; --tag;
 * the label and opcode summaries; a heap profile's totals per type.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

#define MS 1000000

/* main > work > leaf_a 50, main > work > leaf_b 30, main > work 15,
 * main 5 (samples; 10 ms each), on two threads. */
static struct view_profile *known(struct fx *f)
{
	uint64_t fm = fx_func(f, "main", "app.py", 1);
	uint64_t fw = fx_func(f, "work", "app.py", 10);
	uint64_t fa = fx_func(f, "leaf_a", "app.py", 20);
	uint64_t fb = fx_func(f, "leaf_b", "lib.py", 5);
	uint64_t lm = fx_loc(f, fm, 3), lw = fx_loc(f, fw, 12);
	uint64_t la = fx_loc(f, fa, 21), lb = fx_loc(f, fb, 6);

	fx_sample(f, (uint64_t[]){ la, lw, lm }, 3,
		  (int64_t[]){ 50, 500 * MS }, "pid#7", "thread_id#7",
		  "thread_name=MainThread", "opcode=BINARY_OP_ADD_INT", NULL);
	fx_sample(f, (uint64_t[]){ lb, lw, lm }, 3,
		  (int64_t[]){ 30, 300 * MS }, "pid#7", "thread_id#8",
		  "thread_name=worker", "opcode=BINARY_OP_ADD_INT", NULL);
	fx_sample(f, (uint64_t[]){ lw, lm }, 2, (int64_t[]){ 15, 150 * MS },
		  "pid#7", "thread_id#7", "thread_name=MainThread",
		  "opcode=LOAD_FAST", NULL);
	fx_sample(f, (uint64_t[]){ lm }, 1, (int64_t[]){ 5, 50 * MS },
		  "pid#7", "thread_id#7", "thread_name=MainThread", NULL);
	return fx_view(f);
}

static char *run_top(const struct view_profile *p,
		     const struct view_top_opts *o, int *rc)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	*rc = view_top(out, p, o, err);
	fclose(out);
	if (*rc < 0)
		fprintf(stderr, "view_top: %s\n", err);
	return buf;
}

static void expect(const char *got, const char *want, const char *what)
{
	CHECK(got && !strcmp(got, want), what);
	if (got && strcmp(got, want))
		fprintf(stderr, "--- want\n%s--- got\n%s---\n", want, got);
}

static void test_functions(struct view_profile *p)
{
	struct view_top_opts o = { 0 };
	int rc;
	char *t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 1.00s in 100 samples\n"
	       "Showing 4 of 4 functions, sorted by flat\n"
	       "      flat   flat%    sum%        cum    cum%  function\n"
	       "     500ms  50.00%  50.00%      500ms  50.00%  leaf_a  app.py:20\n"
	       "     300ms  30.00%  80.00%      300ms  30.00%  leaf_b  lib.py:5\n"
	       "     150ms  15.00%  95.00%      950ms  95.00%  work  app.py:10\n"
	       "    50.0ms   5.00% 100.00%      1.00s 100.00%  main  app.py:1\n",
	       "1.1 by flat: the known table");
	free(t);

	o.sort = VIEW_SORT_CUM;
	o.n_rows = 2;
	t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 1.00s in 100 samples\n"
	       "Showing 2 of 4 functions, sorted by cum\n"
	       "      flat   flat%    sum%        cum    cum%  function\n"
	       "    50.0ms   5.00%   5.00%      1.00s 100.00%  main  app.py:1\n"
	       "     150ms  15.00%  20.00%      950ms  95.00%  work  app.py:10\n",
	       "1.2 by cum, -n 2");
	free(t);

	o = (struct view_top_opts){ .sample_type = "samples", .n_rows = 1 };
	t = run_top(p, &o, &rc);
	expect(t,
	       "Type: samples (count), total 100 samples\n"
	       "Showing 1 of 4 functions, sorted by flat\n"
	       "      flat   flat%    sum%        cum    cum%  function\n"
	       "        50  50.00%  50.00%         50  50.00%  leaf_a  app.py:20\n",
	       "1.3 counts as integers");
	free(t);

	o = (struct view_top_opts){ .by = VIEW_BY_LINE, .n_rows = 2 };
	t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 1.00s in 100 samples\n"
	       "Showing 2 of 4 lines, sorted by flat\n"
	       "      flat   flat%    sum%        cum    cum%  line\n"
	       "     500ms  50.00%  50.00%      500ms  50.00%  leaf_a  app.py:21\n"
	       "     300ms  30.00%  80.00%      300ms  30.00%  leaf_b  lib.py:6\n",
	       "1.4 by line: the lines executing");
	free(t);

	struct view_filter flt = { 0 };
	view_filter_add(&flt, "thread_name=worker");
	o = (struct view_top_opts){ .filter = &flt, .n_rows = 1 };
	t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 300ms in 30 samples\n"
	       "Showing 1 of 3 functions, sorted by flat\n"
	       "      flat   flat%    sum%        cum    cum%  function\n"
	       "     300ms 100.00% 100.00%      300ms 100.00%  leaf_b  lib.py:5\n",
	       "1.5 --tag thread_name=worker");
	free(t);

	o = (struct view_top_opts){ .sample_type = "wall" };
	t = run_top(p, &o, &rc);
	CHECK(rc == -ENOENT, "1.6 unknown sample type: -ENOENT");
	free(t);
}

static void test_labels(struct view_profile *p)
{
	struct view_top_opts o = { .by_label = "thread_name" };
	int rc;
	char *t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 1.00s in 100 samples\n"
	       "Showing 2 of 2 values of label thread_name\n"
	       "       cpu       %    samples  thread_name\n"
	       "     700ms  70.00%         70  MainThread\n"
	       "     300ms  30.00%         30  worker\n",
	       "2.1 by thread name");
	free(t);
	o.by_label = "nope";
	t = run_top(p, &o, &rc);
	CHECK(rc == -ENOENT, "2.2 a label no sample has: -ENOENT");
	free(t);

	o = (struct view_top_opts){ .by_opcode = 1 };
	t = run_top(p, &o, &rc);
	expect(t,
	       "Type: cpu (nanoseconds), total 1.00s in 100 samples\n"
	       "Showing 2 of 2 opcodes; 95.00% of the total has an opcode (samples in "
	       "Python code)\n"
	       "       cpu   share  samples  opcode                       hottest in\n"
	       "     800ms  80.00%       80  BINARY_OP_ADD_INT            leaf_a (62%), "
	       "leaf_b (38%)\n"
	       "     150ms  15.00%       15  LOAD_FAST                    work (100%)\n",
	       "2.3 by opcode: share and hottest functions");
	free(t);
}

/* 3. Recursion: a function twice on one stack counts once in cum. */
static void test_recursion(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_top_opts o = { .sort = VIEW_SORT_CUM };
	int rc;

	fx_init(&f, 1, "samples", "count");
	uint64_t fr = fx_func(&f, "rec", "r.py", 1);
	uint64_t l1 = fx_loc(&f, fr, 2), l2 = fx_loc(&f, fr, 3);
	fx_sample(&f, (uint64_t[]){ l1, l2, l2, l2 }, 4, (int64_t[]){ 10 },
		  NULL);
	p = fx_view(&f);
	char *t = run_top(p, &o, &rc);
	CHECK(t && strstr(t, "        10 100.00% 100.00%         10 100.00%  "
			     "rec  r.py:1\n"),
	      "3.1 recursion: cum 100%, not 400%");
	free(t);
	view_free(p);
	fx_fini(&f);
}

/* 4. A heap profile: each sample type's header gives that type's own
 * total in its unit; object counts are not numbers of samples. */
static void test_heap_totals(void)
{
	static const char *const want[4] = {
		"Type: alloc_objects (count), total 1000\n",
		"Type: alloc_space (bytes), total 4.00MB\n",
		"Type: inuse_objects (count), total 300\n",
		"Type: inuse_space (bytes), total 1.00MB\n",
	};
	static const char *const types[4] = {
		"alloc_objects",
		"alloc_space",
		"inuse_objects",
		"inuse_space",
	};
	struct fx f;
	struct view_profile *p;
	int rc;

	fx_init(&f, 4, "alloc_objects", "count", "alloc_space", "bytes",
		"inuse_objects", "count", "inuse_space", "bytes");
	uint64_t fa = fx_func(&f, "keep", "k.py", 1);
	uint64_t fb = fx_func(&f, "churn", "k.py", 9);
	uint64_t la = fx_loc(&f, fa, 2), lb = fx_loc(&f, fb, 10);
	fx_sample(&f, (uint64_t[]){ la }, 1,
		  (int64_t[]){ 300, 1 << 20, 300, 1 << 20 }, NULL);
	fx_sample(&f, (uint64_t[]){ lb }, 1,
		  (int64_t[]){ 700, 3 << 20, 0, 0 }, NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "4.0 profile read", );
	for (int i = 0; i < 4; i++) {
		struct view_top_opts o = { .sample_type = types[i] };
		char *t = run_top(p, &o, &rc);
		size_t n = strlen(want[i]);
		CHECK(t && !strncmp(t, want[i], n), types[i]);
		if (t && strncmp(t, want[i], n))
			fprintf(stderr, "--- want\n%s--- got\n%s---\n",
				want[i], t);
		free(t);
	}
	struct view_top_opts oi = { .level = 0.95 };
	char *t = run_top(p, &oi, &rc);
	CHECK(rc == -ENOENT, "4.5 no intervals for a heap profile");
	free(t);
	view_free(p);
	fx_fini(&f);
}

/* 5. --intervals: Wilson's interval of each share from the 100 samples
 * (leaf_a: 50 of 100, [40.38, 59.62]; main: 5 flat, all cum, [96.30, 100]), wider at
 * 99%; a heap profile has no count of samples to take them from. */
static void test_intervals(struct view_profile *p)
{
	struct view_top_opts o = { .level = 0.95 };
	char *t;
	int rc;

	t = run_top(p, &o, &rc);
	CHECK(rc == 0 && t && strstr(t, "from 100 samples taken as "
					"independent"),
	      "5.1 the header says what the intervals assume");
	CHECK(t && strstr(t, "  50.00% [ 40.38, 59.62] [ 40.38, 59.62]  "
			     "leaf_a"),
	      "5.2 leaf_a: 50 of 100");
	CHECK(t && strstr(t, " 100.00% [  2.15, 11.18] [ 96.30,100.00]  main"),
	      "5.3 main: 5 flat, all cum");
	if (t && !strstr(t, "[ 40.38, 59.62]  leaf_a"))
		fprintf(stderr, "--- got\n%s", t);
	free(t);
	o.level = 0.99;
	t = run_top(p, &o, &rc);
	CHECK(t && strstr(t, "[ 37.53, 62.47] [ 37.53, 62.47]  leaf_a"),
	      "5.4 99%: wider");
	free(t);
}

int main(void)
{
	struct fx f;
	struct view_profile *p;

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	p = known(&f);
	CHECK_OR_RETURN(p != NULL, "0 profile", check_summary());
	test_functions(p);
	test_labels(p);
	test_intervals(p);
	view_free(p);
	fx_fini(&f);
	test_recursion();
	test_heap_totals();
	return check_summary();
}
