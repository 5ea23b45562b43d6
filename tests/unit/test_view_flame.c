/*
 * test_view_flame.c - the call tree (view_tree.h) and the SVG flame graph
 * (view_flame.c): the tree against a brute-force model on random stacks,
 * the layout's merging of narrow frames into one "…" frame, XML escaping
 * of hostile names, label truncation, icicle orientation, and the
 * differential colours. Well-formedness and behaviour in a browser are
 * checked end to end (tests/e2e/views.bats: xmllint, headless Chromium).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/view_flame.h"
#include "views/view_tree.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

static char *render(const struct view_profile *p,
		    const struct view_flame_opts *o)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_flame(out, p, o, err);
	fclose(out);
	if (rc < 0) {
		fprintf(stderr, "view_flame: %s\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *s = hay; (s = strstr(s, needle)); s++)
		n++;
	return n;
}

/* 1. Tree vs model: every node's total is the sum of the samples whose
 * stack (root first) starts with the node's path. */
static void test_tree_model(void)
{
	enum { N_KEYS = 6,
	       N_SAMPLES = 3000,
	       MAX_D = 8 };
	static uint32_t stacks[N_SAMPLES][MAX_D];
	static size_t depth[N_SAMPLES];
	static int64_t val[N_SAMPLES];
	struct view_tree t;
	uint32_t path[MAX_D + 1];
	int ok = 1;

	srand(7);
	CHECK_OR_RETURN(view_tree_init(&t) == 0, "1.0 init", );
	for (int i = 0; i < N_SAMPLES; i++) {
		depth[i] = (size_t)(rand() % MAX_D);
		for (size_t j = 0; j < depth[i]; j++) /* leaf first */
			stacks[i][j] = (uint32_t)(rand() % N_KEYS);
		val[i] = rand() % 100;
		view_tree_add(&t, stacks[i], depth[i],
			      (int64_t[]){ val[i], 1 });
	}
	for (size_t n = 0; n < t.n && ok; n++) {
		size_t d = view_tree_path(&t, (uint32_t)n, path, MAX_D + 1);
		int64_t want = 0, self = 0;
		for (int i = 0; i < N_SAMPLES; i++) {
			size_t j;
			if (depth[i] < d)
				continue;
			for (j = 0; j < d; j++)
				if (stacks[i][depth[i] - 1 - j] != path[j])
					break;
			if (j < d)
				continue;
			want += val[i];
			if (depth[i] == d)
				self += val[i];
		}
		ok = t.v[n].total[0] == want && t.v[n].self[0] == self;
		if (!ok)
			fprintf(stderr, "node %zu: total %lld want %lld\n", n,
				(long long)t.v[n].total[0], (long long)want);
	}
	CHECK(ok, "1.1 every node's total and self match the model");
	CHECK(t.v[0].total[1] == N_SAMPLES, "1.2 root counts every sample");
	view_tree_fini(&t);
}

/* 2. Narrow frames: 5000 one-sample children next to one big child. */
static void test_merge(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_flame_opts o = { 0 };
	char name[32];

	fx_init(&f, 1, "samples", "count");
	uint64_t fm = fx_func(&f, "main", "m.py", 1);
	uint64_t lm = fx_loc(&f, fm, 1);
	uint64_t fb = fx_func(&f, "big", "m.py", 5);
	uint64_t lb = fx_loc(&f, fb, 6);
	fx_sample(&f, (uint64_t[]){ lb, lm }, 2, (int64_t[]){ 5000 }, NULL);
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "tiny_%d", i);
		uint64_t ft = fx_func(&f, name, "t.py", i + 1);
		uint64_t lt = fx_loc(&f, ft, i + 2);
		fx_sample(&f, (uint64_t[]){ lt, lm }, 2, (int64_t[]){ 1 },
			  NULL);
	}
	p = fx_view(&f);
	char *svg = render(p, &o);
	CHECK_OR_RETURN(svg != NULL, "2.0 rendered", );
	/* all, main, big, one "…" */
	CHECK(count(svg, "<g data-p=") == 4, "2.1 four frames drawn");
	CHECK(strstr(svg, "5000 frames narrower than 0.5 px, merged&#10;"
			  "5000 samples, 50.00% of the total"),
	      "2.2 the merged frame says how many and their share");
	CHECK(!strstr(svg, "tiny_17"), "2.3 narrow frames not drawn alone");
	CHECK(strstr(svg, "data-m=\"1\""), "2.4 merged frame is marked");
	free(svg);
	o.min_width = 0.01;
	svg = render(p, &o);
	CHECK(svg && count(svg, "<g data-p=") == 5003,
	      "2.5 --min-width 0.01 draws them one by one");
	free(svg);
	view_free(p);
	fx_fini(&f);
}

/* 3. Names are escaped; labels fit their frames; icicle. */
static void test_text(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_flame_opts o = { 0 };

	fx_init(&f, 1, "samples", "count");
	uint64_t f1 = fx_func(&f, "<a&b>\"'\x01\xff", "x<y>.py", 1);
	uint64_t f2 = fx_func(&f, "a_rather_long_function_name_that_"
				  "cannot_fit_in_a_small_frame",
			      "x.py", 1);
	uint64_t f3 = fx_func(&f, "wide", "x.py", 1);
	uint64_t l1 = fx_loc(&f, f1, 1), l2 = fx_loc(&f, f2, 1);
	uint64_t l3 = fx_loc(&f, f3, 1);
	fx_sample(&f, (uint64_t[]){ l1, l3 }, 2, (int64_t[]){ 90 }, NULL);
	fx_sample(&f, (uint64_t[]){ l2, l3 }, 2, (int64_t[]){ 10 }, NULL);
	p = fx_view(&f);
	char *svg = render(p, &o);
	CHECK_OR_RETURN(svg != NULL, "3.0 rendered", );
	CHECK(strstr(svg, "data-n=\"&lt;a&amp;b&gt;&quot;&#39;?\xef\xbf\xbd\""),
	      "3.1 markup, a control character and a bad UTF-8 byte escaped");
	CHECK(strstr(svg, "data-f=\"x&lt;y&gt;.py\""), "3.2 file escaped");
	CHECK(strstr(svg, ">a_rather_long_..</text>"),
	      "3.3 a long name is cut with '..' to fit 118 px (16 chars)");
	CHECK(!strstr(svg, "]]>\n]]>"), "3.4 one CDATA section");
	CHECK(strstr(svg, "y=\"76.0\" width=\"1180.000\""),
	      "3.5 flame: root at the bottom (depth 2 above it)");
	free(svg);
	o.icicle = 1;
	svg = render(p, &o);
	CHECK(svg && strstr(svg, "y=\"60.0\" width=\"1180.000\"") &&
		      strstr(svg, ">Icicle graph<"),
	      "3.6 icicle: root at the top");
	free(svg);
	view_free(p);
	fx_fini(&f);
}

/* 4. Differential colours and tooltips. */
static void test_diff(void)
{
	struct fx fb, fn;
	struct view_profile *base, *cur;
	struct view_diff_opts o = { 0 };
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;

	for (int k = 0; k < 2; k++) {
		struct fx *f = k ? &fn : &fb;
		fx_init(f, 1, "samples", "count");
		uint64_t a = fx_loc(f, fx_func(f, "grows", "g.py", 1), 1);
		uint64_t b = fx_loc(f, fx_func(f, "shrinks", "s.py", 1), 1);
		fx_sample(f, &a, 1, (int64_t[]){ k ? 80 : 50 }, NULL);
		fx_sample(f, &b, 1, (int64_t[]){ k ? 20 : 50 }, NULL);
	}
	base = fx_view(&fb);
	cur = fx_view(&fn);
	FILE *out = open_memstream(&buf, &len);
	CHECK(view_diff_flame(out, base, cur, &o, err) == 0, "4.1 rendered");
	fclose(out);
	CHECK(buf && strstr(buf, "new 80 (80.00%), base 50 (50.00%), change "
				 "+30.00 points</title><rect x=\"10.000\" "
				 "y=\"60.0\" width=\"944.000\" height=\"15\" "
				 "fill=\"rgb(255,35,35)\""),
	      "4.2 grew: full red, width from new");
	CHECK(buf && strstr(buf, "change -30.00 points</title>") &&
		      strstr(buf, "fill=\"rgb(35,100,255)\""),
	      "4.3 shrank: blue");
	free(buf);
	view_free(base);
	view_free(cur);
	fx_fini(&fb);
	fx_fini(&fn);
}

/* 5. A heap profile's title gives the shown type's own total, in its
 * unit; object counts are not numbers of samples. */
static void test_heap_title(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_flame_opts o = { .sample_type = "inuse_objects" };

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
	CHECK_OR_RETURN(p != NULL, "5.0 profile read", );
	char *svg = render(p, &o);
	CHECK(svg && strstr(svg, ">inuse_objects: total 300<"),
	      "5.1 inuse_objects: its own total, no samples");
	free(svg);
	o.sample_type = "alloc_space";
	svg = render(p, &o);
	CHECK(svg && strstr(svg, ">alloc_space: total 4.00MB<"),
	      "5.2 alloc_space: its own total in bytes");
	free(svg);
	view_free(p);
	fx_fini(&f);
}

int main(void)
{
	test_heap_title();
	test_tree_model();
	test_merge();
	test_text();
	test_diff();
	return check_summary();
}
