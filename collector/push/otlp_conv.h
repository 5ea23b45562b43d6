/*
 * otlp_conv.h - a pprof profile's pieces turned into OTLP dictionary items
 * (otlp_dict.h): mappings, functions, locations with their frame type,
 * stacks, labels as attributes, trace links; and the checks that the
 * profile refers only to what it holds. otlp.c assembles the request from
 * them. Private to the two files.
 *
 * What becomes what (profiles.proto v1development, semantic conventions):
 *   Location    mapping, address, lines; attribute profile.frame.type =
 *               "native" when it has an address (pyprof's native frames,
 *               PYPROF_NATIVE), "cpython" for a Python frame (address 0,
 *               with a line), none for pyprof's pseudo-frames ("[lost:
 *               ...]", "[truncated]": a function named [...] with no file)
 *   Mapping     start, limit, offset, file; the pprof build id as
 *               process.executable.build_id.gnu (pyprof writes it in hex)
 *   label       an attribute: pid, thread_id, thread_name become
 *               process.pid, thread.id, thread.name (their semantic
 *               conventions); the rest keep their pprof keys; a numeric
 *               label's unit is the attribute's unit. A key given twice
 *               on one sample keeps its first value (OTLP wants keys
 *               unique per sample; pyprof never repeats one).
 *   trace_id +  a Link (16 and 8 bytes) when both are labels of the sample
 *   span_id     and valid hex ids that are not all zero (docs/labels.md
 *               sets them as "%032x" / "%016x"); otherwise attributes
 *
 * One thread, one conversion, like otlp.c.
 */
#ifndef PYPROF_PUSH_OTLP_CONV_H
#define PYPROF_PUSH_OTLP_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "profile.pb-c.h"
#include "push/otlp_dict.h"

typedef Perftools__Profiles__Profile PprofProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OtlpSample;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

struct otlp_id_ent {
	uint64_t id;
	size_t i; /* index in the pprof array */
};

struct otlp_conv {
	const PprofProfile *p;
	struct otlp_dict *d;
	int bad; /* the input broke a rule; err says which */
	char *err;
	size_t err_len;

	/* pprof ids, sorted, for lookups; and each item's dictionary index,
	 * -1 until made */
	struct otlp_id_ent *maps, *funcs, *locs;
	int32_t *map_idx, *func_idx, *loc_idx;
	int32_t frame_attr[2]; /* profile.frame.type cpython, native; 0 = not
				  yet */
};

/* Sets up c for p (whose string table it checks); 0, -EINVAL (err filled)
 * or -ENOMEM. otlp_conv_fini frees what it holds, also after a failure. */
int otlp_conv_init(struct otlp_conv *c, const PprofProfile *p,
		   struct otlp_dict *d, char *err, size_t err_len);
void otlp_conv_fini(struct otlp_conv *c);

/* Records the first rule the input broke (printf-style, one line). */
void otlp_conv_bad(struct otlp_conv *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* pprof string i, or "" (and c bad) when i is out of range. */
const char *otlp_conv_str(struct otlp_conv *c, int64_t i);

/* An attribute value in d's arena: the string str (borrowed: it must
 * live as long as d), or with str NULL the integer num; NULL when memory
 * is short. */
AnyValue *otlp_conv_value(struct otlp_dict *d, const char *str, int64_t num);

/* The index of the attribute key = the string str (borrowed, as for
 * otlp_conv_value) or with str NULL the integer num, with unit, in the
 * dictionary; 0 when memory is short. */
int32_t otlp_conv_attr(struct otlp_conv *c, const char *key,
		       const char *str, int64_t num, const char *unit);

/* Sample i of the pprof profile as an OTLP sample without values: its
 * stack, attributes (sorted by index) and link, allocated in the
 * dictionary's arena; NULL when the sample is bad or memory short
 * (check c->bad and otlp_dict_failed). */
OtlpSample *otlp_conv_sample(struct otlp_conv *c, size_t i);

#endif /* PYPROF_PUSH_OTLP_CONV_H */
