/*
 * timeline.c - the time-ordered sample stream, collector side (the file
 * format is common/timeline_file.h's): the in-memory record array and the
 * writer.
 *
 * The writer turns each distinct leaf node into one stack, in the order
 * nodes first appear, with a node -> stack index array sized by the
 * symtab.
 */
#include "daemon/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/grow.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

#define UNMAPPED UINT32_MAX

/* One record as kept in memory: 40 bytes. */
struct tl_rec {
	uint32_t node, flags;
	uint32_t pid, tid; /* Linux pids and tids fit in 22 bits */
	uint64_t time_ns;
	uint64_t value;
	uint32_t count; /* saturates */
	uint32_t pad_;
};

struct timeline {
	struct tl_rec *v;
	size_t n, cap, max;
	uint64_t dropped;
};

struct timeline *timeline_new(size_t max_records)
{
	struct timeline *tl = calloc(1, sizeof(*tl));
	if (!tl)
		return NULL;
	tl->max = max_records ? max_records : TIMELINE_MAX_RECORDS;
	return tl;
}

void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	free(tl->v);
	free(tl);
}

void timeline_add(struct timeline *tl, uint32_t node, uint64_t pid,
		  uint64_t tid, uint64_t unix_ns, uint32_t flags,
		  uint64_t count, uint64_t value)
{
	if (tl->n == tl->cap) {
		size_t cap = tl->cap ? 2 * tl->cap : 4096;
		struct tl_rec *v;
		if (cap > tl->max)
			cap = tl->max;
		if (cap <= tl->n) {
			tl->dropped++;
			return;
		}
		v = realloc(tl->v, cap * sizeof(*v));
		if (!v) {
			tl->dropped++;
			return;
		}
		tl->v = v;
		tl->cap = cap;
	}
	tl->v[tl->n++] = (struct tl_rec){
		.node = node,
		.flags = flags,
		.pid = (uint32_t)pid,
		.tid = (uint32_t)tid,
		.time_ns = unix_ns,
		.value = value,
		.count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count,
	};
}

size_t timeline_len(const struct timeline *tl)
{
	return tl->n;
}

uint64_t timeline_dropped(const struct timeline *tl)
{
	return tl->dropped;
}

/* ---- writing ----------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void put_varint(struct buf *b, uint64_t v)
{
	if (grow_array(&b->p, &b->cap, b->len + 10, 1, 1 << 16) < 0) {
		b->oom = 1;
		return;
	}
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

int timeline_write(const struct timeline *tl, const struct symtab *st,
		   const uint32_t *loc_map, size_t n_map,
		   int64_t profile_time_nanos, const char *path)
{
	uint32_t n_nodes = symtab_n_nodes(st);
	uint32_t *stack_of = NULL, *order = NULL;
	struct buf b = { 0 };
	size_t n_stacks = 0, n_kept = 0;
	uint64_t prev = 0, dropped = tl->dropped;
	int rc = -ENOMEM;

	stack_of = calloc((size_t)n_nodes + 1, sizeof(*stack_of));
	order = malloc(((size_t)n_nodes + 1) * sizeof(*order));
	if (!stack_of || !order)
		goto out;
	/* stack_of[node]: 0 not seen yet, UNMAPPED when a location of its
	 * stack is not in the profile (a process the profile left out, for
	 * its other mode), else 1 + the stack's index. */
	for (size_t i = 0; i < tl->n; i++) {
		uint32_t node = tl->v[i].node, nid, lid;
		if (node == 0 || node > n_nodes) {
			rc = -EINVAL;
			goto out;
		}
		if (!stack_of[node]) {
			stack_of[node] = (uint32_t)(n_stacks + 1);
			for (nid = node; nid;) {
				symtab_node(st, nid, &nid, &lid);
				if (lid >= n_map || !loc_map[lid])
					stack_of[node] = UNMAPPED;
			}
			if (stack_of[node] != UNMAPPED)
				order[n_stacks++] = node;
		}
		if (stack_of[node] == UNMAPPED)
			dropped++;
		else
			n_kept++;
	}
	/* Header and magic bytes first. */
	put_varint(&b, 0);
	if (b.oom)
		goto out;
	b.len = 0;
	memcpy(b.p, TIMELINE_MAGIC, TIMELINE_MAGIC_LEN);
	b.len = TIMELINE_MAGIC_LEN;
	put_varint(&b, TIMELINE_VERSION);
	put_varint(&b, (uint64_t)profile_time_nanos);
	put_varint(&b, n_stacks);
	for (size_t s = 0; s < n_stacks && !b.oom; s++) {
		uint32_t node = order[s], lid;
		put_varint(&b, symtab_node_depth(st, node));
		while (node) {
			symtab_node(st, node, &node, &lid);
			put_varint(&b, loc_map[lid]);
		}
	}
	put_varint(&b, n_kept);
	for (size_t i = 0; i < tl->n && !b.oom; i++) {
		const struct tl_rec *r = &tl->v[i];
		if (stack_of[r->node] == UNMAPPED)
			continue;
		put_varint(&b, stack_of[r->node] - 1);
		put_varint(&b, r->pid);
		put_varint(&b, r->tid);
		put_varint(&b, zigzag((int64_t)(r->time_ns - prev)));
		prev = r->time_ns;
		put_varint(&b, r->count);
		put_varint(&b, r->value);
		put_varint(&b, r->flags);
	}
	put_varint(&b, dropped);
	if (b.oom)
		goto out;
	rc = file_write_atomic(path, b.p, b.len, FILEIO_REPLACE);
out:
	free(b.p);
	free(stack_of);
	free(order);
	return rc;
}
