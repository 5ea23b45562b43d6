/*
 * wire_fields.h - reading tagged fields, the encoding of HELLO, BYE and
 * the control frames (wire.h: varint key = tag << 1 | kind, then a varint
 * value for kind 0 or a byte string for kind 1), with wire.h's cursor.
 *
 * Header only; any thread (no state).
 */
#ifndef PYPROF_WIRE_FIELDS_H
#define PYPROF_WIRE_FIELDS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "pyprof/wire.h"

struct wire_field {
	uint64_t tag;
	int is_bytes;       /* which of v or (s, n) holds the value */
	uint64_t v;
	const uint8_t *s;
	size_t n;
};

/* Reads the next field at r, a byte string of at most max_bytes.
 * 0, or -EPROTO when the field is malformed or cut short (r->ok is 0). */
static inline int wire_field_next(struct wire_in *r, size_t max_bytes,
				  struct wire_field *f)
{
	uint64_t key = wire_get_varint(r);
	f->tag = key >> 1;
	f->is_bytes = (int)(key & 1);
	f->v = 0;
	f->s = NULL;
	f->n = 0;
	if (f->is_bytes)
		f->s = wire_get_bytes(r, &f->n, max_bytes);
	else
		f->v = wire_get_varint(r);
	return r->ok ? 0 : -EPROTO;
}

typedef void (*wire_varint_fn)(void *ctx, uint64_t tag, uint64_t v);

/* Calls fn(ctx, tag, v) for each varint field of the len bytes at p, in
 * order; byte strings (at most max_bytes) are skipped. 0, or -EPROTO when
 * a field is malformed or cut short (fn saw the fields before it). */
static inline int wire_fields_varints(const uint8_t *p, size_t len,
				      size_t max_bytes, wire_varint_fn fn,
				      void *ctx)
{
	struct wire_in r = { p, p + len, 1 };
	struct wire_field f;

	while (!wire_at_end(&r)) {
		if (wire_field_next(&r, max_bytes, &f) < 0)
			return -EPROTO;
		if (!f.is_bytes)
			fn(ctx, f.tag, f.v);
	}
	return 0;
}

#endif /* PYPROF_WIRE_FIELDS_H */
