/*
 * wire_frames.h - the one encoder of each wire frame kind (wire.h), the
 * structs they share with the collector's decoder (collector/daemon/
 * decode.h), and the one reader of tagged fields.
 *
 * Writers: libpyprof.so's agent thread (transport.c's definitions,
 * agent.c's SAMPLES, LOST, HELLO and BYE, heapframe.c's HEAP frames,
 * control.c's replies), the collector (daemon/control.c, conn.c's
 * CTL_WRITTEN) and pyprof ctl (cli/cmd_ctl.c's CTL_REQUEST). They live
 * here, header only, because these are three programs that share nothing
 * but include/pyprof/ (tools/layers; a source compiled into both, as
 * preload/config.c is, would need a home in one of the two trees), and
 * because they are a few stores each, best inlined where the frame is
 * built.
 *
 * Each encoder writes a payload (after the 4-byte header) through a
 * struct wire_out; wire_end_frame (wire.h) then writes the header. They
 * touch only the caller's memory (memcpy for byte strings), take no lock
 * and keep no state: any thread may use them, a signal handler included,
 * though today only the agent thread and the collector do.
 *
 * Worked example: wire_put_node(w, &(struct wire_node){7, 3, 12}) writes
 * 07 03 0c; with its header, 05 03 00 00 07 03 0c.
 */
#ifndef PYPROF_WIRE_FRAMES_H
#define PYPROF_WIRE_FRAMES_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyprof/wire.h"

/* ---- definitions ------------------------------------------------------ */

struct wire_string { /* STRING */
	uint64_t id;
	const uint8_t *s; /* len bytes, not NUL-terminated */
	size_t len;
};

struct wire_function { /* FUNCTION: string ids, 0 = none */
	uint64_t id, name, system_name, filename, start_line;
};

struct wire_location { /* LOCATION */
	uint64_t id, function, line;
};

struct wire_node { /* NODE: parent 0 = the root */
	uint64_t id, parent, location;
};

struct wire_thread { /* THREAD: name 0 = unnamed */
	uint64_t ref, tid, name;
};

struct wire_mapping { /* MAPPING: [start, limit) */
	uint64_t id, start, limit, offset, filename;
	const uint8_t *build_id; /* build_id_len bytes, maybe none */
	size_t build_id_len;
};

struct wire_address { /* ADDRESS: mapping 0 = none known */
	uint64_t id, mapping, address;
};

struct wire_labels { /* LABELS: n_pairs (key, value) string ids */
	uint64_t id;
	size_t n_pairs;
	const uint64_t *kv; /* 2 * n_pairs ids: key, value, key, ... */
};

struct wire_lost { /* LOST: enum wire_lost_reason */
	uint64_t reason, samples, value;
};

struct wire_heap_snapshot { /* HEAP_SNAPSHOT */
	uint64_t seq;
};

/* ---- records: SAMPLES after its base_ns, HEAP after its rate ---------- */

struct wire_sample {
	uint64_t node, thread, dt_ns, count, value;
	uint64_t flags;	 /* enum wire_sample_flag */
	uint64_t opcode; /* if flags has WIRE_SF_OPCODE */
	uint64_t labels; /* if flags has WIRE_SF_LABELS */
};

struct wire_heap_rec {
	uint64_t kind;				   /* enum wire_heap_kind */
	uint64_t node, thread, size, addr, labels; /* ALLOC(_LABELS); FREE:
						      addr only */
	uint64_t n, bytes;			   /* LOST */
};

static inline void wire_put_string(struct wire_out *w,
				   const struct wire_string *f)
{
	wire_put_varint(w, f->id);
	wire_put_bytes(w, f->s, f->len);
}

static inline void wire_put_function(struct wire_out *w,
				     const struct wire_function *f)
{
	wire_put_varint(w, f->id);
	wire_put_varint(w, f->name);
	wire_put_varint(w, f->system_name);
	wire_put_varint(w, f->filename);
	wire_put_varint(w, f->start_line);
}

static inline void wire_put_location(struct wire_out *w,
				     const struct wire_location *f)
{
	wire_put_varint(w, f->id);
	wire_put_varint(w, f->function);
	wire_put_varint(w, f->line);
}

static inline void wire_put_node(struct wire_out *w,
				 const struct wire_node *f)
{
	wire_put_varint(w, f->id);
	wire_put_varint(w, f->parent);
	wire_put_varint(w, f->location);
}

static inline void wire_put_thread(struct wire_out *w,
				   const struct wire_thread *f)
{
	wire_put_varint(w, f->ref);
	wire_put_varint(w, f->tid);
	wire_put_varint(w, f->name);
}

static inline void wire_put_mapping(struct wire_out *w,
				    const struct wire_mapping *f)
{
	wire_put_varint(w, f->id);
	wire_put_varint(w, f->start);
	wire_put_varint(w, f->limit);
	wire_put_varint(w, f->offset);
	wire_put_varint(w, f->filename);
	wire_put_bytes(w, f->build_id, f->build_id_len);
}

static inline void wire_put_address(struct wire_out *w,
				    const struct wire_address *f)
{
	wire_put_varint(w, f->id);
	wire_put_varint(w, f->mapping);
	wire_put_varint(w, f->address);
}

static inline void wire_put_labels(struct wire_out *w,
				   const struct wire_labels *f)
{
	wire_put_varint(w, f->id);
	for (size_t i = 0; i < 2 * f->n_pairs; i++)
		wire_put_varint(w, f->kv[i]);
}

static inline void wire_put_lost(struct wire_out *w,
				 const struct wire_lost *f)
{
	wire_put_varint(w, f->reason);
	wire_put_varint(w, f->samples);
	wire_put_varint(w, f->value);
}

static inline void wire_put_heap_snapshot(struct wire_out *w,
					  const struct wire_heap_snapshot *f)
{
	wire_put_varint(w, f->seq);
}

/* SAMPLES: the lead (base_ns), then records until the payload ends. The
 * record's opcode and labels are written when its flags say so. */
static inline void wire_put_samples_lead(struct wire_out *w,
					 uint64_t base_ns)
{
	wire_put_varint(w, base_ns);
}

static inline void wire_put_sample(struct wire_out *w,
				   const struct wire_sample *s)
{
	wire_put_varint(w, s->node);
	wire_put_varint(w, s->thread);
	wire_put_varint(w, s->dt_ns);
	wire_put_varint(w, s->count);
	wire_put_varint(w, s->value);
	wire_put_varint(w, s->flags);
	if (s->flags & WIRE_SF_OPCODE)
		wire_put_varint(w, s->opcode);
	if (s->flags & WIRE_SF_LABELS)
		wire_put_varint(w, s->labels);
}

/* HEAP: the lead (rate), then records until the payload ends. A record
 * of a kind wire.h does not define is written as its kind alone. */
static inline void wire_put_heap_lead(struct wire_out *w, uint64_t rate)
{
	wire_put_varint(w, rate);
}

static inline void wire_put_heap_rec(struct wire_out *w,
				     const struct wire_heap_rec *h)
{
	wire_put_varint(w, h->kind);
	switch (h->kind) {
	case WIRE_HEAP_ALLOC:
	case WIRE_HEAP_ALLOC_LABELS:
		wire_put_varint(w, h->node);
		wire_put_varint(w, h->thread);
		wire_put_varint(w, h->size);
		wire_put_varint(w, h->addr);
		if (h->kind == WIRE_HEAP_ALLOC_LABELS)
			wire_put_varint(w, h->labels);
		break;
	case WIRE_HEAP_FREE:
		wire_put_varint(w, h->addr);
		break;
	case WIRE_HEAP_LOST:
		wire_put_varint(w, h->n);
		wire_put_varint(w, h->bytes);
		break;
	}
}

/* ---- tagged frames: HELLO, BYE, control -------------------------------- */

/* A payload of tagged fields from frame + WIRE_HDR_LEN, cap bytes in all
 * (header included); the fields are then wire_put_tag_varint and
 * wire_put_tag_bytes (wire.h) or the helpers below, the end
 * wire_tagged_end. */
static inline struct wire_out wire_tagged_begin(uint8_t *frame, size_t cap)
{
	struct wire_out w = { frame + WIRE_HDR_LEN, frame + cap, 1 };
	if (cap < WIRE_HDR_LEN)
		w = (struct wire_out){ frame, frame, 0 };
	return w;
}

/* HELLO's head: the magic, then VERSION, PID and PPID, the fields every
 * HELLO starts with (a profiled process's and a refused one's). */
static inline struct wire_out wire_hello_begin(uint8_t *frame, size_t cap,
					       uint64_t pid, uint64_t ppid)
{
	struct wire_out w = wire_tagged_begin(frame, cap);
	for (size_t i = 0; i < WIRE_MAGIC_LEN; i++)
		wire_put_u8(&w, (uint8_t)WIRE_MAGIC[i]);
	wire_put_tag_varint(&w, WIRE_H_VERSION, WIRE_VERSION);
	wire_put_tag_varint(&w, WIRE_H_PID, pid);
	wire_put_tag_varint(&w, WIRE_H_PPID, ppid);
	return w;
}

/* BYE's fields, in the order the library writes them; achieved_ns and
 * cpu_source are sent when not 0, native_unmerged when has_native. */
struct wire_bye {
	uint64_t samples, lost, end_mono_ns, handler_n, handler_ns, faults;
	uint64_t achieved_ns, native_unmerged, cpu_source;
	int has_native;
};

static inline void wire_put_bye(struct wire_out *w, const struct wire_bye *b)
{
	wire_put_tag_varint(w, WIRE_B_SAMPLES, b->samples);
	wire_put_tag_varint(w, WIRE_B_LOST, b->lost);
	wire_put_tag_varint(w, WIRE_B_END_MONO_NS, b->end_mono_ns);
	wire_put_tag_varint(w, WIRE_B_HANDLER_N, b->handler_n);
	wire_put_tag_varint(w, WIRE_B_HANDLER_NS, b->handler_ns);
	wire_put_tag_varint(w, WIRE_B_FAULTS, b->faults);
	if (b->achieved_ns)
		wire_put_tag_varint(w, WIRE_B_ACHIEVED_NS, b->achieved_ns);
	if (b->has_native)
		wire_put_tag_varint(w, WIRE_B_NATIVE_UNMERGED,
				    b->native_unmerged);
	if (b->cpu_source)
		wire_put_tag_varint(w, WIRE_B_CPU_SOURCE, b->cpu_source);
}

/* A NUL-terminated string as a byte-string field (without the NUL). */
static inline void wire_put_tag_str(struct wire_out *w, unsigned tag,
				    const char *s)
{
	wire_put_tag_bytes(w, tag, s, strlen(s));
}

/* Fields already encoded (a CTL_REPLY's payload relayed in a
 * CTL_ANSWER): appended as they are, since a list of tagged fields
 * followed by another is one list. */
static inline void wire_put_fields(struct wire_out *w, const uint8_t *p,
				   size_t n)
{
	if ((size_t)(w->end - w->p) < n) {
		w->ok = 0;
		w->p = w->end;
		return;
	}
	if (n)
		memcpy(w->p, p, n);
	w->p += n;
}

/* Ends a tagged frame of type: its whole length, or 0 if the fields did
 * not fit. */
static inline size_t wire_tagged_end(uint8_t *frame, const struct wire_out *w,
				     unsigned type)
{
	return w->ok ? wire_end_frame(frame, w, type) : 0;
}

/* CTL_WRITTEN's one field: the frame, whole, into frame (at least
 * WIRE_HDR_LEN + 12 bytes, cap); its length, 0 if it did not fit. */
static inline size_t wire_ctl_written(uint8_t *frame, size_t cap,
				      uint64_t written)
{
	struct wire_out w = wire_tagged_begin(frame, cap);
	wire_put_tag_varint(&w, WIRE_C_WRITTEN, written);
	return wire_tagged_end(frame, &w, WIRE_CTL_WRITTEN);
}

/* One tagged field as read. */
struct wire_field {
	uint64_t tag;
	int is_bytes; /* which of v or (s, n) holds the value */
	uint64_t v;
	const uint8_t *s;
	size_t n;
};

/* The one reader of tagged fields (HELLO after its magic, BYE, control):
 * the next field at r, a byte string of at most max_bytes. 0, or -EPROTO
 * when the field is malformed or cut short (then r->ok is 0). */
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

/* Writes f as read: wire_field_next's inverse. */
static inline void wire_put_field(struct wire_out *w,
				  const struct wire_field *f)
{
	if (f->is_bytes)
		wire_put_tag_bytes(w, (unsigned)f->tag, f->s, f->n);
	else
		wire_put_tag_varint(w, (unsigned)f->tag, f->v);
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

#endif /* PYPROF_WIRE_FRAMES_H */
