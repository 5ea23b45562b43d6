/*
 * view_pstats.c - the file Python's profile and cProfile modules save
 * (Stats.dump_stats), which pstats.Stats, `python -m pstats`, snakeviz
 * and gprof2dot read: a marshal'd dict
 *
 *     {(file, line, name): (primitive_calls, total_calls, tottime,
 *                           cumtime, {caller_key: (total_calls,
 *                                     primitive_calls, tottime, cumtime)})}
 *
 * A sampling profiler counts no calls and measures no call's time, so the
 * numbers are estimates from samples (docs/reading.md):
 * - calls are sample counts: primitive calls the samples with the function
 *   on the stack (once per sample), total calls its frames in them (a
 *   recursive function has more: pstats shows "total/primitive" as it
 *   does for real recursion);
 * - tottime is the value of the samples whose leaf it is, cumtime the
 *   value of the samples with it anywhere on the stack, once per sample
 *   (so it agrees with `pyprof top --sort cum`), in seconds: nanoseconds
 *   as they are, a count of samples times the profile's period;
 * - a caller is the frame right above the function in a sample; its
 *   entry has the same four numbers for the samples where that caller
 *   called the function.
 * Functions are keyed by (file, start line, name), cProfile's own key; a
 * frame without a file (native code) is ("~", 0, name), as cProfile
 * writes built-in functions.
 *
 * marshal is written by hand, in the subset every Python 3 reads
 * (versions 2 and later of the format, no references): '{' dict ending
 * in '0', '(' tuple with a 32-bit count, 'i' 32-bit int or 'l' long of
 * 15-bit digits, 'g' binary double, 'u' UTF-8 string with a 32-bit
 * length. All little-endian.
 */
#include "views/renderers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"

/* The numbers of a function, or of one caller of it. */
struct ps_num {
	int64_t prim, total; /* sample counts */
	int64_t flat, cum;   /* in the sample type's unit */
};

/* One caller edge: callee key <- caller key. */
struct ps_edge {
	uint32_t callee, caller;
	uint32_t stamp; /* the last sample counted in prim and cum, + 1 */
	struct ps_num n;
};

struct ps {
	struct ps_num *fn; /* per key */
	uint32_t *stamp;   /* per key: the last sample counted, + 1 */
	struct ps_edge *edges;
	size_t n_edges, edges_cap;
	struct idhash edge_hash;
	uint32_t **by_callee; /* per key: its edges' indexes */
	size_t *n_by_callee;
};

static int edge_eq(const void *ctx, uint32_t id)
{
	const struct ps_edge *want = ((const struct ps_edge *const *)ctx)[0];
	const struct ps *s = ((const struct ps *const *)ctx)[1];
	const struct ps_edge *e = &s->edges[id - 1];

	return e->callee == want->callee && e->caller == want->caller;
}

static struct ps_edge *edge_get(struct ps *s, uint32_t callee, uint32_t caller)
{
	struct ps_edge want = { .callee = callee, .caller = caller };
	const void *ctx[2] = { &want, s };
	uint64_t h = idhash_combine(idhash_mix(callee), caller);
	uint32_t id = idhash_find(&s->edge_hash, h, edge_eq, ctx);

	if (id)
		return &s->edges[id - 1];
	if (grow_array(&s->edges, &s->edges_cap, s->n_edges + 1,
		       sizeof(*s->edges), 256) < 0 ||
	    idhash_insert(&s->edge_hash, h, (uint32_t)s->n_edges + 1) < 0)
		return NULL;
	s->edges[s->n_edges] = want;
	return &s->edges[s->n_edges++];
}

/* ---- marshal ---------------------------------------------------------------- */

static void m_u32(FILE *out, uint32_t v)
{
	putc((int)(v & 0xff), out);
	putc((int)((v >> 8) & 0xff), out);
	putc((int)((v >> 16) & 0xff), out);
	putc((int)(v >> 24), out);
}

static void m_int(FILE *out, int64_t v)
{
	uint64_t mag;
	int n = 0;
	uint16_t digit[5];

	if (v >= INT32_MIN && v <= INT32_MAX) {
		putc('i', out);
		m_u32(out, (uint32_t)(int32_t)v);
		return;
	}
	/* Larger: a long, its magnitude in 15-bit digits, least significant
	 * first, the sign on the digit count. */
	mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	while (mag) {
		digit[n++] = (uint16_t)(mag & 0x7fff);
		mag >>= 15;
	}
	putc('l', out);
	m_u32(out, (uint32_t)(v < 0 ? -n : n));
	for (int i = 0; i < n; i++) {
		putc(digit[i] & 0xff, out);
		putc(digit[i] >> 8, out);
	}
}

static void m_float(FILE *out, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof(bits));
	putc('g', out);
	for (int i = 0; i < 8; i++)
		putc((int)((bits >> (8 * i)) & 0xff), out);
}

/* A str: marshal.load refuses bytes that are not UTF-8, and one bad name
 * must not make the whole file unreadable, so such a byte becomes U+FFFD. */
static void m_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t len = 0, i = 0;

	for (int pass = 0; pass < 2; pass++) {
		if (pass) {
			putc('u', out);
			m_u32(out, (uint32_t)len);
		}
		for (i = 0; s[i];) {
			size_t n = (s[i] & 0x80) == 0	   ? 1
				   : (s[i] & 0xe0) == 0xc0 ? 2
				   : (s[i] & 0xf0) == 0xe0 ? 3
				   : (s[i] & 0xf8) == 0xf0 ? 4
							   : 0;
			size_t k;
			for (k = 1; n && k < n; k++)
				if ((s[i + k] & 0xc0) != 0x80)
					n = 0;
			if (n == 0 || (n > 1 && (s[i] < 0xc2 || s[i] > 0xf4))) {
				if (pass)
					fputs("\xef\xbf\xbd", out);
				len += pass ? 0 : 3;
				i++;
				continue;
			}
			if (pass)
				fwrite(s + i, 1, n, out);
			len += pass ? 0 : n;
			i += n;
		}
	}
}

static void m_key(FILE *out, const struct view_key *k)
{
	putc('(', out);
	m_u32(out, 3);
	m_str(out, k->file[0] ? k->file : "~");
	m_int(out, k->file[0] ? k->line : 0);
	m_str(out, k->name);
}

/* ---- counting ------------------------------------------------------------------ */

/* Adds sample i (value v, c samples) to the functions and caller edges on its stack. */
static int add_sample(struct ps *s, const uint32_t *kmap,
		      const struct view_sample *smp, uint32_t i, int64_t v,
		      int64_t c)
{
	uint32_t stamp = i + 1;

	if (smp->n_frames == 0)
		return 0;
	s->fn[kmap[smp->frames[0]]].flat += v;
	for (uint32_t j = 0; j < smp->n_frames; j++) {
		uint32_t k = kmap[smp->frames[j]];
		struct ps_num *f = &s->fn[k];
		f->total += c;
		if (s->stamp[k] != stamp) {
			/* recursion: the time once per sample */
			s->stamp[k] = stamp;
			f->prim += c;
			f->cum += v;
		}
		if (j + 1 == smp->n_frames)
			continue; /* the root has no caller */
		struct ps_edge *e = edge_get(s, k, kmap[smp->frames[j + 1]]);
		if (!e)
			return -ENOMEM;
		e->n.total += c;
		if (j == 0)
			e->n.flat += v;
		if (e->stamp != stamp) {
			e->stamp = stamp;
			e->n.prim += c;
			e->n.cum += v;
		}
	}
	return 0;
}

/* The edges grouped by callee, for writing each function's callers. */
static int group_edges(struct ps *s, size_t n_keys)
{
	size_t *fill;

	s->n_by_callee = calloc(n_keys + 1, sizeof(*s->n_by_callee));
	s->by_callee = calloc(n_keys + 1, sizeof(*s->by_callee));
	fill = calloc(n_keys + 1, sizeof(*fill));
	if (!s->n_by_callee || !s->by_callee || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_edges; i++)
		s->n_by_callee[s->edges[i].callee]++;
	for (size_t k = 0; k < n_keys; k++) {
		if (!s->n_by_callee[k])
			continue;
		s->by_callee[k] = malloc(s->n_by_callee[k] *
					 sizeof(**s->by_callee));
		if (!s->by_callee[k]) {
			free(fill);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < s->n_edges; i++) {
		uint32_t c = s->edges[i].callee;
		s->by_callee[c][fill[c]++] = (uint32_t)i;
	}
	free(fill);
	return 0;
}

/* ---- writing --------------------------------------------------------------------- */

static void m_numbers(FILE *out, const struct ps_num *n, double scale,
		      int caller)
{
	/* A function's entry starts with primitive calls, a caller's with
	 * total calls: that is how cProfile writes them and pstats reads. */
	m_int(out, caller ? n->total : n->prim);
	m_int(out, caller ? n->prim : n->total);
	m_float(out, (double)n->flat * scale);
	m_float(out, (double)n->cum * scale);
}

static void write_dict(FILE *out, const struct ps *s,
		       const struct view_keys *keys, double scale)
{
	putc('{', out);
	for (size_t k = 0; k < keys->n; k++) {
		if (!s->fn[k].total)
			continue;
		m_key(out, &keys->v[k]);
		putc('(', out);
		m_u32(out, 5);
		m_numbers(out, &s->fn[k], scale, 0);
		putc('{', out);
		for (size_t i = 0; i < s->n_by_callee[k]; i++) {
			const struct ps_edge *e = &s->edges[s->by_callee[k][i]];
			m_key(out, &keys->v[e->caller]);
			putc('(', out);
			m_u32(out, 4);
			m_numbers(out, &e->n, scale, 1);
		}
		putc('0', out);
	}
	putc('0', out);
}

/* Seconds per unit of the sample type: a time unit scales; a count of
 * samples weighs the profile's period when that is a time. 0 if neither. */
static double seconds_per_unit(const struct view_profile *p, size_t type)
{
	static const struct {
		const char *unit;
		double s;
	} time_units[] = { { "nanoseconds", 1e-9 },
			   { "microseconds", 1e-6 },
			   { "milliseconds", 1e-3 },
			   { "seconds", 1 } };
	const char *unit = p->types[type].unit;

	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (!strcmp(unit, time_units[i].unit))
			return time_units[i].s;
	if (strcmp(unit, "count") || p->period <= 0 || !p->period_type.unit)
		return 0;
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++)
		if (!strcmp(p->period_type.unit, time_units[i].unit))
			return time_units[i].s * (double)p->period;
	return 0;
}

int view_pstats(FILE *out, const struct view_profile *p,
		const char *sample_type, const struct view_filter *filter,
		char *err)
{
	struct view_keys keys;
	struct ps s = { 0 };
	uint32_t *kmap = NULL;
	size_t type;
	int count_type;
	double scale;
	int rc;

	err[0] = 0;
	if (view_need_type(p, sample_type, &type, err) < 0)
		return -ENOENT;
	scale = seconds_per_unit(p, type);
	if (scale <= 0) {
		snprintf(err, ERR_LEN, "pstats holds times: the sample "
				       "type '%s' is in %s, not a time (pick cpu or wall "
				       "with --sample-type)",
			 p->types[type].type,
			 p->types[type].unit);
		return -EINVAL;
	}
	/* A pprof sample is every sample of one stack and label set: its
	 * samples/count value says how many. */
	count_type = view_count_type(p);
	view_keys_init(&keys, VIEW_BY_FUNCTION);
	idhash_init(&s.edge_hash);
	rc = view_keys_map(&keys, p, &kmap);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	s.fn = calloc(keys.n + 1, sizeof(*s.fn));
	s.stamp = calloc(keys.n + 1, sizeof(*s.stamp));
	if (!s.fn || !s.stamp)
		goto out;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *smp = &p->samples[i];
		if (smp->values[type] <= 0 ||
		    (filter && !view_sample_matches(smp, filter)))
			continue;
		rc = add_sample(&s, kmap, smp, (uint32_t)i, smp->values[type],
				count_type >= 0 ? smp->values[count_type] : 1);
		if (rc < 0)
			goto out;
	}
	rc = group_edges(&s, keys.n);
	if (rc < 0)
		goto out;
	write_dict(out, &s, &keys, scale);
	rc = ferror(out) ? -EIO : 0;
out:
	view_errno_text(rc, err);
	for (size_t k = 0; s.by_callee && k < keys.n; k++)
		free(s.by_callee[k]);
	free(s.by_callee);
	free(s.n_by_callee);
	free(s.edges);
	idhash_fini(&s.edge_hash);
	free(s.fn);
	free(s.stamp);
	free(kmap);
	view_keys_fini(&keys);
	return rc;
}
