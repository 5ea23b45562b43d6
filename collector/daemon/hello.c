/*
 * hello.c - HELLO and BYE decoding (see hello.h).
 *
 * Both payloads are lists of tagged fields (wire.h: key = tag << 1 |
 * kind, then a varint or a byte string). HELLO is checked as it is read,
 * in wire order, so the first thing wrong is the one reported; nothing
 * outside *out is touched, so a rejected HELLO changes nothing.
 *
 * Collector loop thread (or any thread: no shared state).
 */
#include "daemon/hello.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "pyprof/wire_frames.h"
#include "pyprof/wire.h"

static int hello_bytes_tag(uint64_t tag)
{
	return tag == WIRE_H_PYVERSION || tag == WIRE_H_EXE ||
	       tag == WIRE_H_ARG || tag == WIRE_H_COMM;
}

static int add_arg(struct hello *hl, size_t *cap, const uint8_t *s,
		   size_t n, char *err)
{
	struct proc_hello *h = &hl->h;
	if (h->n_args == WIRE_MAX_ARGS) {
		snprintf(err, ERR_LEN, "HELLO: more than %d ARG fields",
			 WIRE_MAX_ARGS);
		return -EPROTO;
	}
	if (grow_array(&hl->args, cap, h->n_args + 1, sizeof(*hl->args),
		       16) < 0) {
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	hl->args[h->n_args++] = (struct proc_bytes){ s, n };
	return 0;
}

/* A known tag up to WIRE_H_COMM, of the right kind, not repeated. */
static int set_field(struct hello *hl, size_t *args_cap,
		     const struct wire_field *f, char *err)
{
	struct proc_hello *h = &hl->h;
	uint64_t v = f->v;
	switch (f->tag) {
	case WIRE_H_VERSION:
		h->version = v;
		if (v != WIRE_VERSION) {
			snprintf(err, ERR_LEN,
				 "protocol version %" PRIu64 " not supported "
				 "(this collector speaks %d)",
				 v,
				 WIRE_VERSION);
			return -EPROTO;
		}
		break;
	case WIRE_H_PID:
		h->pid = v;
		break;
	case WIRE_H_PPID:
		h->ppid = v;
		break;
	case WIRE_H_START_UNIX_NS:
		h->start_unix_ns = v;
		h->has_start_unix = 1;
		break;
	case WIRE_H_START_MONO_NS:
		h->start_mono_ns = v;
		h->has_start_mono = 1;
		break;
	case WIRE_H_MODE:
		h->mode = v;
		break;
	case WIRE_H_PERIOD_NS:
		h->period_ns = v;
		break;
	case WIRE_H_MAX_DEPTH:
		h->max_depth = v;
		break;
	case WIRE_H_PYVERSION:
		h->pyversion = (struct proc_bytes){ f->s, f->n };
		break;
	case WIRE_H_EXE:
		h->exe = (struct proc_bytes){ f->s, f->n };
		break;
	case WIRE_H_COMM:
		h->comm = (struct proc_bytes){ f->s, f->n };
		break;
	case WIRE_H_CONN_SEQ:
		h->conn_seq = v;
		break;
	case WIRE_H_UID:
		h->uid = v;
		break;
	case WIRE_H_ACHIEVED_NS:
		h->achieved_ns = v;
		break;
	case WIRE_H_ARG:
		return add_arg(hl, args_cap, f->s, f->n, err);
	}
	return 0;
}

/* The fields after the magic, in order. *seen: a bit per tag < 64 read. */
static int read_fields(struct wire_in *r, struct hello *hl, uint64_t *seen,
		       char *err)
{
	size_t args_cap = 0;
	struct wire_field f;
	int rc;

	while (!wire_at_end(r)) {
		if (wire_field_next(r, WIRE_MAX_STRING, &f) < 0) {
			snprintf(err, ERR_LEN,
				 "HELLO: a field is malformed or longer than "
				 "the frame (or than %d bytes)",
				 WIRE_MAX_STRING);
			return -EPROTO;
		}
		if (*seen == 0 && f.tag != WIRE_H_VERSION) {
			snprintf(err, ERR_LEN,
				 "HELLO must start with VERSION (got tag "
				 "%" PRIu64 ")",
				 f.tag);
			return -EPROTO;
		}
		if (f.tag == WIRE_H_SAMPLING && !f.is_bytes) {
			hl->sampling = f.v != 0;
			continue;
		}
		if (f.tag == WIRE_H_WRITTEN && !f.is_bytes) {
			hl->h.written = f.v;
			hl->h.has_written = 1;
			continue;
		}
		if (f.tag == WIRE_H_REFUSED && f.is_bytes) {
			hl->refused = 1;
			hl->refused_why = (struct proc_bytes){ f.s, f.n };
			continue;
		}
		if (f.tag == 0 || f.tag > WIRE_H_COMM)
			continue; /* unknown: skipped, as wire.h promises */
		if (f.is_bytes != hello_bytes_tag(f.tag)) {
			snprintf(err, ERR_LEN,
				 "HELLO tag %" PRIu64 " has the wrong kind",
				 f.tag);
			return -EPROTO;
		}
		if (f.tag != WIRE_H_ARG && (*seen & (1ull << f.tag))) {
			snprintf(err, ERR_LEN,
				 "HELLO tag %" PRIu64 " repeated", f.tag);
			return -EPROTO;
		}
		*seen |= 1ull << f.tag;
		if ((rc = set_field(hl, &args_cap, &f, err)) < 0)
			return rc;
	}
	return 0;
}

int hello_decode(const uint8_t *p, size_t len, struct hello *out,
		 char *err)
{
	struct wire_in r = { p, p + len, 1 };
	uint64_t seen = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->sampling = -1;
	err[0] = 0;
	if (len < WIRE_MAGIC_LEN || memcmp(p, WIRE_MAGIC, WIRE_MAGIC_LEN)) {
		snprintf(err, ERR_LEN,
			 "HELLO without the " WIRE_MAGIC " magic");
		return -EPROTO;
	}
	r.p += WIRE_MAGIC_LEN;
	if ((rc = read_fields(&r, out, &seen, err)) < 0)
		return rc;
	out->h.args = out->args;
	if (!(seen & (1ull << WIRE_H_VERSION))) {
		snprintf(err, ERR_LEN, "HELLO without VERSION");
		return -EPROTO;
	}
	if (!(seen & (1ull << WIRE_H_PID)) || out->h.pid == 0 ||
	    out->h.pid > INT32_MAX) {
		snprintf(err, ERR_LEN, "HELLO without a valid PID");
		return -EPROTO;
	}
	if (out->h.mode != WIRE_MODE_CPU && out->h.mode != WIRE_MODE_WALL) {
		snprintf(err, ERR_LEN, "HELLO: unknown mode %" PRIu64,
			 out->h.mode);
		return -EPROTO;
	}
	return 0;
}

void hello_free(struct hello *hl)
{
	free(hl->args);
	hl->args = NULL;
	hl->h.args = NULL;
	hl->h.n_args = 0;
}

static void bye_field(void *ctx, uint64_t tag, uint64_t v)
{
	struct proc_bye *b = ctx;
	switch (tag) {
	case WIRE_B_SAMPLES:
		b->samples = v;
		b->has_samples = 1;
		break;
	case WIRE_B_LOST:
		b->lost = v;
		b->has_lost = 1;
		break;
	case WIRE_B_END_MONO_NS:
		b->end_mono_ns = v;
		b->has_end_mono = 1;
		break;
	case WIRE_B_HANDLER_N:
		b->handler_n = v;
		break;
	case WIRE_B_HANDLER_NS:
		b->handler_ns = v;
		break;
	case WIRE_B_FAULTS:
		b->faults = v;
		break;
	case WIRE_B_ACHIEVED_NS:
		b->achieved_ns = v;
		break;
	case WIRE_B_NATIVE_UNMERGED:
		b->native_unmerged = v;
		b->has_native = 1;
		break;
	case WIRE_B_CPU_SOURCE:
		b->cpu_source = v;
		break;
	default:
		break; /* unknown; no BYE field is bytes yet */
	}
}

int bye_decode(const uint8_t *p, size_t len, struct proc_bye *b)
{
	memset(b, 0, sizeof(*b));
	return wire_fields_varints(p, len, WIRE_MAX_STRING, bye_field, b);
}
