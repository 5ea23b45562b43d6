/*
 * otlp_dict.h - the ProfilesDictionary of one OTLP export request, built
 * while otlp.c converts a pprof profile, and the arena its messages live
 * in.
 *
 * Every table follows the rules of profiles.proto's ProfilesDictionary:
 * element 0 is the zero value (""; Mapping{}, Location{}, ... with every
 * field at its default; the link table's Link of 16 and 8 zero bytes, the
 * shape the proto asks for), and no item appears twice. Items are
 * deduplicated by value: a message is identified by its protobuf encoding
 * (the converter builds every message the same way, repeated fields in a
 * fixed order, so equal values encode to equal bytes), and a message whose
 * encoding is empty is the zero value, index 0. Items are added when the
 * converter first refers to them, so none is orphaned.
 *
 * Allocation failures and tables outgrowing int32 indices set a sticky
 * failure (otlp_dict_failed) and make the calls return index 0, so that the
 * caller checks once at the end. One request, one thread: the collector's
 * push thread, or `pyprof convert`.
 */
#ifndef PYPROF_PUSH_OTLP_DICT_H
#define PYPROF_PUSH_OTLP_DICT_H

#include <stddef.h>
#include <stdint.h>

#include "opentelemetry/proto/profiles/v1development/profiles.pb-c.h"

struct otlp_dict;

/* The tables a message can be interned into. OTLP_KEYS is not part of
 * the output: otlp.c interns a sample's identity there (its stack,
 * attributes and link) to merge samples that only differ by the labels
 * the conversion dropped. */
enum otlp_table {
	OTLP_MAPPINGS,
	OTLP_LOCATIONS,
	OTLP_FUNCTIONS,
	OTLP_LINKS,
	OTLP_ATTRIBUTES,
	OTLP_STACKS,
	OTLP_KEYS,
	OTLP_N_TABLES
};

/* An empty dictionary (every table holding its zero value), or NULL when
 * memory is short. */
struct otlp_dict *otlp_dict_new(void);
void otlp_dict_free(struct otlp_dict *d);

/* size zeroed bytes that live as long as d; NULL (and d failed) when
 * memory is short. */
void *otlp_dict_alloc(struct otlp_dict *d, size_t size);
/* A copy of s[0..len) in the arena, NUL-terminated. */
char *otlp_dict_strndup(struct otlp_dict *d, const char *s, size_t len);

/* The index of string s (NUL-terminated) in the string table, added if
 * new; "" is 0. */
int32_t otlp_dict_string(struct otlp_dict *d, const char *s);

/* The index of a message equal to m in table t, m itself added if there
 * is none. m must be allocated with otlp_dict_alloc (the table keeps the
 * pointer) and not change afterwards; its descriptor must be the table's
 * (Mapping for OTLP_MAPPINGS, ..., Sample for OTLP_KEYS). */
int32_t otlp_dict_intern(struct otlp_dict *d, enum otlp_table t,
			 const ProtobufCMessage *m);

/* Entries in table t, the zero value included. */
size_t otlp_dict_len(const struct otlp_dict *d, enum otlp_table t);

/* Non-zero once an allocation failed or a table outgrew int32 indices. */
int otlp_dict_failed(const struct otlp_dict *d);

/* Points out's tables at d's (out stays valid while d lives). */
void otlp_dict_fill(struct otlp_dict *d,
		    Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary *out);

#endif /* PYPROF_PUSH_OTLP_DICT_H */
