/*
 * test_view_gecko.c - the Firefox Profiler export (view_gecko): from a
 * timeline, each thread's samples in time order with times in ms from the
 * first sample, stacks as a prefix tree whose offsets point back, frames
 * with lines, thread names from the profile, Off-CPU interval markers for
 * runs of off-CPU records, a "[truncated]" root, the version stated; and
 * refusals without a timeline or with a --tag the timeline cannot match.
 * The whole format is checked end to end (tests/lib/gecko_check.py in
 * tests/e2e/views.bats).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/timeline_file.h"
#include "pyprof/wire.h"
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
		 const struct view_filter *filter, int *rc)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	*rc = view_gecko(out, p, tl, filter, "t", err);
	fclose(out);
	if (*rc < 0) {
		fprintf(stderr, "view_gecko: %s\n", err);
		free(buf);
		return NULL;
	}
	return buf;
}

int main(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_filter filter = { 0 };
	char *j;
	int rc;

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 2);
	uint64_t lw = fx_loc(&f, fx_func(&f, "work", "m.py", 5), 6);
	fx_sample(&f, (uint64_t[]){ lw, lm }, 2, (int64_t[]){ 7, 70 },
		  "pid#5", "thread_id#10", "thread_name=MainThread", NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "0 read", check_summary());

	/* 1. Arrival order 3, 1, (thread 11) 1.5, 2 ms; 3 and 2 off-CPU. */
	static const int64_t recs[][5] = {
		{ 0, 10, 3000000, 30, WIRE_SF_OFF_CPU },
		{ 1, 10, 1000000, 10, 0 },
		{ 0, 11, 1500000, 5, 0 },
		{ 0, 10, 2000000, 20, WIRE_SF_OFF_CPU },
	};
	struct timeline_data *tl = make_tl(recs, 4);
	CHECK_OR_RETURN(tl != NULL, "1.0 timeline", check_summary());
	j = run(p, tl, NULL, &rc);
	CHECK(j && strstr(j, "\"preprocessedProfileVersion\":70,"),
	      "1.1 the version stated");
	CHECK(j && strstr(j, "\"startTime\":1.000,"),
	      "1.2 meta.startTime: the first sample, Unix ms");
	CHECK(j && strstr(j, "\"name\":\"MainThread\"") &&
		      strstr(j, "\"name\":\"thread 11\""),
	      "1.3 thread names: the profile's, else the id");
	CHECK(j && strstr(j, "\"stack\":[0,1,1],\"time\":[0.000000,1.000000,"
			     "2.000000],\"weight\":[1,1,1],\"length\":3}"),
	      "1.4 thread 10: time order, ms from the first sample");
	CHECK(j && strstr(j, "\"stack\":[1],\"time\":[0.500000]"),
	      "1.5 thread 11: its own samples");
	CHECK(j && strstr(j, "\"stackTable\":{\"frame\":[0,1],"
			     "\"prefixOffset\":[0,1],\"length\":2}"),
	      "1.6 stacks: root first, offsets back to the prefix");
	CHECK(j && strstr(j, "\"frameTable\":{\"func\":[0,1],\"line\":[2,6]"),
	      "1.7 frames: function and line");
	CHECK(j && strstr(j, "\"startTime\":[1.000000],\"endTime\":[3.000000]"),
	      "1.8 one Off-CPU marker: the run of off-CPU samples");
	free(j);

	/* 2. --tag: pid and thread_id only. */
	view_filter_add(&filter, "thread_id=11");
	j = run(p, tl, &filter, &rc);
	CHECK(j && !strstr(j, "\"MainThread\"") && strstr(j, "thread 11"),
	      "2.1 --tag thread_id=11: that thread alone");
	free(j);
	filter.n = 0;
	view_filter_add(&filter, "thread_name=MainThread");
	CHECK(run(p, tl, &filter, &rc) == NULL && rc == -EINVAL,
	      "2.2 --tag thread_name: refused");
	timeline_data_free(tl);

	/* 3. A truncated record: "[truncated]" at the root. */
	static const int64_t trunc[][5] = { { 1, 10, 100, 10,
					      WIRE_SF_TRUNCATED } };
	tl = make_tl(trunc, 1);
	j = run(p, tl, NULL, &rc);
	CHECK(j && strstr(j, "\"stackTable\":{\"frame\":[0,1],"
			     "\"prefixOffset\":[0,1]") &&
		      strstr(j, "\"stringArray\":[\"[truncated]\""),
	      "3.1 [truncated] root");
	free(j);
	timeline_data_free(tl);

	/* 4. No timeline: refused, the format needs times. */
	CHECK(run(p, NULL, NULL, &rc) == NULL && rc == -EINVAL,
	      "4.1 no timeline: refused");
	view_free(p);
	fx_fini(&f);
	return check_summary();
}
