/*
 * pprof_fixture.h - build pprof profiles in memory for the view tests,
 * with protobuf-c's generated code (the same message definitions any
 * pprof writer uses), independently of collector/daemon/pprof.c.
 *
 *   struct fx f; fx_init(&f, 2, "samples", "count", "cpu", "nanoseconds");
 *   uint64_t fn = fx_func(&f, "work", "app.py", 10);
 *   uint64_t l = fx_loc(&f, fn, 12);
 *   fx_sample(&f, (uint64_t[]){ l }, 1, (int64_t[]){ 1, 10000000 },
 *             "pid#42", "thread_name=main", NULL);
 *   data = fx_pack(&f, 1, &len);   // gzipped, malloc'd
 *   fx_fini(&f);
 *
 * Labels are "key=text" (string) or "key#N" (number). With f.sparse set
 * before adding anything, function and location ids are 1000 + 7 * i
 * instead of 1..n, as in profiles merged by other tools. Include in one
 * test file only (static functions).
 */
#ifndef PYPROF_PPROF_FIXTURE_H
#define PYPROF_PPROF_FIXTURE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile FxProfile;
typedef Perftools__Profiles__Sample FxSample;
typedef Perftools__Profiles__Label FxLabel;
typedef Perftools__Profiles__Location FxLocation;
typedef Perftools__Profiles__Line FxLine;
typedef Perftools__Profiles__Function FxFunction;
typedef Perftools__Profiles__ValueType FxValueType;

#define FX_GROW(arr, n, cap)                                            \
	do {                                                            \
		if ((n) == (cap)) {                                     \
			(cap) = (cap) ? 2 * (cap) : 16;                 \
			(arr) = realloc((arr), (cap) * sizeof(*(arr))); \
			if (!(arr))                                     \
				abort();                                \
		}                                                       \
	} while (0)

struct fx {
	int sparse;
	char **strs;
	size_t n_strs, cap_strs;
	FxValueType *types;
	size_t n_types;
	FxFunction **funcs;
	size_t n_funcs, cap_funcs;
	FxLocation **locs;
	size_t n_locs, cap_locs;
	FxSample **samples;
	size_t n_samples, cap_samples;
	int64_t default_type; /* string index, 0 = none */
	FxProfile p;
};

static int64_t fx_str(struct fx *f, const char *s)
{
	for (size_t i = 0; i < f->n_strs; i++)
		if (!strcmp(f->strs[i], s))
			return (int64_t)i;
	FX_GROW(f->strs, f->n_strs, f->cap_strs);
	f->strs[f->n_strs] = strdup(s);
	return (int64_t)f->n_strs++;
}

static uint64_t fx_id(const struct fx *f, size_t i)
{
	return f->sparse ? 1000 + 7 * (uint64_t)i : (uint64_t)i + 1;
}

/* n_types pairs of (type, unit) strings follow. */
static void fx_init(struct fx *f, size_t n_types, ...)
{
	va_list ap;

	memset(f, 0, sizeof(*f));
	fx_str(f, "");
	f->types = calloc(n_types, sizeof(*f->types));
	f->n_types = n_types;
	va_start(ap, n_types);
	for (size_t i = 0; i < n_types; i++) {
		perftools__profiles__value_type__init(&f->types[i]);
		f->types[i].type = fx_str(f, va_arg(ap, const char *));
		f->types[i].unit = fx_str(f, va_arg(ap, const char *));
	}
	va_end(ap);
}

static uint64_t fx_func(struct fx *f, const char *name, const char *file,
			int64_t start)
{
	FxFunction *fn = calloc(1, sizeof(*fn));
	perftools__profiles__function__init(fn);
	fn->id = fx_id(f, f->n_funcs);
	fn->name = fx_str(f, name);
	fn->system_name = fn->name;
	fn->filename = fx_str(f, file);
	fn->start_line = start;
	FX_GROW(f->funcs, f->n_funcs, f->cap_funcs);
	f->funcs[f->n_funcs++] = fn;
	return fn->id;
}

/* A location of n lines (inlined: callee first); n = 0 is an address. */
static uint64_t fx_loc_lines(struct fx *f, const uint64_t *funcs,
			     const int64_t *lines, size_t n, uint64_t address)
{
	FxLocation *l = calloc(1, sizeof(*l));
	perftools__profiles__location__init(l);
	l->id = fx_id(f, f->n_locs);
	l->address = address;
	l->n_line = n;
	l->line = calloc(n + 1, sizeof(*l->line));
	for (size_t i = 0; i < n; i++) {
		FxLine *ln = calloc(1, sizeof(*ln));
		perftools__profiles__line__init(ln);
		ln->function_id = funcs[i];
		ln->line = lines[i];
		l->line[i] = ln;
	}
	FX_GROW(f->locs, f->n_locs, f->cap_locs);
	f->locs[f->n_locs++] = l;
	return l->id;
}

static uint64_t fx_loc(struct fx *f, uint64_t func, int64_t line)
{
	return fx_loc_lines(f, &func, &line, 1, 0);
}

/* Labels: NULL-terminated "key=text" / "key#N" after vals. */
static void fx_sample(struct fx *f, const uint64_t *locs, size_t n_locs,
		      const int64_t *vals, ...)
{
	FxSample *s = calloc(1, sizeof(*s));
	const char *kv;
	va_list ap;

	perftools__profiles__sample__init(s);
	s->n_location_id = n_locs;
	s->location_id = calloc(n_locs + 1, sizeof(uint64_t));
	memcpy(s->location_id, locs, n_locs * sizeof(uint64_t));
	s->n_value = f->n_types;
	s->value = calloc(f->n_types, sizeof(int64_t));
	memcpy(s->value, vals, f->n_types * sizeof(int64_t));
	s->label = calloc(16, sizeof(*s->label));
	va_start(ap, vals);
	while ((kv = va_arg(ap, const char *)) != NULL && s->n_label < 16) {
		FxLabel *l = calloc(1, sizeof(*l));
		const char *sep = strpbrk(kv, "=#");
		char key[64];
		perftools__profiles__label__init(l);
		snprintf(key, sizeof(key), "%.*s", (int)(sep - kv), kv);
		l->key = fx_str(f, key);
		if (*sep == '=')
			l->str = fx_str(f, sep + 1);
		else
			l->num = strtoll(sep + 1, NULL, 10);
		s->label[s->n_label++] = l;
	}
	va_end(ap);
	FX_GROW(f->samples, f->n_samples, f->cap_samples);
	f->samples[f->n_samples++] = s;
}

/* The packed profile, gzipped if gz; malloc'd, *len bytes. */
static void *fx_pack(struct fx *f, int gz, size_t *len)
{
	FxProfile *p = &f->p;
	FxValueType **vt = calloc(f->n_types, sizeof(*vt));
	uint8_t *buf, *out;
	size_t n;

	for (size_t i = 0; i < f->n_types; i++)
		vt[i] = &f->types[i];
	perftools__profiles__profile__init(p);
	p->n_sample_type = f->n_types;
	p->sample_type = vt;
	p->n_sample = f->n_samples;
	p->sample = f->samples;
	p->n_location = f->n_locs;
	p->location = f->locs;
	p->n_function = f->n_funcs;
	p->function = f->funcs;
	p->n_string_table = f->n_strs;
	p->string_table = f->strs;
	p->default_sample_type = f->default_type;
	p->time_nanos = 1700000000000000000ll;
	n = perftools__profiles__profile__get_packed_size(p);
	buf = malloc(n + 1);
	perftools__profiles__profile__pack(p, buf);
	free(vt);
	if (!gz) {
		*len = n;
		return buf;
	}
	uLongf cap = compressBound((uLong)n) + 64;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	out = malloc(cap);
	deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = buf;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	*len = zs.total_out;
	deflateEnd(&zs);
	free(buf);
	return out;
}

static void fx_fini(struct fx *f)
{
	for (size_t i = 0; i < f->n_strs; i++)
		free(f->strs[i]);
	free(f->strs);
	free(f->types);
	for (size_t i = 0; i < f->n_funcs; i++)
		free(f->funcs[i]);
	free(f->funcs);
	for (size_t i = 0; i < f->n_locs; i++) {
		for (size_t j = 0; j < f->locs[i]->n_line; j++)
			free(f->locs[i]->line[j]);
		free(f->locs[i]->line);
		free(f->locs[i]);
	}
	free(f->locs);
	for (size_t i = 0; i < f->n_samples; i++) {
		FxSample *s = f->samples[i];
		for (size_t j = 0; j < s->n_label; j++)
			free(s->label[j]);
		free(s->label);
		free(s->location_id);
		free(s->value);
		free(s);
	}
	free(f->samples);
}

/* Packs f and reads it back with view_read_mem; NULL on failure. */
#ifdef PYPROF_VIEW_READ_H
static struct view_profile *fx_view(struct fx *f)
{
	size_t len;
	void *data = fx_pack(f, 1, &len);
	struct view_profile *p = NULL;
	char err[ERR_LEN];
	if (view_read_mem(data, len, &p, err) < 0)
		fprintf(stderr, "fx_view: %s\n", err);
	free(data);
	return p;
}
#endif

#endif /* PYPROF_PPROF_FIXTURE_H */
