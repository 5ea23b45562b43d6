/*
 * test_view_folded.c - folded stacks (view_folded) round-trip: on a random
 * profile (recursion, shared prefixes, several files with the same
 * function name), the sum of the counts of each distinct folded stack
 * equals the sum of the sample values of the samples with that stack,
 * computed here straight from the pprof message. Also the exact text of a
 * small profile, and ';' in names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

struct line {
	char *stack;
	long long n;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack,
		      ((const struct line *)b)->stack);
}

/* Sums duplicates of a sorted list in place; returns the new length. */
static size_t fold(struct line *v, size_t n)
{
	size_t o = 0;
	qsort(v, n, sizeof(*v), cmp_line);
	for (size_t i = 0; i < n; i++) {
		if (o && !strcmp(v[o - 1].stack, v[i].stack)) {
			v[o - 1].n += v[i].n;
			free(v[i].stack);
		} else {
			v[o++] = v[i];
		}
	}
	return o;
}

static char *run(const struct view_profile *p, const char *type,
		 enum view_by by)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_folded(out, p, type, NULL, by, 0, err);
	fclose(out);
	if (rc < 0)
		fprintf(stderr, "view_folded: %s\n", err);
	return buf;
}

static void test_round_trip(void)
{
	enum { N_FUNCS = 12,
	       N_SAMPLES = 4000 };
	static const char *names[] = { "<module>", "main", "work", "leaf" };
	static const char *files[] = { "a.py", "b.py", "c.py" };
	struct fx f;
	uint64_t locs[N_FUNCS];
	struct line *want = calloc(N_SAMPLES, sizeof(*want));
	struct line *got = calloc(N_SAMPLES, sizeof(*got));
	size_t n_want = 0, n_got = 0;

	srand(11);
	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	for (int i = 0; i < N_FUNCS; i++)
		locs[i] = fx_loc(&f, fx_func(&f, names[i % 4], files[i % 3], i), i + 1);
	for (int i = 0; i < N_SAMPLES; i++) {
		uint64_t st[10];
		size_t d = 1 + (size_t)(rand() % 9), len = 0;
		char buf[1024];
		int64_t n = 1 + rand() % 5;
		for (size_t j = 0; j < d; j++)
			st[j] = locs[rand() % 4 + (j == d - 1 ? 0 : rand() % 8)];
		fx_sample(&f, st, d, (int64_t[]){ n, n * 10000000 }, NULL);
		/* The expected text: root first, "name (file)". */
		buf[0] = 0;
		for (size_t j = d; j-- > 0;) {
			size_t k = (size_t)(st[j] - 1);
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
						"%s%s (%s)", j == d - 1 ? "" : ";",
						names[k % 4], files[k % 3]);
		}
		want[n_want].stack = strdup(buf);
		want[n_want++].n = n;
	}
	struct view_profile *p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "1.0 read", );
	char *text = run(p, NULL, VIEW_BY_FUNCTION);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');
		*sp = 0;
		got[n_got].stack = strdup(line);
		got[n_got++].n = atoll(sp + 1);
	}
	free(text);
	size_t nw = fold(want, n_want), ng = fold(got, n_got);
	int same = nw == ng;
	for (size_t i = 0; same && i < nw; i++)
		same = !strcmp(want[i].stack, got[i].stack) &&
		       want[i].n == got[i].n;
	CHECK(same, "1.1 per stack, folded counts == the samples' values");
	CHECK(ng == n_got, "1.2 no stack printed twice");
	for (size_t i = 0; i < nw; i++)
		free(want[i].stack);
	for (size_t i = 0; i < ng; i++)
		free(got[i].stack);
	free(want);
	free(got);
	view_free(p);
	fx_fini(&f);
}

static void test_text(void)
{
	struct fx f;
	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 3);
	uint64_t lx = fx_loc(&f, fx_func(&f, "a;b", "m.py", 9), 10);
	uint64_t lp = fx_loc(&f, fx_func(&f, "[lost: ring full]", "", 0), 0);
	fx_sample(&f, (uint64_t[]){ lx, lm }, 2, (int64_t[]){ 2, 20 }, NULL);
	fx_sample(&f, (uint64_t[]){ lm }, 1, (int64_t[]){ 1, 10 }, NULL);
	fx_sample(&f, (uint64_t[]){ lp }, 1, (int64_t[]){ 4, 40 }, NULL);
	struct view_profile *p = fx_view(&f);
	char *t = run(p, NULL, VIEW_BY_FUNCTION);
	CHECK(t && !strcmp(t, "[lost: ring full] 4\n"
			      "main (m.py) 1\n"
			      "main (m.py);a:b (m.py) 2\n"),
	      "2.1 exact text: samples, sorted, ';' in a name made ':'");
	free(t);
	t = run(p, "cpu", VIEW_BY_LINE);
	CHECK(t && strstr(t, "main (m.py:3);a:b (m.py:10) 20\n"),
	      "2.2 --sample-type cpu, by line");
	free(t);
	view_free(p);
	fx_fini(&f);
}

int main(void)
{
	test_round_trip();
	test_text();
	return check_summary();
}
