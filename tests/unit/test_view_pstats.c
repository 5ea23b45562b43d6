/*
 * test_view_pstats.c - the pstats export (view_pstats): the marshal'd
 * dict read back by a small marshal reader of the test's own, for the
 * numbers: calls as sample counts (a recursive function has more total
 * than primitive calls), tottime and cumtime in seconds with recursion
 * counted once per sample, callers the frames right above, a frame
 * without a file keyed ("~", 0, name), counts past 32 bits as marshal
 * longs, and a refusal for a sample type that is no time. Python's own
 * pstats reads the file end to end (tests/e2e/views.bats).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "pprof_fixture.h"

/* ---- a marshal reader for what view_pstats writes -------------------------- */

struct mv {
	char t; /* 'i' int (longs too), 'g', 'u', '(' or '{' */
	int64_t i;
	double d;
	char *s;	  /* 'u': a copy (the output is freed) */
	size_t n;	  /* 'u': bytes; '(': items; '{': pairs */
	struct mv *items; /* '{': key, value, key, value... */
};

static uint32_t u32(const unsigned char **p)
{
	uint32_t v = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 |
		     (uint32_t)(*p)[2] << 16 | (uint32_t)(*p)[3] << 24;
	*p += 4;
	return v;
}

/* One value at *p; 0, or -1 for a type it does not know. */
static int mread(const unsigned char **p, const unsigned char *end,
		 struct mv *v)
{
	memset(v, 0, sizeof(*v));
	if (*p >= end)
		return -1;
	v->t = (char)*(*p)++;
	switch (v->t) {
	case 'i':
		v->i = (int32_t)u32(p);
		return 0;
	case 'l': {
		int32_t n = (int32_t)u32(p);
		int32_t m = n < 0 ? -n : n;
		uint64_t mag = 0;
		for (int32_t k = 0; k < m; k++) {
			mag |= (uint64_t)((*p)[0] | (*p)[1] << 8) << (15 * k);
			*p += 2;
		}
		v->t = 'i';
		v->i = n < 0 ? -(int64_t)mag : (int64_t)mag;
		return 0;
	}
	case 'g':
		memcpy(&v->d, *p, 8); /* little-endian host, as the tests run */
		*p += 8;
		return 0;
	case 'u':
		v->n = u32(p);
		v->s = strndup((const char *)*p, v->n);
		*p += v->n;
		return 0;
	case '(':
		v->n = u32(p);
		v->items = calloc(v->n + 1, sizeof(*v->items));
		for (size_t k = 0; k < v->n; k++)
			if (mread(p, end, &v->items[k]) < 0)
				return -1;
		return 0;
	case '{':
		for (;;) {
			struct mv key;
			if (*p < end && **p == '0') {
				(*p)++;
				return 0;
			}
			if (mread(p, end, &key) < 0)
				return -1;
			v->items = realloc(v->items,
					   (2 * v->n + 2) * sizeof(*v->items));
			v->items[2 * v->n] = key;
			if (mread(p, end, &v->items[2 * v->n + 1]) < 0)
				return -1;
			v->n++;
		}
	default:
		return -1;
	}
}

static void mfree(struct mv *v)
{
	size_t n = v->t == '{' ? 2 * v->n : v->t == '(' ? v->n
							: 0;

	for (size_t k = 0; k < n; k++)
		mfree(&v->items[k]);
	free(v->items);
	free(v->s);
}

/* The value of key (file, line, name) in dict d, or NULL. */
static const struct mv *mget(const struct mv *d, const char *file,
			     int64_t line, const char *name)
{
	for (size_t k = 0; d && d->t == '{' && k < d->n; k++) {
		const struct mv *key = &d->items[2 * k];
		if (key->t == '(' && key->n == 3 &&
		    key->items[0].n == strlen(file) &&
		    !memcmp(key->items[0].s, file, key->items[0].n) &&
		    key->items[1].i == line &&
		    key->items[2].n == strlen(name) &&
		    !memcmp(key->items[2].s, name, key->items[2].n))
			return &d->items[2 * k + 1];
	}
	return NULL;
}

/* Whether tuple v starts with the calls a, b and the times tt, ct (s). */
static int nums(const struct mv *v, int64_t a, int64_t b, double tt,
		double ct)
{
	return v && v->t == '(' && v->n >= 4 && v->items[0].i == a &&
	       v->items[1].i == b && fabs(v->items[2].d - tt) <= 1e-6 * tt &&
	       fabs(v->items[3].d - ct) <= 1e-6 * ct;
}

static int run(const struct view_profile *p, const char *type, struct mv *v)
{
	char *buf = NULL, err[ERR_LEN];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int rc = view_pstats(out, p, type, NULL, err);
	const unsigned char *q;

	fclose(out);
	if (rc == 0) {
		q = (const unsigned char *)buf;
		rc = mread(&q, q + len, v) < 0 || q != (const unsigned char *)buf + len
			     ? -1
			     : 0;
	} else {
		fprintf(stderr, "view_pstats: %s\n", err);
	}
	free(buf);
	return rc;
}

int main(void)
{
	struct fx f;
	struct view_profile *p;
	struct mv d;

	fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
	uint64_t lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 2);
	uint64_t lf = fx_loc(&f, fx_func(&f, "f", "m.py", 5), 6);
	uint64_t ln = fx_loc(&f, fx_func(&f, "memcpy", "", 0), 0);
	fx_sample(&f, (uint64_t[]){ lf, lf, lm }, 3, (int64_t[]){ 2, 20 },
		  NULL);
	fx_sample(&f, (uint64_t[]){ lm }, 1, (int64_t[]){ 1, 10 }, NULL);
	fx_sample(&f, (uint64_t[]){ ln, lf, lm }, 3, (int64_t[]){ 1, 5 },
		  NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "0 read", check_summary());

	/* 1. cpu: calls from samples/count, times in seconds. */
	CHECK_OR_RETURN(run(p, NULL, &d) == 0 && d.t == '{' && d.n == 3,
			"1.0 a dict of three functions", check_summary());
	const struct mv *m = mget(&d, "m.py", 1, "main");
	const struct mv *fn = mget(&d, "m.py", 5, "f");
	const struct mv *nat = mget(&d, "~", 0, "memcpy");
	CHECK(nums(m, 4, 4, 10e-9, 35e-9), "1.1 main: 4 samples, 10 ns flat, "
					   "35 ns cumulative");
	CHECK(nums(fn, 3, 5, 20e-9, 25e-9),
	      "1.2 f: 3 primitive, 5 total (recursion), cumulative once");
	CHECK(nums(nat, 1, 1, 5e-9, 5e-9), "1.3 no file: (\"~\", 0, name)");
	CHECK(m && m->n == 5 && m->items[4].t == '{' && m->items[4].n == 0,
	      "1.4 main: no caller");
	const struct mv *fc = fn && fn->n == 5 ? &fn->items[4] : NULL;
	CHECK(fc && fc->n == 2, "1.5 f: two callers");
	/* a caller's tuple is (total, primitive, tottime, cumtime) */
	CHECK(nums(mget(fc, "m.py", 1, "main"), 3, 3, 0, 25e-9),
	      "1.6 f <- main");
	CHECK(nums(mget(fc, "m.py", 5, "f"), 2, 2, 20e-9, 20e-9),
	      "1.7 f <- f: the recursive call, f the leaf");
	const struct mv *nc = nat && nat->n == 5 ? &nat->items[4] : NULL;
	CHECK(nums(mget(nc, "m.py", 5, "f"), 1, 1, 5e-9, 5e-9),
	      "1.8 memcpy <- f");
	mfree(&d);

	/* 2. samples: a count is times the period (none here: refused). */
	CHECK(run(p, "samples", &d) < 0, "2.1 a count without a period");
	view_free(p);
	fx_fini(&f);

	/* 3. A count past 32 bits is a marshal long. */
	fx_init(&f, 2, "samples", "count", "wall", "nanoseconds");
	lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 2);
	fx_sample(&f, &lm, 1, (int64_t[]){ 3000000000LL, 7000000000LL },
		  NULL);
	p = fx_view(&f);
	CHECK_OR_RETURN(p != NULL, "3.0 read", check_summary());
	CHECK(run(p, NULL, &d) == 0 &&
		      nums(mget(&d, "m.py", 1, "main"), 3000000000LL, 3000000000LL,
			   7, 7),
	      "3.1 3e9 calls, 7 s");
	mfree(&d);
	view_free(p);
	fx_fini(&f);

	/* 4. Bytes are no time: refused. */
	fx_init(&f, 1, "alloc_space", "bytes");
	lm = fx_loc(&f, fx_func(&f, "main", "m.py", 1), 2);
	fx_sample(&f, &lm, 1, (int64_t[]){ 100 }, NULL);
	p = fx_view(&f);
	CHECK(p && run(p, NULL, &d) < 0, "4.1 bytes refused");
	view_free(p);
	fx_fini(&f);
	return check_summary();
}
