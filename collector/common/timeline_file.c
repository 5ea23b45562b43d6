/*
 * timeline_file.c - the timeline file's reader (the format is in
 * timeline_file.h), for the pyprof command; single-threaded.
 *
 * The reader checks every count against the bytes left before
 * allocating, so a corrupt file cannot ask for more memory than its size
 * justifies.
 */
#include "common/timeline_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyprof/wire.h"

/* ---- reading ------------------------------------------------------------------ */

struct tl_data {
	struct timeline_data pub;
	uint64_t *locs;
	size_t *first;
	uint32_t *len;
	struct timeline_rec *recs;
};

void timeline_data_free(struct timeline_data *d)
{
	struct tl_data *t = (struct tl_data *)d;
	if (!t)
		return;
	free(t->locs);
	free(t->first);
	free(t->len);
	free(t->recs);
	free(t);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The error of a timeline that ends early or holds what cannot be:
 * -EINVAL, its text in err. */
static int corrupt(char *err)
{
	snprintf(err, ERR_LEN, "timeline is truncated or corrupt");
	return -EINVAL;
}

/* The stack table at r into t (first, len, locs), *n_stacks of them.
 * 0, -ENOMEM, or -EINVAL with the reason in err. */
static int read_stacks(struct wire_in *r, struct tl_data *t,
		       uint64_t *n_stacks, char *err)
{
	uint64_t n_locs = 0;

	*n_stacks = wire_get_varint(r);
	/* Each stack takes at least one byte. */
	if (!r->ok || *n_stacks > (uint64_t)(r->end - r->p))
		return corrupt(err);
	t->first = malloc(*n_stacks * sizeof(*t->first) + 1);
	t->len = malloc(*n_stacks * sizeof(*t->len) + 1);
	/* Each location takes at least one byte too. */
	t->locs = malloc((size_t)(r->end - r->p) * sizeof(*t->locs) + 1);
	if (!t->first || !t->len || !t->locs)
		return -ENOMEM;
	for (uint64_t s = 0; s < *n_stacks; s++) {
		uint64_t depth = wire_get_varint(r);
		if (!r->ok || depth > (uint64_t)(r->end - r->p) ||
		    depth > WIRE_MAX_DEPTH)
			return corrupt(err);
		t->first[s] = (size_t)n_locs;
		t->len[s] = (uint32_t)depth;
		for (uint64_t i = 0; i < depth; i++)
			t->locs[n_locs++] = wire_get_varint(r);
	}
	return 0;
}

/* The records at r into t->recs, *n_recs of them, each naming one of
 * n_stacks stacks; stops early when r runs out (the caller checks
 * r->ok). 0, -ENOMEM, or -EINVAL with the reason in err. */
static int read_records(struct wire_in *r, struct tl_data *t,
			uint64_t n_stacks, uint64_t *n_recs, char *err)
{
	int64_t time = 0;

	*n_recs = wire_get_varint(r);
	/* A record takes at least seven bytes. */
	if (!r->ok || *n_recs > (uint64_t)(r->end - r->p) / 7)
		return corrupt(err);
	t->recs = malloc(*n_recs * sizeof(*t->recs) + 1);
	if (!t->recs)
		return -ENOMEM;
	for (uint64_t i = 0; i < *n_recs && r->ok; i++) {
		struct timeline_rec *x = &t->recs[i];
		uint64_t stack = wire_get_varint(r);
		x->pid = wire_get_varint(r);
		x->tid = wire_get_varint(r);
		time += unzigzag(wire_get_varint(r));
		x->time_ns = time;
		x->count = (int64_t)wire_get_varint(r);
		x->value = (int64_t)wire_get_varint(r);
		x->flags = (uint32_t)wire_get_varint(r);
		if (stack >= n_stacks) {
			snprintf(err, ERR_LEN, "record %" PRIu64 ": stack %" PRIu64 " of %" PRIu64, i, stack,
				 n_stacks);
			return -EINVAL;
		}
		x->stack = (uint32_t)stack;
	}
	return 0;
}

int timeline_parse(const void *data, size_t len, struct timeline_data **out,
		   char *err)
{
	const uint8_t *d = data;
	struct wire_in r;
	struct tl_data *t = NULL;
	uint64_t version, n_stacks, n_recs;
	int rc = -EINVAL;

	*out = NULL;
	if (len < TIMELINE_MAGIC_LEN ||
	    memcmp(d, TIMELINE_MAGIC, TIMELINE_MAGIC_LEN)) {
		snprintf(err, ERR_LEN, "not a pyprof timeline (no "
				       "PYPROFTL magic)");
		return -EINVAL;
	}
	r = (struct wire_in){ d + TIMELINE_MAGIC_LEN, d + len, 1 };
	version = wire_get_varint(&r);
	if (r.ok && version != TIMELINE_VERSION) {
		snprintf(err, ERR_LEN, "timeline version %" PRIu64 " (this pyprof reads %d)", version, TIMELINE_VERSION);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pub.profile_time_nanos = (int64_t)wire_get_varint(&r);
	if ((rc = read_stacks(&r, t, &n_stacks, err)) < 0 ||
	    (rc = read_records(&r, t, n_stacks, &n_recs, err)) < 0)
		goto out;
	t->pub.n_dropped = wire_get_varint(&r);
	if (!r.ok || !wire_at_end(&r))
		goto bad;
	t->pub.n_stacks = (size_t)n_stacks;
	t->pub.locs = t->locs;
	t->pub.stack_first = t->first;
	t->pub.stack_len = t->len;
	t->pub.n_records = (size_t)n_recs;
	t->pub.recs = t->recs;
	*out = &t->pub;
	t = NULL;
	rc = 0;
	goto out;
bad:
	rc = corrupt(err);
out:
	timeline_data_free(t ? &t->pub : NULL);
	return rc;
}

int timeline_read(const char *path, struct timeline_data **out, char *err)
{
	uint8_t *data = NULL;
	size_t len = 0, cap = 0;
	int fd, rc = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, ERR_LEN, "%s: %s", path,
			 strerror(errno));
		return rc;
	}
	for (;;) {
		ssize_t got;
		if (len == cap) {
			size_t ncap = cap ? 2 * cap : 1 << 16;
			uint8_t *p = realloc(data, ncap);
			if (!p) {
				rc = -ENOMEM;
				goto out;
			}
			data = p;
			cap = ncap;
		}
		got = read(fd, data + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			rc = -errno;
			snprintf(err, ERR_LEN, "%s: %s", path,
				 strerror(errno));
			goto out;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	rc = timeline_parse(data, len, out, err);
out:
	close(fd);
	free(data);
	return rc;
}
