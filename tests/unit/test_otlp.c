/*
 * test_otlp.c - the OTLP profiles encoder (collector/push/otlp.h), checked
 * by unpacking what it writes with protobuf-c's code generated from the
 * vendored opentelemetry-proto, next to the pprof it was made from.
 *
 * Inputs are real: processes fed through proc.h's session API (Python
 * frames, a native frame, a label set with trace and span ids, lost
 * samples, a heap profile) and built by pprof_build, as the collector
 * does for a window; plus profiles from pprof_fixture.h for what pyprof
 * does not write (sparse ids, repeated samples, numeric labels). Every
 * request is checked against profiles.proto's rules (index 0 of every
 * table the zero value, no duplicates, every index in range, one value
 * per sample), values are summed per sample type against the pprof's,
 * and frame types, attributes and links are looked up by name. Last, the
 * encoder gets truncated and bit-flipped inputs: -EINVAL with a reason,
 * or a valid request, never a crash (run it under make asan too).
 * tests/e2e/otlp.bats decodes the same output with Python's protobuf.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/gunzip.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "pprof_fixture.h"
#include "push/otlp.h"
#include "pyprof/wire.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Profiles__V1development__Profile OProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OSample;
typedef Opentelemetry__Proto__Profiles__V1development__Location OLocation;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit OAttr;

#define START_NS 1700000000000000000ull
#define PID 4242

struct world {
	struct symtab *st;
	struct procs *reg;
};

static struct proc_bytes bytes(const char *s)
{
	return (struct proc_bytes){ (const uint8_t *)s, strlen(s) };
}

/* A process: main > work > leaf (Python, nodes 1-3) and a native frame
 * under leaf (node 4, an address in a file that does not exist, so
 * unnamed), thread MainThread; samples:
 *   5 on leaf; 3 on the native frame with labels trace_id, span_id,
 *   endpoint=/api; 2 on work, truncated; lost: 4 ring full.
 * With heap: allocations on leaf (labelled) and work, one freed. */
static struct proc *feed(struct world *w, int heap)
{
	struct proc_bytes args[2] = { bytes("python3"), bytes("t.py") };
	struct proc_hello h = {
		.version = 1,
		.pid = PID,
		.start_unix_ns = START_NS,
		.has_start_unix = 1,
		.start_mono_ns = 1000,
		.has_start_mono = 1,
		.mode = WIRE_MODE_CPU,
		.period_ns = 10000000,
		.pyversion = bytes("3.11.7"),
		.exe = bytes("/usr/bin/python3.11"),
		.comm = bytes("python3"),
		.args = args,
		.n_args = 2,
	};
	static const char *const strs[] = {
		"app.py",
		"main",
		"work",
		"leaf",
		"MainThread",
		"trace_id",
		"0af7651916cd43dd8448eb211c80319c",
		"span_id",
		"b7ad6b7169203331",
		"endpoint",
		"/api",
		"/nonexistent/libfoo.so",
	};
	static const uint8_t build_id[] = { 0xde, 0xad, 0xbe, 0xef };
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed, rc = 0;

	if (proc_session_open(w->reg, &h, &s, &resumed, err) < 0)
		return NULL;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		rc |= proc_def_string(s, i + 1, (const uint8_t *)strs[i],
				      strlen(strs[i]), err);
	for (uint64_t i = 1; i <= 3; i++) {
		rc |= proc_def_function(s, i, i + 1, i + 1, 1, i * 10, err);
		rc |= proc_def_location(s, i, i, i * 10 + 1, err);
		rc |= proc_def_node(s, i, i - 1, i, err);
	}
	rc |= proc_def_mapping(s, 1, 0x400000, 0x500000, 0, 12, build_id,
			       sizeof(build_id), err);
	rc |= proc_def_address(s, 4, 1, 0x401234, err);
	rc |= proc_def_node(s, 4, 3, 4, err);
	rc |= proc_def_thread(s, 1, PID, 5, err);
	uint64_t kv[6] = { 6, 7, 8, 9, 10, 11 };
	rc |= proc_def_labels(s, 1, kv, 3, err);
	if (heap) {
		struct proc_heap_rec recs[3] = {
			{ .kind = WIRE_HEAP_ALLOC_LABELS, .node = 3, .thread = 1, .size = 4096, .addr = 0x1000, .labels = 1 },
			{ .kind = WIRE_HEAP_ALLOC, .node = 2, .thread = 1, .size = 1024, .addr = 0x2000 },
			{ .kind = WIRE_HEAP_FREE, .addr = 0x2000 },
		};
		rc |= proc_check_heap(s, recs, 3, 0, err);
		rc |= proc_add_heap(s, 512 * 1024, recs, 3, err);
	}
	struct proc_sample recs[3] = {
		{ 3, 1, 100, 5, 50000000, 0, 0, 0 },
		{ 4, 1, 100, 3, 30000000, WIRE_SF_LABELS, 0, 1 },
		{ 2, 1, 100, 2, 20000000, WIRE_SF_TRUNCATED, 0, 0 },
	};
	uint64_t clock = 1000 + 5000000000ull;
	rc |= proc_check_samples(s, recs, 3, 0, err);
	rc |= proc_add_samples(s, &clock, recs, 3, err);
	rc |= proc_add_lost(s, WIRE_LOST_RING_FULL, 4, 40000000, err);
	struct proc *p = proc_session_proc(s);
	proc_session_close(s);
	if (rc)
		fprintf(stderr, "feed: %s\n", err);
	return rc ? NULL : p;
}

static Perftools__Profiles__Profile *pprof_decode(const void *gz, size_t len)
{
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	char err[128];
	Perftools__Profiles__Profile *prof = NULL;
	if (gunzip_mem(gz, len, 1 << 26, &raw, &raw_len, err, sizeof(err)) == 0)
		prof = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	free(raw);
	return prof;
}

static const struct otlp_resource RES = {
	.service_name = "checkout",
	.pid = PID,
	.host_name = "web-1",
	.keys = (const char *const[]){ "env", "host.name" },
	.values = (const char *const[]){ "prod", "ignored" },
	.n_attrs = 2,
};

/* Converts gz and unpacks the result; NULL (with err printed) if not. */
static Request *convert(const void *gz, size_t len,
			const struct otlp_resource *res, void **out,
			size_t *out_len)
{
	char err[256];
	int rc = otlp_from_pprof(gz, len, res, out, out_len, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "otlp_from_pprof: %d %s\n", rc, err);
		return NULL;
	}
	return opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, *out_len, *out);
}

static void request_free(Request *r)
{
	if (r)
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
			r, NULL);
}

/* ---- profiles.proto's rules --------------------------------------------------- */

#define IN(i, n) ((i) >= 0 && (size_t)(i) < (n))

static int packed_empty(const ProtobufCMessage *m)
{
	return protobuf_c_message_get_packed_size(m) == 0;
}

/* Whether table (n messages) holds no two equal encodings. */
static int distinct(void *const *v, size_t n)
{
	uint8_t **enc = calloc(n + 1, sizeof(*enc));
	size_t *len = calloc(n + 1, sizeof(*len));
	int ok = 1;
	for (size_t i = 0; i < n; i++) {
		len[i] = protobuf_c_message_get_packed_size(v[i]);
		enc[i] = malloc(len[i] + 1);
		protobuf_c_message_pack(v[i], enc[i]);
		for (size_t j = 0; j < i && ok; j++)
			ok = !(len[i] == len[j] && !memcmp(enc[i], enc[j], len[i]));
	}
	for (size_t i = 0; i < n; i++)
		free(enc[i]);
	free(enc);
	free(len);
	return ok;
}

static int strings_distinct(const Dict *d)
{
	for (size_t i = 0; i < d->n_string_table; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(d->string_table[i], d->string_table[j]))
				return 0;
	return 1;
}

static int zero_values(const Dict *d)
{
	const Opentelemetry__Proto__Profiles__V1development__Link *l0;
	if (!d->n_string_table || d->string_table[0][0] || !d->n_mapping_table ||
	    !d->n_location_table || !d->n_function_table || !d->n_link_table ||
	    !d->n_attribute_table || !d->n_stack_table)
		return 0;
	l0 = d->link_table[0];
	static const uint8_t zeros[16];
	return packed_empty(&d->mapping_table[0]->base) &&
	       packed_empty(&d->location_table[0]->base) &&
	       packed_empty(&d->function_table[0]->base) &&
	       packed_empty(&d->attribute_table[0]->base) &&
	       packed_empty(&d->stack_table[0]->base) &&
	       l0->trace_id.len == 16 && l0->span_id.len == 8 &&
	       !memcmp(l0->trace_id.data, zeros, 16) &&
	       !memcmp(l0->span_id.data, zeros, 8);
}

static int attrs_ok(const Dict *d, const int32_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!IN(a[i], d->n_attribute_table) || a[i] == 0)
			return 0;
	return 1;
}

/* Every index of the dictionary's own items in range. */
static int dict_indices_ok(const Dict *d)
{
	size_t ns = d->n_string_table;
	int ok = 1;
	for (size_t i = 1; i < d->n_mapping_table; i++)
		ok &= IN(d->mapping_table[i]->filename_strindex, ns) &&
		      attrs_ok(d, d->mapping_table[i]->attribute_indices,
			       d->mapping_table[i]->n_attribute_indices);
	for (size_t i = 1; i < d->n_function_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Function *f =
			d->function_table[i];
		ok &= IN(f->name_strindex, ns) && IN(f->system_name_strindex, ns) &&
		      IN(f->filename_strindex, ns);
	}
	for (size_t i = 1; i < d->n_location_table; i++) {
		const OLocation *l = d->location_table[i];
		ok &= IN(l->mapping_index, d->n_mapping_table) &&
		      attrs_ok(d, l->attribute_indices, l->n_attribute_indices);
		for (size_t j = 0; j < l->n_lines; j++)
			ok &= IN(l->lines[j]->function_index, d->n_function_table);
	}
	for (size_t i = 1; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			ok &= IN(d->stack_table[i]->location_indices[j],
				 d->n_location_table);
	for (size_t i = 1; i < d->n_attribute_table; i++)
		ok &= IN(d->attribute_table[i]->key_strindex, ns) &&
		      d->attribute_table[i]->key_strindex != 0 &&
		      IN(d->attribute_table[i]->unit_strindex, ns) &&
		      d->attribute_table[i]->value != NULL;
	return ok;
}

static int samples_ok(const Dict *d, const OProfile *p)
{
	int ok = p->sample_type && IN(p->sample_type->type_strindex, d->n_string_table) &&
		 IN(p->sample_type->unit_strindex, d->n_string_table);
	for (size_t i = 0; i < p->n_samples && ok; i++) {
		const OSample *s = p->samples[i];
		ok = s->n_values == 1 && s->values[0] != 0 &&
		     IN(s->stack_index, d->n_stack_table) &&
		     IN(s->link_index, d->n_link_table) &&
		     attrs_ok(d, s->attribute_indices, s->n_attribute_indices);
	}
	return ok;
}

/* The request's structure: one resource, one scope, valid dictionary. */
static int request_ok(const Request *r)
{
	const Dict *d = r->dictionary;
	if (!d || r->n_resource_profiles != 1 ||
	    r->resource_profiles[0]->n_scope_profiles != 1)
		return 0;
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	int ok = zero_values(d) && dict_indices_ok(d) && strings_distinct(d) &&
		 distinct((void *const *)d->mapping_table, d->n_mapping_table) &&
		 distinct((void *const *)d->location_table, d->n_location_table) &&
		 distinct((void *const *)d->function_table, d->n_function_table) &&
		 distinct((void *const *)d->link_table, d->n_link_table) &&
		 distinct((void *const *)d->attribute_table, d->n_attribute_table) &&
		 distinct((void *const *)d->stack_table, d->n_stack_table);
	for (size_t i = 0; i < sc->n_profiles && ok; i++)
		ok = samples_ok(d, sc->profiles[i]);
	return ok;
}

/* ---- lookups ------------------------------------------------------------ */

static const char *dstr(const Dict *d, int32_t i)
{
	return IN(i, d->n_string_table) ? d->string_table[i] : "<bad>";
}

static const OProfile *profile_of(const Request *r, const char *type)
{
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	for (size_t i = 0; i < sc->n_profiles; i++)
		if (!strcmp(dstr(r->dictionary,
				 sc->profiles[i]->sample_type->type_strindex),
			    type))
			return sc->profiles[i];
	return NULL;
}

static int64_t otlp_total(const OProfile *p)
{
	int64_t sum = 0;
	for (size_t i = 0; p && i < p->n_samples; i++)
		sum += p->samples[i]->values[0];
	return sum;
}

static int64_t pprof_total(const Perftools__Profiles__Profile *p, size_t t)
{
	int64_t sum = 0;
	for (size_t i = 0; i < p->n_sample; i++)
		sum += p->sample[i]->value[t];
	return sum;
}

/* Every pprof sample type has its profile, with the pprof's total. */
static int totals_match(const Request *r, const Perftools__Profiles__Profile *pp)
{
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	int ok = sc->n_profiles == pp->n_sample_type;
	for (size_t t = 0; t < pp->n_sample_type && ok; t++) {
		const char *type = pp->string_table[pp->sample_type[t]->type];
		const OProfile *op = profile_of(r, type);
		ok = op && otlp_total(op) == pprof_total(pp, t) &&
		     !strcmp(dstr(r->dictionary, op->sample_type->unit_strindex),
			     pp->string_table[pp->sample_type[t]->unit]);
	}
	return ok;
}

/* The attribute key of a's value as a string ("" if not a string). */
static const OAttr *attr_find(const Dict *d, const int32_t *a, size_t n,
			      const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(dstr(d, d->attribute_table[a[i]]->key_strindex), key))
			return d->attribute_table[a[i]];
	return NULL;
}

static const char *frame_type(const Dict *d, const OLocation *l)
{
	const OAttr *a = attr_find(d, l->attribute_indices,
				   l->n_attribute_indices, "profile.frame.type");
	return a ? a->value->string_value : NULL;
}

/* The location whose first line's function is named name, or NULL. */
static const OLocation *location_named(const Dict *d, const char *name)
{
	for (size_t i = 1; i < d->n_location_table; i++) {
		const OLocation *l = d->location_table[i];
		if (l->n_lines &&
		    !strcmp(dstr(d, d->function_table[l->lines[0]->function_index]
					    ->name_strindex),
			    name))
			return l;
	}
	return NULL;
}

/* ---- cases ------------------------------------------------------------------ */

/* The window of one CPU process: structure, totals, frames, attributes. */
static void test_cpu_window(void)
{
	struct world w = { symtab_new(), NULL };
	void *gz = NULL, *out = NULL, *out2 = NULL;
	size_t len = 0, out_len = 0, out2_len = 0;
	w.reg = procs_new(w.st);
	const struct proc *p = feed(&w, 0);
	CHECK_OR_RETURN(p != NULL, "1.0 fed", );
	struct pprof_opts opts = { .start_unix_ns = START_NS,
				   .end_unix_ns = START_NS + 10000000000ull };
	CHECK_OR_RETURN(pprof_build(w.st, &p, 1, &opts, &gz, &len, NULL) == 0,
			"1.0 built", );
	Perftools__Profiles__Profile *pp = pprof_decode(gz, len);
	Request *r = convert(gz, len, &RES, &out, &out_len);
	CHECK_OR_RETURN(pp && r, "1.1 converted and unpacked", );
	CHECK(request_ok(r), "1.2 profiles.proto's rules hold");
	const Dict *d = r->dictionary;
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	CHECK(sc->n_profiles == 2 && totals_match(r, pp),
	      "1.3 one profile per sample type, totals equal the pprof's");
	CHECK(!strcmp(dstr(d, sc->profiles[0]->sample_type->type_strindex), "cpu"),
	      "1.4 the default type (pprof's last, cpu) first");
	CHECK(otlp_total(profile_of(r, "samples")) == 5 + 3 + 2 + 4,
	      "1.5 samples: 10 taken and 4 lost");
	const OProfile *cpu = sc->profiles[0];
	CHECK(cpu->time_unix_nano == (uint64_t)pp->time_nanos &&
		      cpu->duration_nano == (uint64_t)pp->duration_nanos &&
		      cpu->period == pp->period && cpu->period == 10000000 &&
		      !strcmp(dstr(d, cpu->period_type->type_strindex), "cpu") &&
		      !strcmp(dstr(d, cpu->period_type->unit_strindex),
			      "nanoseconds"),
	      "1.6 time, duration, period and period type");
	CHECK(cpu->profile_id.len == 16 &&
		      memcmp(cpu->profile_id.data,
			     sc->profiles[1]->profile_id.data, 16) != 0,
	      "1.7 a profile id per profile");

	const OLocation *leaf = location_named(d, "leaf");
	const OLocation *trunc = location_named(d, "[truncated]");
	const OLocation *lost = location_named(d, "[lost: ring full]");
	const OLocation *native = NULL;
	for (size_t i = 1; i < d->n_location_table; i++)
		if (d->location_table[i]->address == 0x401234)
			native = d->location_table[i];
	CHECK(leaf && frame_type(d, leaf) &&
		      !strcmp(frame_type(d, leaf), "cpython") &&
		      location_named(d, "main") &&
		      !strcmp(frame_type(d, location_named(d, "main")), "cpython"),
	      "1.8 Python frames are cpython");
	CHECK(native && frame_type(d, native) &&
		      !strcmp(frame_type(d, native), "native") &&
		      native->n_lines == 0,
	      "1.9 the unnamed native frame is native, with its address");
	CHECK(native && IN(native->mapping_index, d->n_mapping_table) &&
		      native->mapping_index &&
		      d->mapping_table[native->mapping_index]->memory_start ==
			      0x400000 &&
		      !strcmp(dstr(d, d->mapping_table[native->mapping_index]
					      ->filename_strindex),
			      "/nonexistent/libfoo.so"),
	      "1.10 its mapping: start and file");
	const Opentelemetry__Proto__Profiles__V1development__Mapping *m =
		native ? d->mapping_table[native->mapping_index] : NULL;
	const OAttr *bid = m ? attr_find(d, m->attribute_indices,
					 m->n_attribute_indices,
					 "process.executable.build_id.gnu")
			     : NULL;
	CHECK(bid && !strcmp(bid->value->string_value, "deadbeef"),
	      "1.11 the mapping's GNU build id");
	CHECK(trunc && lost && !frame_type(d, trunc) && !frame_type(d, lost),
	      "1.12 pseudo-frames have no frame type");

	/* the labelled sample: native > leaf > work > main, linked */
	const OSample *ls = NULL;
	for (size_t i = 0; i < cpu->n_samples; i++)
		if (cpu->samples[i]->link_index)
			ls = cpu->samples[i];
	CHECK_OR_RETURN(ls != NULL, "1.13 a sample with a link", );
	const Opentelemetry__Proto__Profiles__V1development__Stack *st =
		d->stack_table[ls->stack_index];
	CHECK(ls->values[0] == 30000000 && st->n_location_indices == 4 &&
		      d->location_table[st->location_indices[0]] == native &&
		      d->location_table[st->location_indices[1]] == leaf &&
		      d->location_table[st->location_indices[3]] ==
			      location_named(d, "main"),
	      "1.14 its stack, leaf first, and value");
	const Opentelemetry__Proto__Profiles__V1development__Link *lk =
		d->link_table[ls->link_index];
	static const uint8_t trace[16] = { 0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd,
					   0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21,
					   0x1c, 0x80, 0x31, 0x9c };
	static const uint8_t span[8] = { 0xb7, 0xad, 0x6b, 0x71,
					 0x69, 0x20, 0x33, 0x31 };
	CHECK(lk->trace_id.len == 16 && !memcmp(lk->trace_id.data, trace, 16) &&
		      lk->span_id.len == 8 && !memcmp(lk->span_id.data, span, 8),
	      "1.15 trace and span ids decoded into the link");
	const int32_t *a = ls->attribute_indices;
	size_t na = ls->n_attribute_indices;
	const OAttr *tn = attr_find(d, a, na, "thread.name");
	const OAttr *pid = attr_find(d, a, na, "process.pid");
	const OAttr *tid = attr_find(d, a, na, "thread.id");
	const OAttr *ep = attr_find(d, a, na, "endpoint");
	CHECK(tn && !strcmp(tn->value->string_value, "MainThread") && pid &&
		      pid->value->value_case ==
			      OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
		      pid->value->int_value == PID && tid &&
		      tid->value->int_value == PID && ep &&
		      !strcmp(ep->value->string_value, "/api"),
	      "1.16 thread.name, process.pid, thread.id and endpoint");
	CHECK(!attr_find(d, a, na, "trace_id") && !attr_find(d, a, na, "span_id") &&
		      !attr_find(d, a, na, "pid"),
	      "1.17 no trace_id/span_id attributes, no pprof pid key");

	const Opentelemetry__Proto__Resource__V1__Resource *res =
		r->resource_profiles[0]->resource;
	int seen = 0;
	for (size_t i = 0; res && i < res->n_attributes; i++) {
		const Opentelemetry__Proto__Common__V1__KeyValue *kv =
			res->attributes[i];
		seen |= (!strcmp(kv->key, "service.name") &&
			 !strcmp(kv->value->string_value, "checkout"))
			<< 0;
		seen |= (!strcmp(kv->key, "process.pid") &&
			 kv->value->int_value == PID)
			<< 1;
		seen |= (!strcmp(kv->key, "host.name") &&
			 !strcmp(kv->value->string_value, "web-1"))
			<< 2;
		seen |= (!strcmp(kv->key, "env") &&
			 !strcmp(kv->value->string_value, "prod"))
			<< 3;
	}
	CHECK(seen == 15 && res->n_attributes == 4,
	      "1.18 resource: service.name, process.pid, host.name, env; a "
	      "second host.name left out");
	const Opentelemetry__Proto__Common__V1__InstrumentationScope *scope =
		sc->scope;
	CHECK(scope && !strcmp(scope->name, "pyprof") && scope->version[0],
	      "1.19 scope pyprof with a version");

	CHECK(otlp_from_pprof(gz, len, &RES, &out2, &out2_len, NULL, 0) == 0 &&
		      out2_len == out_len && !memcmp(out, out2, out_len),
	      "1.20 the same window converts to the same bytes (retries)");
	struct otlp_resource merged = { .service_name = "all" };
	free(out2);
	Request *r2 = convert(gz, len, &merged, &out2, &out2_len);
	CHECK(r2 && r2->resource_profiles[0]->resource->n_attributes == 1,
	      "1.21 pid 0 and no host: service.name only");
	request_free(r2);
	request_free(r);
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(out);
	free(out2);
	free(gz);
	procs_free(w.reg);
	symtab_free(w.st);
}

/* A heap window: six profiles, inuse_space first. */
static void test_heap_window(void)
{
	struct world w = { symtab_new(), NULL };
	void *gz = NULL, *out = NULL;
	size_t len = 0, out_len = 0;
	w.reg = procs_new(w.st);
	const struct proc *p = feed(&w, 1);
	CHECK_OR_RETURN(p != NULL, "2.0 fed", );
	struct pprof_opts opts = { .heap = 1 };
	CHECK_OR_RETURN(pprof_build(w.st, &p, 1, &opts, &gz, &len, NULL) == 0,
			"2.0 built", );
	Perftools__Profiles__Profile *pp = pprof_decode(gz, len);
	Request *r = convert(gz, len, &RES, &out, &out_len);
	CHECK_OR_RETURN(pp && r, "2.1 converted", );
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	CHECK(request_ok(r) && sc->n_profiles == 6 && totals_match(r, pp),
	      "2.2 six valid profiles with the pprof's totals");
	CHECK(!strcmp(dstr(r->dictionary,
			   sc->profiles[0]->sample_type->type_strindex),
		      "inuse_space"),
	      "2.3 inuse_space (pprof's default) first");
	CHECK(otlp_total(profile_of(r, "alloc_space")) > 0 &&
		      otlp_total(profile_of(r, "inuse_space")) > 0 &&
		      profile_of(r, "inuse_objects")->n_samples <
			      profile_of(r, "alloc_objects")->n_samples,
	      "2.4 the freed block is in alloc_* only (zero values left out)");
	request_free(r);
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(out);
	free(gz);
	procs_free(w.reg);
	symtab_free(w.st);
}

/* Profiles pyprof does not write: sparse ids, a repeated sample, numeric
 * labels with units, a bad trace id, a default type named. */
static void test_fixture(void)
{
	struct fx f;
	void *out = NULL;
	size_t len, out_len = 0;
	f.sparse = 0;
	fx_init(&f, 2, "alloc_space", "bytes", "inuse_space", "bytes");
	f.sparse = 1;
	uint64_t fn = fx_func(&f, "work", "app.py", 10);
	uint64_t l = fx_loc(&f, fn, 12);
	fx_sample(&f, &l, 1, (int64_t[]){ 100, 10 }, "size#64", "tag=a", NULL);
	fx_sample(&f, &l, 1, (int64_t[]){ 200, 0 }, "tag=a", "size#64", NULL);
	fx_sample(&f, &l, 1, (int64_t[]){ 7, 7 }, "trace_id=xyz",
		  "span_id=b7ad6b7169203331", NULL);
	f.default_type = fx_str(&f, "alloc_space");
	void *gz = fx_pack(&f, 1, &len);
	Request *r = convert(gz, len, NULL, &out, &out_len);
	CHECK_OR_RETURN(r != NULL, "3.1 sparse ids converted", );
	const Dict *d = r->dictionary;
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sc =
		r->resource_profiles[0]->scope_profiles[0];
	CHECK(request_ok(r), "3.2 valid");
	CHECK(!strcmp(dstr(d, sc->profiles[0]->sample_type->type_strindex),
		      "alloc_space"),
	      "3.3 default_sample_type named: first");
	const OProfile *a = sc->profiles[0];
	CHECK(a->n_samples == 2 && otlp_total(a) == 307,
	      "3.4 two samples of one identity (labels in another order) "
	      "merged: 300, and the unlinked one");
	const OSample *s = a->samples[0];
	const OAttr *size = attr_find(d, s->attribute_indices,
				      s->n_attribute_indices, "size");
	CHECK(s->values[0] == 300 && size &&
		      size->value->int_value == 64,
	      "3.5 a numeric label: an int attribute");
	const OSample *t = a->samples[1];
	CHECK(t->link_index == 0 &&
		      attr_find(d, t->attribute_indices, t->n_attribute_indices,
				"trace_id"),
	      "3.6 a trace id that is not hex stays an attribute, no link");
	CHECK(sc->n_profiles == 2 && sc->profiles[1]->n_samples == 2 &&
		      otlp_total(sc->profiles[1]) == 17,
	      "3.7 inuse_space: the zero value left out");
	request_free(r);
	free(out);
	free(gz);
	fx_fini(&f);
}

/* Bad input: -EINVAL and a reason, never a crash; or a valid request. */
static int try_bad(const void *p, size_t len, int *valid)
{
	char err[128] = "";
	void *out = NULL;
	size_t out_len = 0;
	int rc = otlp_from_pprof(p, len, &RES, &out, &out_len, err, sizeof(err));
	if (rc == 0) {
		Request *r = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
			NULL, out_len, out);
		*valid = r && request_ok(r);
		request_free(r);
	} else {
		*valid = rc == -EINVAL && err[0] && !strchr(err, '\n');
	}
	free(out);
	return rc;
}

static void test_bad_input(void)
{
	struct world w = { symtab_new(), NULL };
	void *gz = NULL;
	size_t len = 0;
	int valid, all_valid = 1, n_ok = 0, n_bad = 0;
	char err[128];
	void *out;
	size_t out_len;
	CHECK(otlp_from_pprof("", 0, &RES, &out, &out_len, err, sizeof(err)) ==
			      -EINVAL &&
		      strstr(err, "empty"),
	      "4.1 an empty profile");
	CHECK(otlp_from_pprof("\x32\x00", 2, &RES, &out, &out_len, err,
			      sizeof(err)) == -EINVAL &&
		      strstr(err, "sample types"),
	      "4.1 a profile with no sample type");
	CHECK(otlp_from_pprof("\x1f\x8b\x08\x00garbage", 12, &RES, &out,
			      &out_len, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "gzip"),
	      "4.2 broken gzip");
	CHECK(otlp_from_pprof("\xff\xff\xff\xff", 4, &RES, &out, &out_len, err,
			      sizeof(err)) == -EINVAL &&
		      strstr(err, "protobuf"),
	      "4.3 not protobuf");
	w.reg = procs_new(w.st);
	const struct proc *p = feed(&w, 0);
	CHECK_OR_RETURN(p && pprof_build(w.st, &p, 1, NULL, &gz, &len, NULL) == 0,
			"4.0 built", );
	uint8_t *buf = malloc(len);
	for (size_t n = 0; n < len; n++) {
		try_bad(gz, n, &valid);
		all_valid &= valid;
	}
	CHECK(all_valid, "4.4 every truncation refused with a reason");
	/* flips in the inflated profile, where they reach the decoder */
	Perftools__Profiles__Profile *pp = pprof_decode(gz, len);
	size_t raw_len = perftools__profiles__profile__get_packed_size(pp);
	uint8_t *raw = malloc(raw_len);
	perftools__profiles__profile__pack(pp, raw);
	for (size_t i = 0; i < raw_len; i++)
		for (int bit = 0; bit < 8; bit += 3) {
			raw[i] ^= (uint8_t)(1u << bit);
			if (try_bad(raw, raw_len, &valid) == 0)
				n_ok++;
			else
				n_bad++;
			all_valid &= valid;
			raw[i] ^= (uint8_t)(1u << bit);
		}
	CHECK(all_valid, "4.5 every bit flip: a valid request or a reason");
	CHECK(n_bad > 0 && n_ok > 0, "4.6 flips both refused and taken");
	printf("bit flips: %d converted, %d refused\n", n_ok, n_bad);
	for (size_t i = 0; i < len; i += 7) {
		memcpy(buf, gz, len);
		buf[i] ^= 0x55;
		try_bad(buf, len, &valid);
		all_valid &= valid;
	}
	CHECK(all_valid, "4.7 flips in the gzip stream refused or valid");
	perftools__profiles__profile__free_unpacked(pp, NULL);
	free(raw);
	free(buf);
	free(gz);
	procs_free(w.reg);
	symtab_free(w.st);
}

int main(void)
{
	test_cpu_window();
	test_heap_window();
	test_fixture();
	test_bad_input();
	return check_summary();
}
