/*
 * test_view_read.c - the pprof reader every view uses (collector/views/view_read.h):
 * profiles built with protobuf-c by tests/unit/pprof_fixture.h are read
 * back and checked field by field, including what Go's profiles have and
 * ours do not (sparse ids, inlined Lines, address-only Locations, default
 * sample type), and every malformed input is refused with a reason.
 * Also: sample types, label filters, keys, value formatting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

/* 1. A small profile, ids dense or sparse. */
static void test_basic(int sparse)
{
	struct fx f;
	struct view_profile *p;
	uint64_t fm, fw, lm, lw;

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	f.sparse = sparse;
	fm = fx_func(&f, "main", "app.py", 1);
	fw = fx_func(&f, "work", "app.py", 10);
	lm = fx_loc(&f, fm, 3);
	lw = fx_loc(&f, fw, 12);
	fx_sample(&f, (uint64_t[]){ lw, lm }, 2, (int64_t[]){ 3, 30 },
		  "pid#42", "thread_name=MainThread", NULL);
	fx_sample(&f, (uint64_t[]){ lm }, 1, (int64_t[]){ 1, 10 }, NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "1.1 profile read", );
	CHECK(p->n_types == 2 && !strcmp(p->types[1].type, "cpu") &&
		      !strcmp(p->types[1].unit, "nanoseconds"),
	      "1.2 sample types");
	CHECK(p->default_type == 1, "1.3 default type is the last");
	CHECK(p->n_samples == 2 && p->samples[0].n_frames == 2,
	      "1.4 samples and frames");
	const struct view_frame *leaf = &p->frames[p->samples[0].frames[0]];
	CHECK(!strcmp(p->funcs[leaf->func].name, "work") && leaf->line == 12,
	      "1.5 leaf first: work:12");
	CHECK(!strcmp(p->funcs[p->frames[p->samples[0].frames[1]].func].name,
		      "main"),
	      "1.6 then main");
	CHECK(p->samples[0].values[1] == 30, "1.7 values");
	CHECK(p->samples[0].n_labels == 2 &&
		      !strcmp(p->samples[0].labels[0].key, "pid") &&
		      p->samples[0].labels[0].str == NULL &&
		      p->samples[0].labels[0].num == 42,
	      "1.8 numeric label");
	CHECK(p->samples[0].labels[1].str &&
		      !strcmp(p->samples[0].labels[1].str, "MainThread"),
	      "1.9 string label");
	uint32_t first, n;
	CHECK(view_find_location(p, lw, &first, &n) == 0 && n == 1 &&
		      p->frames[first].line == 12,
	      "1.10 location by id");
	CHECK(view_find_location(p, 999999, &first, &n) == -ENOENT,
	      "1.11 unknown location id");
	view_free(p);
	fx_fini(&f);
}

/* 2. Inlined lines, address-only locations, default_sample_type. */
static void test_go_like(void)
{
	struct fx f;
	struct view_profile *p;
	uint64_t fa, fb, l1, l2;

	fx_init(&f, 2, "alloc_space", "bytes", "inuse_space", "bytes");
	f.sparse = 1;
	fa = fx_func(&f, "runtime.mallocgc", "malloc.go", 900);
	fb = fx_func(&f, "main.inner", "main.go", 5);
	l1 = fx_loc_lines(&f, (uint64_t[]){ fb, fa },
			  (int64_t[]){ 7, 950 }, 2, 0x1000);
	l2 = fx_loc_lines(&f, NULL, NULL, 0, 0xdeadbeef);
	f.default_type = fx_str(&f, "alloc_space");
	fx_sample(&f, (uint64_t[]){ l2, l1 }, 2, (int64_t[]){ 4096, 0 },
		  NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "2.1 profile read", );
	CHECK(p->default_type == 0, "2.2 default_sample_type honoured");
	CHECK(p->samples[0].n_frames == 3, "2.3 two lines + an address");
	CHECK(!strcmp(p->funcs[p->frames[p->samples[0].frames[0]].func].name,
		      "0xdeadbeef"),
	      "2.4 address frame named by address");
	CHECK(!strcmp(p->funcs[p->frames[p->samples[0].frames[1]].func].name,
		      "main.inner") &&
		      !strcmp(p->funcs[p->frames[p->samples[0].frames[2]].func].name,
			      "runtime.mallocgc"),
	      "2.5 inlined: callee first");
	view_free(p);
	fx_fini(&f);
}

/* 3. Malformed input: each is refused with a reason, nothing leaks. */
static void expect_bad(struct fx *f, const char *what, const char *needle)
{
	size_t len;
	void *data = fx_pack(f, 0, &len);
	struct view_profile *p = (void *)1;
	char err[ERR_LEN] = "";
	int rc = view_read_mem(data, len, &p, err);
	CHECK(rc == -EINVAL && p == NULL && strstr(err, needle), what);
	if (rc != -EINVAL)
		fprintf(stderr, "  got %d, '%s'\n", rc, err);
	free(data);
}

static void test_bad(void)
{
	struct fx f;
	uint64_t fn, l;
	struct view_profile *p;
	char err[ERR_LEN];

	fx_init(&f, 1, "samples", "count");
	fn = fx_func(&f, "f", "f.py", 1);
	l = fx_loc(&f, fn, 1);
	fx_sample(&f, (uint64_t[]){ l + 5 }, 1, (int64_t[]){ 1 }, NULL);
	expect_bad(&f, "3.1 dangling location id", "no location");
	f.samples[0]->location_id[0] = l;
	f.samples[0]->n_value = 0;
	expect_bad(&f, "3.2 value count mismatch", "values");
	f.samples[0]->n_value = 1;
	f.locs[0]->line[0]->function_id = 77;
	expect_bad(&f, "3.3 dangling function id", "no function");
	f.locs[0]->line[0]->function_id = fn;
	f.funcs[0]->name = 1000;
	expect_bad(&f, "3.4 string index out of range", "string index");
	f.funcs[0]->name = 1;
	free(f.strs[0]);
	f.strs[0] = strdup("x");
	expect_bad(&f, "3.5 string 0 must be empty", "string table");
	free(f.strs[0]);
	f.strs[0] = strdup("");
	size_t nt = f.n_types;
	f.n_types = 0;
	expect_bad(&f, "3.6 no sample types", "no sample types");
	f.n_types = nt;
	f.locs[0]->id = 0;
	f.sparse = 1; /* ids not dense any more: the sorted path */
	expect_bad(&f, "3.7 zero location id", "zero");
	f.locs[0]->id = 1;
	fx_fini(&f);

	CHECK(view_read_mem("\x1f\x8b\x08\x00garbage", 12, &p, err) ==
			      -EINVAL &&
		      p == NULL,
	      "3.8 bad gzip refused");
	CHECK(view_read_mem("\xff\xff\xff\xff\xff", 5, &p, err) == -EINVAL,
	      "3.9 bad protobuf refused");
	CHECK(view_read_file("/nonexistent/x.pb.gz", &p, err) == -ENOENT &&
		      !strstr(err, "/nonexistent"),
	      "3.10 missing file: -ENOENT, the path left to the caller");
	CHECK(view_read_mem("", 0, &p, err) == -EINVAL && p == NULL &&
		      !strcmp(err, "not a pprof profile (empty file)"),
	      "3.11 empty file: says so");

	/* A truncated gzip stream. */
	fx_init(&f, 1, "samples", "count");
	fn = fx_func(&f, "f", "f.py", 1);
	l = fx_loc(&f, fn, 1);
	for (int i = 0; i < 100; i++)
		fx_sample(&f, &l, 1, (int64_t[]){ i }, NULL);
	size_t len;
	void *gz = fx_pack(&f, 1, &len);
	CHECK(view_read_mem(gz, len / 2, &p, err) == -EINVAL &&
		      strstr(err, "truncated"),
	      "3.11 truncated gzip refused");
	CHECK(view_read_mem(gz, len, &p, err) == 0 && p->n_samples == 100,
	      "3.12 the whole stream reads");
	view_free(p);
	free(gz);
	fx_fini(&f);
}

/* 4. Types, filters, keys, formatting. */
static void test_helpers(void)
{
	struct fx f;
	struct view_profile *p;
	struct view_filter flt = { 0 };
	struct view_keys keys;
	uint32_t *map = NULL;
	size_t idx;
	char buf[64];

	fx_init(&f, 2, "samples", "count", "wall", "nanoseconds");
	uint64_t f1 = fx_func(&f, "<module>", "a.py", 1);
	uint64_t f2 = fx_func(&f, "<module>", "b.py", 1);
	uint64_t f3 = fx_func(&f, "<module>", "a.py", 1); /* same as f1 */
	uint64_t l1 = fx_loc(&f, f1, 2), l2 = fx_loc(&f, f2, 3);
	uint64_t l3 = fx_loc(&f, f3, 4);
	fx_sample(&f, &l1, 1, (int64_t[]){ 1, 1 }, "pid#1", "gil=held", NULL);
	fx_sample(&f, &l2, 1, (int64_t[]){ 1, 1 }, "pid#2", NULL);
	fx_sample(&f, &l3, 1, (int64_t[]){ 1, 1 }, "pid#3", "gil=released",
		  NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "4.0 read", );
	CHECK(view_pick_type(p, "wall", &idx) == 0 && idx == 1, "4.1 by name");
	CHECK(view_pick_type(p, "samples/count", &idx) == 0 && idx == 0,
	      "4.2 by type/unit");
	CHECK(view_pick_type(p, "cpu", &idx) == -ENOENT, "4.3 unknown type");
	CHECK(view_count_type(p) == 0, "4.4 count type");

	CHECK(view_filter_add(&flt, "noequals") == -EINVAL &&
		      view_filter_add(&flt, "=x") == -EINVAL,
	      "4.5 bad tags");
	view_filter_add(&flt, "pid=1");
	CHECK(view_sample_matches(&p->samples[0], &flt) &&
		      !view_sample_matches(&p->samples[1], &flt),
	      "4.6 numeric label filter");
	view_filter_add(&flt, "pid=3");
	CHECK(view_sample_matches(&p->samples[2], &flt) &&
		      !view_sample_matches(&p->samples[1], &flt),
	      "4.7 two values of one key: either");
	view_filter_add(&flt, "gil=held");
	CHECK(view_sample_matches(&p->samples[0], &flt) &&
		      !view_sample_matches(&p->samples[2], &flt),
	      "4.8 two keys: both");

	view_keys_init(&keys, VIEW_BY_FUNCTION);
	CHECK_OR_RETURN(view_keys_map(&keys, p, &map) == 0, "4.9 keys", );
	CHECK(keys.n == 2, "4.10 <module> of a.py twice is one key, b.py "
			   "another");
	CHECK(map[p->samples[0].frames[0]] == map[p->samples[2].frames[0]] &&
		      map[p->samples[0].frames[0]] != map[p->samples[1].frames[0]],
	      "4.11 frames map to keys by name and file");
	free(map);
	view_keys_fini(&keys);
	view_keys_init(&keys, VIEW_BY_LINE);
	view_keys_map(&keys, p, &map);
	CHECK(keys.n == 3, "4.12 by line: three lines");
	free(map);
	view_keys_fini(&keys);

	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 1234567890,
				     "nanoseconds"),
		      "1.23s"),
	      "4.13 1.23s");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 45600000,
				     "nanoseconds"),
		      "45.6ms"),
	      "4.14 45.6ms");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 789000,
				     "nanoseconds"),
		      "789us"),
	      "4.15 789us");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 12, "nanoseconds"),
		      "12ns"),
	      "4.16 12ns");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 0, "nanoseconds"),
		      "0"),
	      "4.17 zero");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 1536, "bytes"),
		      "1.50kB"),
	      "4.18 bytes");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 123, "count"), "123"),
	      "4.19 counts are integers");
	CHECK(!strcmp(view_fmt_value(buf, sizeof(buf), 2500, "milliseconds"),
		      "2.50s"),
	      "4.20 other time units scale");
	view_free(p);
	fx_fini(&f);
}

/* 5. Random corruption of a valid message: refused, or read and then
 * drawn, summed and folded without a crash (run under valgrind/ASan by
 * make valgrind/asan). */
static void test_fuzz(void)
{
	struct fx f;
	size_t len;
	int n_ok = 0, n_bad = 0;
	char err[ERR_LEN];
	FILE *null = fopen("/dev/null", "w");

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t l1 = fx_loc(&f, fx_func(&f, "a", "a.py", 1), 2);
	uint64_t l2 = fx_loc(&f, fx_func(&f, "b", "b.py", 3), 4);
	fx_sample(&f, (uint64_t[]){ l2, l1 }, 2, (int64_t[]){ 1, 10 },
		  "pid#1", "thread_name=x", NULL);
	fx_sample(&f, (uint64_t[]){ l1 }, 1, (int64_t[]){ 2, 20 }, NULL);
	uint8_t *data = fx_pack(&f, 0, &len), *bad = malloc(len);
	srand(5);
	for (int i = 0; i < 5000; i++) {
		struct view_profile *p = NULL;
		memcpy(bad, data, len);
		for (int k = 1 + rand() % 3; k > 0; k--)
			bad[rand() % len] = (uint8_t)rand();
		if (view_read_mem(bad, len, &p, err) < 0) {
			n_bad++;
			continue;
		}
		n_ok++;
		struct view_flame_opts fo = { 0 };
		struct view_top_opts to = { .by = VIEW_BY_LINE };
		view_flame(null, p, &fo, err);
		view_top(null, p, &to, err);
		view_folded(null, p, NULL, NULL, VIEW_BY_FUNCTION, 0, err);
		view_free(p);
	}
	fprintf(stderr, "fuzz: %d read, %d refused\n", n_ok, n_bad);
	CHECK(n_ok > 0 && n_bad > 0, "5.1 corrupted messages: some refused, "
				     "the rest drawn, none crashed");
	free(bad);
	free(data);
	fclose(null);
	fx_fini(&f);
}

int main(void)
{
	test_basic(0);
	test_basic(1);
	test_go_like();
	test_bad();
	test_helpers();
	test_fuzz();
	return check_summary();
}
