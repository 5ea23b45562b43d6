/*
 * decode.c - each data frame's payload read into its struct (decode.h).
 *
 * Field order is wire.h's, the inverse of pyprof/wire_frames.h's
 * encoders: tests/unit/test_wire.c reads every frame of tests/data/wire/
 * with these, writes it again with those, and compares the bytes.
 *
 * Collector loop thread (or any thread: no shared state).
 */
#include "daemon/decode.h"

#include "pyprof/wire.h"

/* After the last field: cut short, left over, or whole. */
static int end(const struct wire_in *r)
{
	if (!r->ok)
		return DECODE_SHORT;
	return wire_at_end(r) ? 0 : DECODE_LEFTOVER;
}

int decode_string(struct wire_in *r, struct wire_string *out)
{
	out->id = wire_get_varint(r);
	out->s = wire_get_bytes(r, &out->len, WIRE_MAX_STRING);
	return end(r);
}

int decode_function(struct wire_in *r, struct wire_function *out)
{
	out->id = wire_get_varint(r);
	out->name = wire_get_varint(r);
	out->system_name = wire_get_varint(r);
	out->filename = wire_get_varint(r);
	out->start_line = wire_get_varint(r);
	return end(r);
}

int decode_location(struct wire_in *r, struct wire_location *out)
{
	out->id = wire_get_varint(r);
	out->function = wire_get_varint(r);
	out->line = wire_get_varint(r);
	return end(r);
}

int decode_node(struct wire_in *r, struct wire_node *out)
{
	out->id = wire_get_varint(r);
	out->parent = wire_get_varint(r);
	out->location = wire_get_varint(r);
	return end(r);
}

int decode_thread(struct wire_in *r, struct wire_thread *out)
{
	out->ref = wire_get_varint(r);
	out->tid = wire_get_varint(r);
	out->name = wire_get_varint(r);
	return end(r);
}

int decode_mapping(struct wire_in *r, struct wire_mapping *out)
{
	out->id = wire_get_varint(r);
	out->start = wire_get_varint(r);
	out->limit = wire_get_varint(r);
	out->offset = wire_get_varint(r);
	out->filename = wire_get_varint(r);
	out->build_id = wire_get_bytes(r, &out->build_id_len,
				       WIRE_MAX_BUILD_ID);
	return end(r);
}

int decode_address(struct wire_in *r, struct wire_address *out)
{
	out->id = wire_get_varint(r);
	out->mapping = wire_get_varint(r);
	out->address = wire_get_varint(r);
	return end(r);
}

int decode_lost(struct wire_in *r, struct wire_lost *out)
{
	out->reason = wire_get_varint(r);
	out->samples = wire_get_varint(r);
	out->value = wire_get_varint(r);
	return end(r);
}

int decode_heap_snapshot(struct wire_in *r, struct wire_heap_snapshot *out)
{
	out->seq = wire_get_varint(r);
	return end(r);
}

int decode_labels(struct wire_in *r, struct wire_labels *out, uint64_t *kv)
{
	out->id = wire_get_varint(r);
	out->n_pairs = 0;
	out->kv = kv;
	while (r->ok && !wire_at_end(r)) {
		if (out->n_pairs == WIRE_MAX_LABELS)
			return DECODE_TOO_MANY;
		kv[2 * out->n_pairs] = wire_get_varint(r);
		kv[2 * out->n_pairs + 1] = wire_get_varint(r);
		out->n_pairs++;
	}
	return end(r);
}

int decode_lead(struct wire_in *r, uint64_t *lead)
{
	*lead = wire_get_varint(r);
	return r->ok ? 0 : DECODE_SHORT;
}

int decode_sample(struct wire_in *r, struct wire_sample *s)
{
	s->node = wire_get_varint(r);
	s->thread = wire_get_varint(r);
	s->dt_ns = wire_get_varint(r);
	s->count = wire_get_varint(r);
	s->value = wire_get_varint(r);
	s->flags = wire_get_varint(r);
	/* PYPROF_OPCODES: the innermost frame's opcode follows, then the
	 * label set in force, each if its flag says so. */
	s->opcode = s->flags & WIRE_SF_OPCODE ? wire_get_varint(r) : 0;
	s->labels = s->flags & WIRE_SF_LABELS ? wire_get_varint(r) : 0;
	return r->ok ? 0 : DECODE_SHORT;
}

int decode_heap_rec(struct wire_in *r, struct wire_heap_rec *h)
{
	*h = (struct wire_heap_rec){ .kind = wire_get_varint(r) };
	switch (h->kind) {
	case WIRE_HEAP_ALLOC:
	case WIRE_HEAP_ALLOC_LABELS:
		h->node = wire_get_varint(r);
		h->thread = wire_get_varint(r);
		h->size = wire_get_varint(r);
		h->addr = wire_get_varint(r);
		if (h->kind == WIRE_HEAP_ALLOC_LABELS)
			h->labels = wire_get_varint(r);
		break;
	case WIRE_HEAP_FREE:
		h->addr = wire_get_varint(r);
		break;
	case WIRE_HEAP_LOST:
		h->n = wire_get_varint(r);
		h->bytes = wire_get_varint(r);
		break;
	}
	return r->ok ? 0 : DECODE_SHORT;
}
