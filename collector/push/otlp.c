/*
 * otlp.c - a window's pprof profile as one OTLP ExportProfilesServiceRequest
 * (see otlp.h for the contract, otlp_conv.h for how each pprof item is
 * carried).
 *
 * The request: one ResourceProfiles (service.name, process.pid, host.name
 * and the caller's attributes), one ScopeProfiles (scope "pyprof" and the
 * project's version), one Profile per pprof sample type, the default one
 * first (profiles.proto: tools "SHOULD prefer displaying ...profiles[0]
 * by default"; pprof's default_sample_type, or its last type when unset,
 * as pprof reads it), all sharing one dictionary. A Profile holds the
 * samples whose value of its type is not zero, one value each, with the
 * pprof's time, duration, period and period type, and a profile_id made
 * from a hash of the input and the type, so that a window sent twice (a
 * retry) carries the same ids.
 *
 * Runs on the collector's push thread (push.h) and in `pyprof convert`.
 * Memory grows with the window: the unpacked pprof, the dictionary (each
 * item with its encoding, for deduplication) and the output, all freed
 * before returning but the output.
 */
#include "push/otlp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gunzip.h"
#include "common/idhash.h"
#include "common/version.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "push/otlp_conv.h"
#include "push/otlp_dict.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary
	ProfilesDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles
	ResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles
	ScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile Profile;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ValueType;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope Scope;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

/* The most an input may inflate to: far beyond any window (a busy
 * process's is a few MB), small enough that a gzip bomb cannot take the
 * collector's memory. */
#define OTLP_MAX_RAW (256u << 20)

/* ---- input ------------------------------------------------------------------ */

/* pprof_gz[0..len) inflated (gzip, as pprof files are; a raw profile is
 * taken as it is, like go tool pprof does) into a malloc'd *raw. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **raw,
		  size_t *raw_len, char *err, size_t err_len)
{
	if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		int rc = gunzip_mem(in, len, OTLP_MAX_RAW, raw, raw_len, err,
				    err_len);
		if (rc == -EINVAL) {
			char why[128];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, err_len, "not a gzipped profile (%s)", why);
		}
		return rc;
	}
	if (!(*raw = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(*raw, in, len);
	*raw_len = len;
	return 0;
}

/* ---- resource and scope ---------------------------------------------------------- */

static KeyValue *kv_new(struct otlp_dict *d, const char *key, const char *str,
			int64_t num)
{
	KeyValue *kv = otlp_dict_alloc(d, sizeof(*kv));
	AnyValue *v = otlp_conv_value(d, str, num);
	if (!kv || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	kv->key = (char *)key;
	kv->value = v;
	return kv;
}

/* Appends key to kvs unless a key of that name is there already (the
 * first wins: the fixed attributes before the caller's). */
static void kv_add(struct otlp_dict *d, KeyValue **kvs, size_t *n,
		   const char *key, const char *str, int64_t num)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(kvs[i]->key, key) == 0)
			return;
	if ((kvs[*n] = kv_new(d, key, str, num)) != NULL)
		(*n)++;
}

static Resource *resource_make(struct otlp_dict *d,
			       const struct otlp_resource *res)
{
	Resource *r = otlp_dict_alloc(d, sizeof(*r));
	size_t n_attrs = res ? res->n_attrs : 0;
	KeyValue **kvs = otlp_dict_alloc(d, (n_attrs + 3) * sizeof(*kvs));
	size_t n = 0;
	if (!r || !kvs)
		return NULL;
	opentelemetry__proto__resource__v1__resource__init(r);
	if (res && res->service_name)
		kv_add(d, kvs, &n, "service.name", res->service_name, 0);
	if (res && res->pid)
		kv_add(d, kvs, &n, "process.pid", NULL, res->pid);
	if (res && res->host_name)
		kv_add(d, kvs, &n, "host.name", res->host_name, 0);
	for (size_t i = 0; i < n_attrs; i++)
		if (res->keys[i] && res->keys[i][0] && res->values[i])
			kv_add(d, kvs, &n, res->keys[i], res->values[i], 0);
	r->n_attributes = n;
	r->attributes = kvs;
	return r;
}

static Scope *scope_make(struct otlp_dict *d)
{
	Scope *s = otlp_dict_alloc(d, sizeof(*s));
	if (!s)
		return NULL;
	opentelemetry__proto__common__v1__instrumentation_scope__init(s);
	s->name = (char *)"pyprof";
	s->version = (char *)PYPROF_VERSION;
	return s;
}

/* ---- profiles --------------------------------------------------------------------- */

/* The pprof's default sample type's index: the type named by
 * default_sample_type, else the last (pprof's rule). */
static size_t default_type(struct otlp_conv *c)
{
	const PprofProfile *p = c->p;
	const char *want = otlp_conv_str(c, p->default_sample_type);
	if (p->default_sample_type)
		for (size_t t = 0; t < p->n_sample_type; t++)
			if (strcmp(otlp_conv_str(c, p->sample_type[t]->type),
				   want) == 0)
				return t;
	return p->n_sample_type - 1;
}

static ValueType *value_type(struct otlp_conv *c,
			     const Perftools__Profiles__ValueType *pt)
{
	ValueType *v = otlp_dict_alloc(c->d, sizeof(*v));
	if (!v)
		return NULL;
	opentelemetry__proto__profiles__v1development__value_type__init(v);
	if (pt) {
		v->type_strindex = otlp_dict_string(c->d, otlp_conv_str(c, pt->type));
		v->unit_strindex = otlp_dict_string(c->d, otlp_conv_str(c, pt->unit));
	}
	return v;
}

/* The samples of type t: one per identity (keys[i], the key id of pprof
 * sample i: stack, attributes, link) met with a non-zero value, the
 * values of pprof samples with the same identity summed. slot has one
 * entry per key id, set to -1 by the caller. */
static int profile_samples(struct otlp_conv *c, Profile *prof, size_t t,
			   OtlpSample *const *ident, const int32_t *keys,
			   int32_t *slot)
{
	const PprofProfile *p = c->p;
	OtlpSample **out = otlp_dict_alloc(c->d, (p->n_sample + 1) *
							 sizeof(*out));
	size_t n = 0;
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_sample; i++) {
		int64_t v = p->sample[i]->value[t];
		if (v == 0)
			continue;
		if (slot[keys[i]] >= 0) {
			int64_t *sum = &out[slot[keys[i]]]->values[0];
			if (__builtin_add_overflow(*sum, v, sum)) {
				otlp_conv_bad(c, "values of sample type %zu "
						 "overflow",
					      t);
				return -EINVAL;
			}
			continue;
		}
		OtlpSample *s = otlp_dict_alloc(c->d, sizeof(*s));
		int64_t *val = otlp_dict_alloc(c->d, sizeof(*val));
		if (!s || !val)
			return -ENOMEM;
		*s = *ident[i];
		*val = v;
		s->n_values = 1;
		s->values = val;
		slot[keys[i]] = (int32_t)n;
		out[n++] = s;
	}
	prof->n_samples = n;
	prof->samples = out;
	return 0;
}

/* 16 bytes from hash and t; never all zero (an invalid id). */
static void profile_id(uint8_t *id, uint64_t hash, size_t t)
{
	uint64_t a = idhash_combine(hash, (uint64_t)t + 1);
	uint64_t b = idhash_combine(a, 0x6f746c70u) | 1;
	memcpy(id, &a, 8);
	memcpy(id + 8, &b, 8);
}

static Profile *profile_make(struct otlp_conv *c, size_t t, uint64_t hash,
			     OtlpSample *const *ident, const int32_t *keys,
			     int32_t *slot, size_t n_keys)
{
	const PprofProfile *p = c->p;
	Profile *prof = otlp_dict_alloc(c->d, sizeof(*prof));
	uint8_t *id = otlp_dict_alloc(c->d, 16);
	if (!prof || !id)
		return NULL;
	opentelemetry__proto__profiles__v1development__profile__init(prof);
	prof->sample_type = value_type(c, p->sample_type[t]);
	prof->period_type = value_type(c, p->period_type);
	prof->period = p->period;
	prof->time_unix_nano = p->time_nanos > 0 ? (uint64_t)p->time_nanos : 0;
	prof->duration_nano =
		p->duration_nanos > 0 ? (uint64_t)p->duration_nanos : 0;
	profile_id(id, hash, t);
	prof->profile_id = (ProtobufCBinaryData){ 16, id };
	for (size_t k = 0; k < n_keys; k++)
		slot[k] = -1;
	if (profile_samples(c, prof, t, ident, keys, slot) < 0)
		return NULL;
	return prof;
}

/* The profiles, default type first, in sc. */
static int profiles_make(struct otlp_conv *c, ScopeProfiles *sc, uint64_t hash)
{
	const PprofProfile *p = c->p;
	size_t n = p->n_sample, n_types = p->n_sample_type, n_keys;
	OtlpSample **ident = otlp_dict_alloc(c->d, (n + 1) * sizeof(*ident));
	int32_t *keys = otlp_dict_alloc(c->d, (n + 1) * sizeof(*keys));
	Profile **profs = otlp_dict_alloc(c->d, n_types * sizeof(*profs));
	int32_t *slot = NULL;
	int rc = -ENOMEM;

	if (!ident || !keys || !profs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (!(ident[i] = otlp_conv_sample(c, i)))
			goto out;
		keys[i] = otlp_dict_intern(c->d, OTLP_KEYS, &ident[i]->base);
	}
	n_keys = otlp_dict_len(c->d, OTLP_KEYS);
	if (otlp_dict_failed(c->d) || !(slot = malloc(n_keys * sizeof(*slot))))
		goto out;
	size_t first = default_type(c);
	for (size_t k = 0; k < n_types; k++) {
		size_t t = k == 0 ? first : k <= first ? k - 1
						       : k;
		if (!(profs[k] = profile_make(c, t, hash, ident, keys, slot,
					      n_keys)))
			goto out;
	}
	sc->n_profiles = n_types;
	sc->profiles = profs;
	rc = 0;
out:
	free(slot);
	return c->bad ? -EINVAL : rc;
}

/* ---- the request ------------------------------------------------------------------- */

/* Each profile of sc marked pyprof.profile.kind = res->profile_kind: a
 * block and a mutex window have the same sample types (Go's), and a
 * receiver must tell them apart. 0 or -ENOMEM. */
static int kind_mark(struct otlp_conv *c, ScopeProfiles *sc,
		     const char *kind)
{
	int32_t *attr = otlp_dict_alloc(c->d, sizeof(*attr));
	if (!attr)
		return -ENOMEM;
	attr[0] = otlp_conv_attr(c, "pyprof.profile.kind", kind, 0, "");
	if (!attr[0])
		return -ENOMEM;
	for (size_t i = 0; i < sc->n_profiles; i++) {
		sc->profiles[i]->n_attribute_indices = 1;
		sc->profiles[i]->attribute_indices = attr;
	}
	return 0;
}

/* The request for the unpacked profile p, packed into *out. */
static int request_build(const PprofProfile *p, uint64_t hash,
			 const struct otlp_resource *res, void **out,
			 size_t *out_len, char *err, size_t err_len)
{
	struct otlp_dict *d = otlp_dict_new();
	struct otlp_conv c;
	int rc = -ENOMEM;

	memset(&c, 0, sizeof(c));
	if (!d)
		return -ENOMEM;
	if ((rc = otlp_conv_init(&c, p, d, err, err_len)) < 0)
		goto out;
	if (p->n_sample_type == 0) {
		otlp_conv_bad(&c, "no sample types");
		rc = -EINVAL;
		goto out;
	}
	Request req = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	ProfilesDictionary dict = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	ResourceProfiles rp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT;
	ScopeProfiles sc = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT;
	ResourceProfiles *rps[1] = { &rp };
	ScopeProfiles *scs[1] = { &sc };

	if ((rc = profiles_make(&c, &sc, hash)) < 0)
		goto out;
	rc = -ENOMEM;
	if (res && res->profile_kind && kind_mark(&c, &sc, res->profile_kind) < 0)
		goto out;
	rp.resource = resource_make(d, res);
	sc.scope = scope_make(d);
	if (otlp_dict_failed(d))
		goto out;
	rp.n_scope_profiles = 1;
	rp.scope_profiles = scs;
	req.n_resource_profiles = 1;
	req.resource_profiles = rps;
	otlp_dict_fill(d, &dict);
	req.dictionary = &dict;
	*out_len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	if (!(*out = malloc(*out_len ? *out_len : 1)))
		goto out;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, *out);
	rc = 0;
out:
	if (c.bad)
		rc = -EINVAL;
	otlp_conv_fini(&c);
	otlp_dict_free(d);
	return rc;
}

int otlp_from_pprof(const void *pprof_gz, size_t len,
		    const struct otlp_resource *res, void **out,
		    size_t *out_len, char *err, size_t err_len)
{
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	PprofProfile *p = NULL;
	char spare[1];
	int rc;

	*out = NULL;
	*out_len = 0;
	if (!err || err_len == 0) {
		err = spare;
		err_len = sizeof(spare);
	}
	err[0] = 0;
	if ((rc = gunzip(pprof_gz, len, &raw, &raw_len, err, err_len)) < 0)
		goto out;
	if (raw_len == 0) {
		snprintf(err, err_len, "an empty profile");
		rc = -EINVAL;
		goto out;
	}
	p = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	if (!p) {
		snprintf(err, err_len, "not a pprof profile (protobuf "
				       "decoding failed)");
		rc = -EINVAL;
		goto out;
	}
	rc = request_build(p, idhash_bytes(raw, raw_len), res, out, out_len,
			   err, err_len);
	if (rc == -ENOMEM && !err[0])
		snprintf(err, err_len, "out of memory");
out:
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	free(raw);
	return rc;
}
