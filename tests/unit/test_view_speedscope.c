/*
 * test_view_speedscope.c - the speedscope export (view_speedscope): with a
 * timeline, each thread's samples come out in time order whatever order
 * they arrived in, weighing their own values, stacks root first, thread
 * names from the profile; a truncated record gets a "[truncated]" root;
 * without a timeline, each stack is one sample. The schema itself is
 * checked end to end (tests/e2e/views.bats, speedscope's own schema).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "daemon/timeline.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

struct buf {
	unsigned char b[512];
	size_t n;
};

static void put(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		b->b[b->n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b->b[b->n++] = (unsigned char)v;
}

static uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Records: stack, tid, time, value, flags (pid 5, count 1). */
static struct timeline_data *make_tl(const int64_t (*recs)[5], size_t n)
{
	struct buf b = { .n = 0 };
	struct timeline_data *d = NULL;
	char err[ERR_LEN];
	int64_t prev = 0;

	memcpy(b.b, TIMELINE_MAGIC, TIMELINE_MAGIC_LEN);
	b.n = TIMELINE_MAGIC_LEN;
	put(&b, 1);
	put(&b, 0);
	put(&b, 2); /* stacks: */
	put(&b, 2); /* 0: work (2) on main (1) */
	put(&b, 2);
	put(&b, 1);
	put(&b, 1); /* 1: main */
	put(&b, 1);
	put(&b, n);
	for (size_t i = 0; i < n; i++) {
		put(&b, (uint64_t)recs[i][0]);
		put(&b, 5);
		put(&b, (uint64_t)recs[i][1]);
		put(&b, zz(recs[i][2] - prev));
		prev = recs[i][2];
		put(&b, 1);
		put(&b, (uint64_t)recs[i][3]);
		put(&b, (uint64_t)recs[i][4]);
	}
	put(&b, 0);
	if (timeline_parse(b.b, b.n, &d, err) < 0)
		fprintf(stderr, "timeline_parse: %s\n", err);
	return d;
}

static char *run(const struct view_profile *p, const struct timeline_data *tl,
		 const char *type)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_speedscope(out, p, tl, type, NULL, "t", 0, err);
	fclose(out);
	if (rc < 0) {
		fprintf(stderr, "view_speedscope: %s\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

int main(void)
{
	struct fx f;
	struct view_profile *p;
	char *j;

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 2);
	uint64_t lw = fx_loc(&f, fx_func(&f, "work", "m.py", 5), 6);
	fx_sample(&f, (uint64_t[]){ lw, lm }, 2, (int64_t[]){ 7, 70 },
		  "pid#5", "thread_id#10", "thread_name=MainThread", NULL);
	fx_sample(&f, (uint64_t[]){ lm }, 1, (int64_t[]){ 1, 10 }, "pid#5",
		  "thread_id#11", NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "0 read", check_summary());

	/* 1. Timeline: arrival order 300, 100, (other thread) 200, 200. */
	static const int64_t recs[][5] = {
		{ 0, 10, 300, 30, 0 },
		{ 1, 10, 100, 10, 0 },
		{ 0, 11, 200, 20, 0 },
		{ 0, 10, 200, 25, 0 },
	};
	struct timeline_data *tl = make_tl(recs, 4);
	CHECK_OR_RETURN(tl != NULL, "1.0 timeline", check_summary());
	j = run(p, tl, NULL);
	CHECK(j && strstr(j, "\"name\":\"pid 5 thread 10 (MainThread)\","
			     "\"unit\":\"nanoseconds\",\"startValue\":0,"
			     "\"endValue\":65,\n\"samples\":[[0],[0,1],[0,1]],"
			     "\n\"weights\":[10,25,30]}"),
	      "1.1 thread 10: time order, own weights, root first, named");
	CHECK(j && strstr(j, "\"name\":\"pid 5 thread 11\",\"unit\":"
			     "\"nanoseconds\",\"startValue\":0,\"endValue\":20,"
			     "\n\"samples\":[[0,1]],\n\"weights\":[20]}"),
	      "1.2 thread 11: its own lane");
	CHECK(j && strstr(j, "\"frames\":[\n{\"name\":\"main\",\"file\":"
			     "\"m.py\",\"line\":1},\n{\"name\":\"work\","
			     "\"file\":\"m.py\",\"line\":5}\n]"),
	      "1.3 shared frames: name, file, line");
	CHECK(j && strstr(j, "\"$schema\":\"https://www.speedscope.app/"
			     "file-format-schema.json\""),
	      "1.4 schema URL");
	free(j);
	j = run(p, tl, "samples");
	CHECK(j && strstr(j, "\"unit\":\"none\"") &&
		      strstr(j, "\"weights\":[1,1,1]"),
	      "1.5 counts: unit none");
	free(j);
	timeline_data_free(tl);

	/* 2. A truncated record gets "[truncated]" (frame 0) at the root. */
	static const int64_t trunc[][5] = { { 1, 10, 100, 10, 1 } };
	tl = make_tl(trunc, 1);
	j = run(p, tl, NULL);
	CHECK(j && strstr(j, "\"samples\":[[0,1]]") &&
		      strstr(j, "\"frames\":[\n{\"name\":\"[truncated]\"}"),
	      "2.1 [truncated] root frame");
	free(j);
	timeline_data_free(tl);

	/* 3. A timeline naming a location the profile lacks is refused. */
	static const int64_t one[][5] = { { 0, 10, 100, 10, 0 } };
	tl = make_tl(one, 1);
	fx_fini(&f);
	fx_init(&f, 1, "samples", "count");
	uint64_t only = fx_loc(&f, fx_func(&f, "x", "x.py", 1), 1);
	fx_sample(&f, &only, 1, (int64_t[]){ 1 }, NULL);
	struct view_profile *other = fx_view(&f);
	CHECK(run(other, tl, NULL) == NULL, "3.1 wrong profile: refused");
	view_free(other);
	timeline_data_free(tl);

	/* 4. No timeline: one sample per stack, in profile order. */
	j = run(p, NULL, NULL);
	CHECK(j && strstr(j, "\"name\":\"pid 5 thread 10 (MainThread)\",\"unit"
			     "\":\"nanoseconds\",\"startValue\":0,\"endValue\""
			     ":70,\n\"samples\":[[0,1]],\n\"weights\":[70]}"),
	      "4.1 profile alone: stacks weighted by totals");
	free(j);
	view_free(p);
	fx_fini(&f);
	return check_summary();
}
