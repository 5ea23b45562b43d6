/*
 * otlp_conv.c - pprof mappings, functions, locations, labels and stacks
 * as OTLP dictionary items (see otlp_conv.h for what becomes what).
 *
 * Each pprof item is converted once, when a sample first refers to it,
 * and its dictionary index kept in an array beside the pprof's; pprof ids
 * (any non-zero uint64, unique per kind) are found by binary search in a
 * sorted copy. Anything a sample refers to that the profile does not hold
 * makes the whole input bad: the caller answers -EINVAL.
 */
#include "push/otlp_conv.h"

#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sorted.h"

typedef Perftools__Profiles__Mapping PprofMapping;
typedef Perftools__Profiles__Location PprofLocation;
typedef Perftools__Profiles__Function PprofFunction;
typedef Perftools__Profiles__Label PprofLabel;
typedef Perftools__Profiles__Sample PprofSample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping Mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location Location;
typedef Opentelemetry__Proto__Profiles__V1development__Line Line;
typedef Opentelemetry__Proto__Profiles__V1development__Function Function;
typedef Opentelemetry__Proto__Profiles__V1development__Stack Stack;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit
	KeyValueAndUnit;

/* The most labels of one sample converted (wire.h allows 64 set from code
 * plus pyprof's own); the rest are dropped. */
#define CONV_MAX_LABELS 128

void otlp_conv_bad(struct otlp_conv *c, const char *fmt, ...)
{
	va_list ap;
	if (c->bad)
		return;
	c->bad = 1;
	va_start(ap, fmt);
	vsnprintf(c->err, c->err_len, fmt, ap);
	va_end(ap);
}

const char *otlp_conv_str(struct otlp_conv *c, int64_t i)
{
	if (i < 0 || (uint64_t)i >= c->p->n_string_table) {
		otlp_conv_bad(c, "string index %lld out of range (%zu strings)",
			      (long long)i, c->p->n_string_table);
		return "";
	}
	return c->p->string_table[i];
}

/* ---- ids -------------------------------------------------------------------- */

static int ent_cmp(const void *a, const void *b)
{
	const struct otlp_id_ent *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sorted (id, index) of n items whose ids get_id reads; -EINVAL for an
 * id 0 or one given twice. *idx gets n indices set to -1. */
static int ids_index(struct otlp_conv *c, const char *what, void **items,
		     size_t n, uint64_t (*get_id)(const void *),
		     struct otlp_id_ent **out, int32_t **idx)
{
	struct otlp_id_ent *e = calloc(n ? n : 1, sizeof(*e));
	int32_t *x = malloc((n ? n : 1) * sizeof(*x));
	*out = e;
	*idx = x;
	if (!e || !x)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		e[i] = (struct otlp_id_ent){ get_id(items[i]), i };
		x[i] = -1;
	}
	qsort(e, n, sizeof(*e), ent_cmp);
	for (size_t i = 0; i < n; i++)
		if (e[i].id == 0 || (i && e[i].id == e[i - 1].id)) {
			otlp_conv_bad(c, "%s id %llu %s", what,
				      (unsigned long long)e[i].id,
				      e[i].id ? "given twice" : "is not allowed");
			return -EINVAL;
		}
	return 0;
}

/* The index in the pprof array of the item with this id, or -1. */
static ssize_t ids_find(const struct otlp_id_ent *e, size_t n, uint64_t id)
{
	size_t i = sorted_lower_u64(e, n, sizeof(*e),
				    offsetof(struct otlp_id_ent, id), id);
	return i < n && e[i].id == id ? (ssize_t)e[i].i : -1;
}

static uint64_t map_id(const void *m)
{
	return ((const PprofMapping *)m)->id;
}
static uint64_t func_id(const void *f)
{
	return ((const PprofFunction *)f)->id;
}
static uint64_t loc_id(const void *l)
{
	return ((const PprofLocation *)l)->id;
}

int otlp_conv_init(struct otlp_conv *c, const PprofProfile *p,
		   struct otlp_dict *d, char *err, size_t err_len)
{
	int rc;
	memset(c, 0, sizeof(*c));
	c->p = p;
	c->d = d;
	c->err = err;
	c->err_len = err_len;
	if (p->n_string_table == 0 || p->string_table[0][0] != 0) {
		otlp_conv_bad(c, "string table does not start with \"\"");
		return -EINVAL;
	}
	if ((rc = ids_index(c, "mapping", (void **)p->mapping, p->n_mapping,
			    map_id, &c->maps, &c->map_idx)) < 0 ||
	    (rc = ids_index(c, "function", (void **)p->function,
			    p->n_function, func_id, &c->funcs,
			    &c->func_idx)) < 0 ||
	    (rc = ids_index(c, "location", (void **)p->location,
			    p->n_location, loc_id, &c->locs, &c->loc_idx)) < 0)
		return rc;
	return 0;
}

void otlp_conv_fini(struct otlp_conv *c)
{
	free(c->maps);
	free(c->funcs);
	free(c->locs);
	free(c->map_idx);
	free(c->func_idx);
	free(c->loc_idx);
}

/* ---- attributes ------------------------------------------------------------ */

AnyValue *otlp_conv_value(struct otlp_dict *d, const char *str, int64_t num)
{
	AnyValue *v = otlp_dict_alloc(d, sizeof(*v));
	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	if (str) {
		/* string_value, not string_value_strindex: the latter came in
		 * opentelemetry-proto 1.10 and older receivers ignore it */
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)str;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = num;
	}
	return v;
}

int32_t otlp_conv_attr(struct otlp_conv *c, const char *key,
		       const char *str, int64_t num, const char *unit)
{
	KeyValueAndUnit *kv = otlp_dict_alloc(c->d, sizeof(*kv));
	AnyValue *v = otlp_conv_value(c->d, str, num);
	if (!kv || !v)
		return 0;
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(kv);
	kv->key_strindex = otlp_dict_string(c->d, key);
	kv->unit_strindex = otlp_dict_string(c->d, unit);
	kv->value = v;
	return otlp_dict_intern(c->d, OTLP_ATTRIBUTES, &kv->base);
}

/* profile.frame.type = "cpython" (native 0) or "native" (1). */
static int32_t frame_type(struct otlp_conv *c, int native)
{
	if (!c->frame_attr[native])
		c->frame_attr[native] = otlp_conv_attr(
			c, "profile.frame.type", native ? "native" : "cpython",
			0, "");
	return c->frame_attr[native];
}

/* pprof label keys that have a semantic convention of their own. */
static const char *attr_key(const char *key)
{
	static const char *const renames[][2] = {
		{ "pid", "process.pid" },
		{ "thread_id", "thread.id" },
		{ "thread_name", "thread.name" },
	};
	for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		if (strcmp(key, renames[i][0]) == 0)
			return renames[i][1];
	return key;
}

/* ---- mappings, functions, locations ------------------------------------------ */

static int32_t mapping_index(struct otlp_conv *c, uint64_t id)
{
	ssize_t i;
	if (id == 0)
		return 0;
	if ((i = ids_find(c->maps, c->p->n_mapping, id)) < 0) {
		otlp_conv_bad(c, "a location names mapping %llu, not in the "
				 "profile",
			      (unsigned long long)id);
		return 0;
	}
	if (c->map_idx[i] >= 0)
		return c->map_idx[i];
	const PprofMapping *pm = c->p->mapping[i];
	Mapping *m = otlp_dict_alloc(c->d, sizeof(*m));
	int32_t *attr = otlp_dict_alloc(c->d, sizeof(*attr));
	if (!m || !attr)
		return 0;
	opentelemetry__proto__profiles__v1development__mapping__init(m);
	m->memory_start = pm->memory_start;
	m->memory_limit = pm->memory_limit;
	m->file_offset = pm->file_offset;
	m->filename_strindex =
		otlp_dict_string(c->d, otlp_conv_str(c, pm->filename));
	const char *build_id = otlp_conv_str(c, pm->build_id);
	if (build_id[0]) {
		attr[0] = otlp_conv_attr(c, "process.executable.build_id.gnu",
					 build_id, 0, "");
		m->n_attribute_indices = 1;
		m->attribute_indices = attr;
	}
	c->map_idx[i] = otlp_dict_intern(c->d, OTLP_MAPPINGS, &m->base);
	return c->map_idx[i];
}

/* The function with this id's index; its pprof entry in *pf. */
static int32_t function_index(struct otlp_conv *c, uint64_t id,
			      const PprofFunction **pf)
{
	ssize_t i;
	*pf = NULL;
	if (id == 0)
		return 0;
	if ((i = ids_find(c->funcs, c->p->n_function, id)) < 0) {
		otlp_conv_bad(c, "a line names function %llu, not in the "
				 "profile",
			      (unsigned long long)id);
		return 0;
	}
	*pf = c->p->function[i];
	if (c->func_idx[i] >= 0)
		return c->func_idx[i];
	Function *f = otlp_dict_alloc(c->d, sizeof(*f));
	if (!f)
		return 0;
	opentelemetry__proto__profiles__v1development__function__init(f);
	f->name_strindex = otlp_dict_string(c->d, otlp_conv_str(c, (*pf)->name));
	f->system_name_strindex =
		otlp_dict_string(c->d, otlp_conv_str(c, (*pf)->system_name));
	f->filename_strindex =
		otlp_dict_string(c->d, otlp_conv_str(c, (*pf)->filename));
	f->start_line = (*pf)->start_line;
	c->func_idx[i] = otlp_dict_intern(c->d, OTLP_FUNCTIONS, &f->base);
	return c->func_idx[i];
}

/* Whether function f is one of pyprof's pseudo-frames: "[name]" and no
 * file (pprof.h: "[truncated]", "[lost: ring full]", ...). */
static int is_pseudo(struct otlp_conv *c, const PprofFunction *f)
{
	const char *name = otlp_conv_str(c, f->name);
	return f->filename == 0 && name[0] == '[';
}

static int32_t location_make(struct otlp_conv *c, const PprofLocation *pl)
{
	Location *l = otlp_dict_alloc(c->d, sizeof(*l));
	Line **lines = otlp_dict_alloc(c->d, (pl->n_line + 1) * sizeof(*lines));
	int32_t *attr = otlp_dict_alloc(c->d, sizeof(*attr));
	int python = pl->address == 0 && pl->n_line > 0;
	if (!l || !lines || !attr)
		return 0;
	opentelemetry__proto__profiles__v1development__location__init(l);
	l->mapping_index = mapping_index(c, pl->mapping_id);
	l->address = pl->address;
	for (size_t j = 0; j < pl->n_line; j++) {
		const PprofFunction *pf;
		Line *ln = otlp_dict_alloc(c->d, sizeof(*ln));
		if (!ln)
			return 0;
		opentelemetry__proto__profiles__v1development__line__init(ln);
		ln->function_index =
			function_index(c, pl->line[j]->function_id, &pf);
		ln->line = pl->line[j]->line;
		ln->column = pl->line[j]->column;
		if (!pf || is_pseudo(c, pf))
			python = 0;
		lines[j] = ln;
	}
	l->n_lines = pl->n_line;
	l->lines = lines;
	if (pl->address || python) {
		attr[0] = frame_type(c, pl->address != 0);
		l->n_attribute_indices = 1;
		l->attribute_indices = attr;
	}
	return otlp_dict_intern(c->d, OTLP_LOCATIONS, &l->base);
}

static int32_t location_index(struct otlp_conv *c, uint64_t id)
{
	ssize_t i = ids_find(c->locs, c->p->n_location, id);
	if (i < 0) {
		otlp_conv_bad(c, "a sample names location %llu, not in the "
				 "profile",
			      (unsigned long long)id);
		return 0;
	}
	if (c->loc_idx[i] < 0)
		c->loc_idx[i] = location_make(c, c->p->location[i]);
	return c->loc_idx[i];
}

/* ---- samples ------------------------------------------------------------------ */

static int32_t stack_index(struct otlp_conv *c, const PprofSample *s)
{
	Stack *st = otlp_dict_alloc(c->d, sizeof(*st));
	int32_t *locs = otlp_dict_alloc(c->d, (s->n_location_id + 1) *
						      sizeof(*locs));
	if (!st || !locs)
		return 0;
	opentelemetry__proto__profiles__v1development__stack__init(st);
	for (size_t j = 0; j < s->n_location_id; j++)
		locs[j] = location_index(c, s->location_id[j]);
	st->n_location_indices = s->n_location_id;
	st->location_indices = locs;
	return otlp_dict_intern(c->d, OTLP_STACKS, &st->base);
}

/* hex (n bytes' worth, 2n digits) into out[0..n); 0 if it is not that or
 * all zero (an invalid trace or span id). */
static int hex_id(const char *hex, uint8_t *out, size_t n)
{
	int nonzero = 0;
	if (strlen(hex) != 2 * n)
		return 0;
	for (size_t i = 0; i < 2 * n; i++) {
		char ch = hex[i];
		int v = ch >= '0' && ch <= '9'	 ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
						 : -1;
		if (v < 0)
			return 0;
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | v : v << 4);
		nonzero |= v;
	}
	return nonzero != 0;
}

/* The string value of label key on s, or NULL. */
static const char *label_str(struct otlp_conv *c, const PprofSample *s,
			     const char *key)
{
	for (size_t j = 0; j < s->n_label; j++)
		if (s->label[j]->str &&
		    strcmp(otlp_conv_str(c, s->label[j]->key), key) == 0)
			return otlp_conv_str(c, s->label[j]->str);
	return NULL;
}

/* The sample's link when it has valid trace_id and span_id labels. */
static int32_t link_index(struct otlp_conv *c, const PprofSample *s)
{
	const char *trace = label_str(c, s, "trace_id");
	const char *span = label_str(c, s, "span_id");
	uint8_t t[16], sp[8];
	if (!trace || !span || !hex_id(trace, t, 16) || !hex_id(span, sp, 8))
		return 0;
	Link *l = otlp_dict_alloc(c->d, sizeof(*l));
	uint8_t *bytes = otlp_dict_alloc(c->d, 24);
	if (!l || !bytes)
		return 0;
	opentelemetry__proto__profiles__v1development__link__init(l);
	memcpy(bytes, t, 16);
	memcpy(bytes + 16, sp, 8);
	l->trace_id = (ProtobufCBinaryData){ 16, bytes };
	l->span_id = (ProtobufCBinaryData){ 8, bytes + 16 };
	return otlp_dict_intern(c->d, OTLP_LINKS, &l->base);
}

static int idx_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* The sample's labels as attribute indices, sorted; their count. */
static size_t sample_attrs(struct otlp_conv *c, const PprofSample *s,
			   int linked, int32_t *out)
{
	const char *keys[CONV_MAX_LABELS];
	size_t n = 0;
	for (size_t j = 0; j < s->n_label && n < CONV_MAX_LABELS; j++) {
		const PprofLabel *l = s->label[j];
		const char *key = otlp_conv_str(c, l->key);
		int dup = key[0] == 0;
		if (linked && (!strcmp(key, "trace_id") || !strcmp(key, "span_id")))
			continue;
		key = attr_key(key);
		for (size_t k = 0; k < n && !dup; k++)
			dup = strcmp(keys[k], key) == 0;
		if (dup)
			continue;
		keys[n] = key;
		out[n++] = l->str ? otlp_conv_attr(c, key, otlp_conv_str(c, l->str), 0, "")
				  : otlp_conv_attr(c, key, NULL, l->num,
						   otlp_conv_str(c, l->num_unit));
	}
	qsort(out, n, sizeof(*out), idx_cmp);
	return n;
}

OtlpSample *otlp_conv_sample(struct otlp_conv *c, size_t i)
{
	const PprofSample *s = c->p->sample[i];
	OtlpSample *o = otlp_dict_alloc(c->d, sizeof(*o));
	int32_t attrs[CONV_MAX_LABELS];
	if (!o)
		return NULL;
	if (s->n_value != c->p->n_sample_type) {
		otlp_conv_bad(c, "sample %zu has %zu values for %zu sample "
				 "types",
			      i, s->n_value, c->p->n_sample_type);
		return NULL;
	}
	opentelemetry__proto__profiles__v1development__sample__init(o);
	o->stack_index = stack_index(c, s);
	o->link_index = link_index(c, s);
	o->n_attribute_indices = sample_attrs(c, s, o->link_index != 0, attrs);
	o->attribute_indices = otlp_dict_alloc(
		c->d, (o->n_attribute_indices + 1) * sizeof(*attrs));
	if (o->attribute_indices)
		memcpy(o->attribute_indices, attrs,
		       o->n_attribute_indices * sizeof(*attrs));
	return c->bad || otlp_dict_failed(c->d) ? NULL : o;
}
