/*
 * decode.h - the collector's half of the wire protocol: each data frame's
 * payload (wire.h) read into its struct (pyprof/wire_frames.h, the structs
 * the library's encoders write from). HELLO and BYE are hello.h's; the
 * control frames' tagged fields are read with wire_field_next.
 *
 * Pure: bytes in, a struct out. No I/O, no process table, no allocation;
 * what is defined and what refers to what is proc.h's business (conn.c
 * applies what these return). Byte strings in the structs point into the
 * payload. Collector loop thread, the unit tests and the fuzzer (or any
 * thread: no shared state).
 *
 * Each decoder reads the payload at r (a cursor over the whole payload)
 * and returns 0, or one of enum decode_err with r left where it stopped
 * (so r->end - r->p is what was left over).
 */
#ifndef PYPROF_DECODE_H
#define PYPROF_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "pyprof/wire_frames.h"

enum decode_err {
	DECODE_SHORT = -1,    /* the payload ends early, or a field is
				  malformed (a varint over 64 bits, a byte
				  string over its limit or past the end) */
	DECODE_LEFTOVER = -2, /* bytes after the last field */
	DECODE_TOO_MANY = -3  /* LABELS: more than WIRE_MAX_LABELS pairs */
};

int decode_string(struct wire_in *r, struct wire_string *out);
int decode_function(struct wire_in *r, struct wire_function *out);
int decode_location(struct wire_in *r, struct wire_location *out);
int decode_node(struct wire_in *r, struct wire_node *out);
int decode_thread(struct wire_in *r, struct wire_thread *out);
int decode_mapping(struct wire_in *r, struct wire_mapping *out);
int decode_address(struct wire_in *r, struct wire_address *out);
int decode_lost(struct wire_in *r, struct wire_lost *out);
int decode_heap_snapshot(struct wire_in *r, struct wire_heap_snapshot *out);

/* LABELS: out->kv points to kv, which must hold 2 * WIRE_MAX_LABELS ids.
 * DECODE_TOO_MANY as soon as a pair past WIRE_MAX_LABELS begins. */
int decode_labels(struct wire_in *r, struct wire_labels *out, uint64_t *kv);

/* SAMPLES and HEAP: their lead (base_ns, rate), then one record at a time
 * until wire_at_end(r). The lead and a record give DECODE_SHORT when cut
 * short. A HEAP record of an unknown kind is its kind alone: it returns 0
 * and the rest of the payload is not records the decoder can read (the
 * caller refuses the kind). */
int decode_lead(struct wire_in *r, uint64_t *lead);
int decode_sample(struct wire_in *r, struct wire_sample *out);
int decode_heap_rec(struct wire_in *r, struct wire_heap_rec *out);

#endif /* PYPROF_DECODE_H */
