/*
 * otlp_dict.c - the deduplicated tables of an OTLP ProfilesDictionary and
 * the arena of one request's messages (see otlp_dict.h).
 *
 * Each table is an array of message pointers with, beside it, each item's
 * protobuf encoding (its identity) and an idhash from that encoding to the
 * item's index. Encoding a message to look it up costs about what writing
 * it costs, once per distinct pprof location, function, mapping, label and
 * sample: small next to the gunzip and unpack before it.
 */
#include "push/otlp_dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary
	ProfilesDictionary;
typedef Opentelemetry__Proto__Profiles__V1development__Link Link;

#define ARENA_CHUNK (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct key {
	const uint8_t *p;
	size_t len;
};

struct table {
	void **v;	  /* v[0] is the zero value */
	struct key *keys; /* keys[i]: v[i]'s encoding */
	size_t n, cap, keys_cap;
	struct idhash hash; /* encoding -> index (ids are indices, from 1) */
};

struct otlp_dict {
	struct chunk *arena;
	int failed;
	struct table tables[OTLP_N_TABLES];
	struct table strings; /* keys[i] is the string, v[i] too */
};

/* ---- the arena ------------------------------------------------------------ */

void *otlp_dict_alloc(struct otlp_dict *d, size_t size)
{
	struct chunk *c = d->arena;
	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->cap - c->used < size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c) {
			d->failed = 1;
			return NULL;
		}
		c->used = 0;
		c->cap = cap;
		c->next = d->arena;
		d->arena = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

char *otlp_dict_strndup(struct otlp_dict *d, const char *s, size_t len)
{
	char *p = len < SIZE_MAX ? otlp_dict_alloc(d, len + 1) : NULL;
	if (p)
		memcpy(p, s, len);
	return p;
}

/* ---- tables ------------------------------------------------------------- */

/* Appends item v with identity key to t; its index, or 0 when memory is
 * short or t is full (d failed). */
static int32_t table_add(struct otlp_dict *d, struct table *t, void *v,
			 struct key key, uint64_t hash)
{
	if (t->n >= INT32_MAX ||
	    grow_array(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64) < 0 ||
	    grow_array(&t->keys, &t->keys_cap, t->n + 1, sizeof(*t->keys),
		       64) < 0)
		goto fail;
	if (t->n && idhash_insert(&t->hash, hash, (uint32_t)t->n) < 0)
		goto fail;
	t->v[t->n] = v;
	t->keys[t->n] = key;
	return (int32_t)t->n++;
fail:
	d->failed = 1;
	return 0;
}

struct find_ctx {
	const struct table *t;
	struct key key;
};

static int key_eq(const void *ctx, uint32_t id)
{
	const struct find_ctx *f = ctx;
	const struct key *k = &f->t->keys[id];
	return k->len == f->key.len && memcmp(k->p, f->key.p, k->len) == 0;
}

/* The index of the item whose identity is key, added as v if new. */
static int32_t table_intern(struct otlp_dict *d, struct table *t, void *v,
			    struct key key)
{
	uint64_t hash = idhash_bytes(key.p, key.len);
	struct find_ctx ctx = { t, key };
	uint32_t id = idhash_find(&t->hash, hash, key_eq, &ctx);
	if (id)
		return (int32_t)id;
	return table_add(d, t, v, key, hash);
}

int32_t otlp_dict_string(struct otlp_dict *d, const char *s)
{
	size_t len = strlen(s);
	char *copy;
	if (len == 0 || d->failed)
		return 0;
	struct find_ctx ctx = { &d->strings, { (const uint8_t *)s, len } };
	uint64_t hash = idhash_bytes(s, len);
	uint32_t id = idhash_find(&d->strings.hash, hash, key_eq, &ctx);
	if (id)
		return (int32_t)id;
	if (!(copy = otlp_dict_strndup(d, s, len)))
		return 0;
	return table_add(d, &d->strings, copy,
			 (struct key){ (const uint8_t *)copy, len }, hash);
}

int32_t otlp_dict_intern(struct otlp_dict *d, enum otlp_table t,
			 const ProtobufCMessage *m)
{
	size_t len;
	uint8_t *buf;
	if (d->failed)
		return 0;
	len = protobuf_c_message_get_packed_size(m);
	if (len == 0)
		return 0; /* every field at its default: the zero value */
	if (!(buf = otlp_dict_alloc(d, len)))
		return 0;
	protobuf_c_message_pack(m, buf);
	return table_intern(d, &d->tables[t], (void *)m,
			    (struct key){ buf, len });
}

size_t otlp_dict_len(const struct otlp_dict *d, enum otlp_table t)
{
	return d->tables[t].n;
}

int otlp_dict_failed(const struct otlp_dict *d)
{
	return d->failed;
}

/* ---- life ---------------------------------------------------------------- */

static const ProtobufCMessageDescriptor *const descriptors[OTLP_N_TABLES] = {
	[OTLP_MAPPINGS] = &opentelemetry__proto__profiles__v1development__mapping__descriptor,
	[OTLP_LOCATIONS] = &opentelemetry__proto__profiles__v1development__location__descriptor,
	[OTLP_FUNCTIONS] = &opentelemetry__proto__profiles__v1development__function__descriptor,
	[OTLP_LINKS] = &opentelemetry__proto__profiles__v1development__link__descriptor,
	[OTLP_ATTRIBUTES] = &opentelemetry__proto__profiles__v1development__key_value_and_unit__descriptor,
	[OTLP_STACKS] = &opentelemetry__proto__profiles__v1development__stack__descriptor,
	[OTLP_KEYS] = &opentelemetry__proto__profiles__v1development__sample__descriptor,
};

/* Element 0 of table t: the message with every field at its default,
 * except the link table's, whose ids are 16 and 8 zero bytes
 * (profiles.proto: "the latter SHOULD be used for link_table[0]"). */
static int add_zero(struct otlp_dict *d, enum otlp_table t)
{
	const ProtobufCMessageDescriptor *desc = descriptors[t];
	ProtobufCMessage *m = otlp_dict_alloc(d, desc->sizeof_message);
	if (!m)
		return -ENOMEM;
	protobuf_c_message_init(desc, m);
	if (t == OTLP_LINKS) {
		Link *l = (Link *)m;
		l->trace_id.data = otlp_dict_alloc(d, 16);
		l->trace_id.len = 16;
		l->span_id.data = otlp_dict_alloc(d, 8);
		l->span_id.len = 8;
	}
	table_add(d, &d->tables[t], m, (struct key){ NULL, 0 }, 0);
	return d->failed ? -ENOMEM : 0;
}

struct otlp_dict *otlp_dict_new(void)
{
	struct otlp_dict *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	for (int t = 0; t < OTLP_N_TABLES; t++) {
		idhash_init(&d->tables[t].hash);
		if (add_zero(d, (enum otlp_table)t) < 0)
			goto fail;
	}
	idhash_init(&d->strings.hash);
	char *empty = otlp_dict_alloc(d, 1);
	if (!empty)
		goto fail;
	table_add(d, &d->strings, empty, (struct key){ (const uint8_t *)empty, 0 },
		  0);
	if (d->failed)
		goto fail;
	return d;
fail:
	otlp_dict_free(d);
	return NULL;
}

static void table_fini(struct table *t)
{
	free(t->v);
	free(t->keys);
	idhash_fini(&t->hash);
}

void otlp_dict_free(struct otlp_dict *d)
{
	if (!d)
		return;
	for (int t = 0; t < OTLP_N_TABLES; t++)
		table_fini(&d->tables[t]);
	table_fini(&d->strings);
	while (d->arena) {
		struct chunk *next = d->arena->next;
		free(d->arena);
		d->arena = next;
	}
	free(d);
}

void otlp_dict_fill(struct otlp_dict *d, ProfilesDictionary *out)
{
	struct table *t = d->tables;
	out->n_mapping_table = t[OTLP_MAPPINGS].n;
	out->mapping_table = (void *)t[OTLP_MAPPINGS].v;
	out->n_location_table = t[OTLP_LOCATIONS].n;
	out->location_table = (void *)t[OTLP_LOCATIONS].v;
	out->n_function_table = t[OTLP_FUNCTIONS].n;
	out->function_table = (void *)t[OTLP_FUNCTIONS].v;
	out->n_link_table = t[OTLP_LINKS].n;
	out->link_table = (void *)t[OTLP_LINKS].v;
	out->n_attribute_table = t[OTLP_ATTRIBUTES].n;
	out->attribute_table = (void *)t[OTLP_ATTRIBUTES].v;
	out->n_stack_table = t[OTLP_STACKS].n;
	out->stack_table = (void *)t[OTLP_STACKS].v;
	out->n_string_table = d->strings.n;
	out->string_table = (char **)d->strings.v;
}
