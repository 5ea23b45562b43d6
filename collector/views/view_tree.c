/*
 * view_tree.c - the call tree (see view_tree.h).
 *
 * Nodes live in one growing array; an open-addressed table of (parent,
 * key) -> node finds a child in one probe or two. A sample is added by
 * walking its stack from the root end, one lookup per frame.
 */
#include "views/view_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "views/view_read.h"

#define TREE_INIT_CAP 1024

static uint64_t pk_hash(uint64_t pk)
{
	return idhash_mix(pk);
}

int view_tree_init(struct view_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->v = calloc(TREE_INIT_CAP, sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	t->cap = TREE_INIT_CAP;
	t->n = 1;
	t->v[0].key = VIEW_TREE_ROOT_KEY;
	return 0;
}

void view_tree_fini(struct view_tree *t)
{
	free(t->v);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* (Re)builds the slot table for at least want nodes, kept at most half
 * full, from the nodes themselves: a tree built in bulk (below) has no
 * table until a single stack is added to it. */
static int rehash(struct view_tree *t, size_t want)
{
	size_t n = 2 * TREE_INIT_CAP, mask;
	struct view_tree_slot *s;

	while (n < 2 * want)
		n *= 2;
	s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	mask = n - 1;
	for (size_t id = 1; id < t->n; id++) {
		uint64_t pk = (uint64_t)t->v[id].parent << 32 | t->v[id].key;
		size_t j;
		for (j = pk_hash(pk) & mask; s[j].id; j = (j + 1) & mask)
			;
		s[j].pk = pk;
		s[j].id = (uint32_t)id;
	}
	free(t->slots);
	t->slots = s;
	t->n_slots = n;
	return 0;
}

/* A new node (parent, key); 0 on ENOMEM. Not entered in the slots. */
static uint32_t new_node(struct view_tree *t, uint32_t parent, uint32_t key)
{
	struct view_node *nd;
	uint32_t id;

	if (grow_array(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 64) < 0)
		return 0;
	if (t->n >= UINT32_MAX - 1)
		return 0;
	id = (uint32_t)t->n++;
	nd = &t->v[id];
	memset(nd, 0, sizeof(*nd));
	nd->parent = parent;
	nd->key = key;
	nd->depth = t->v[parent].depth + 1;
	nd->next_sibling = t->v[parent].first_child;
	t->v[parent].first_child = id;
	if (nd->depth > t->max_depth)
		t->max_depth = nd->depth;
	return id;
}

/* The child of parent with key, created if need be; 0 on ENOMEM.
 * Linear probing over slots that carry their own key, so a probe touches
 * no node. */
static uint32_t child(struct view_tree *t, uint32_t parent, uint32_t key)
{
	uint64_t pk = (uint64_t)parent << 32 | key;
	size_t mask, i;
	uint32_t id;

	if ((!t->slots || (t->n + 1) * 2 > t->n_slots) &&
	    rehash(t, t->n + 1) < 0)
		return 0;
	mask = t->n_slots - 1;
	for (i = pk_hash(pk) & mask; t->slots[i].id; i = (i + 1) & mask)
		if (t->slots[i].pk == pk)
			return t->slots[i].id;
	id = new_node(t, parent, key);
	if (id) {
		t->slots[i].pk = pk;
		t->slots[i].id = id;
	}
	return id;
}

uint32_t view_tree_find(const struct view_tree *t, uint32_t parent,
			uint32_t key)
{
	/* the children's list: a tree built in bulk has no hash */
	if (parent >= t->n)
		return 0;
	for (uint32_t c = t->v[parent].first_child; c; c = t->v[c].next_sibling)
		if (t->v[c].key == key)
			return c;
	return 0;
}

int view_tree_add(struct view_tree *t, const uint32_t *keys, size_t n,
		  const int64_t val[2])
{
	uint32_t cur = 0;

	t->v[0].total[0] += val[0];
	t->v[0].total[1] += val[1];
	for (size_t i = n; i-- > 0;) {
		cur = child(t, cur, keys[i]);
		if (!cur)
			return -ENOMEM;
		t->v[cur].total[0] += val[0];
		t->v[cur].total[1] += val[1];
	}
	t->v[cur].self[0] += val[0];
	t->v[cur].self[1] += val[1];
	return 0;
}

/* ---- bulk: sorted stacks, no hashing -------------------------------------- */

struct bulk {
	uint32_t *keys; /* every kept stack, root first, back to back */
	size_t n_keys, cap_keys;
	struct stack_ref {
		size_t first;
		uint32_t len;
		uint32_t pad_;
		int64_t val[2];
	} * refs;
	size_t n_refs, cap_refs;
};

static int cmp_stack(const void *a, const void *b, void *ctx)
{
	const struct bulk *B = ctx;
	const struct stack_ref *x = a, *y = b;
	const uint32_t *kx = B->keys + x->first, *ky = B->keys + y->first;
	uint32_t n = x->len < y->len ? x->len : y->len;

	for (uint32_t i = 0; i < n; i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* Builds a fresh tree from sorted stacks: each stack shares its prefix
 * with the one before it, and everything after that prefix is new, so
 * nodes are only ever appended (in the order a walk visits them) and no
 * lookup is needed. For 100,000 stacks this is several times faster than
 * one hash probe per frame, whose misses dominate. */
static int build_sorted(struct view_tree *t, struct bulk *B)
{
	uint32_t *path = NULL;
	size_t depth_cap = 0;
	const uint32_t *prev = NULL;
	uint32_t prev_len = 0;
	size_t upper = B->n_keys + 1;
	int rc = -ENOMEM;

	if (B->n_refs) /* refs is NULL when a filter kept no stack */
		qsort_r(B->refs, B->n_refs, sizeof(*B->refs), cmp_stack, B);
	/* At most one node per frame: reserve once (untouched pages of a
	 * big malloc cost nothing). */
	if (upper > t->cap) {
		struct view_node *v = realloc(t->v, upper * sizeof(*v));
		if (!v)
			goto out;
		t->v = v;
		t->cap = upper;
	}
	for (size_t i = 0; i < B->n_refs; i++) {
		const struct stack_ref *r = &B->refs[i];
		const uint32_t *k = B->keys + r->first;
		uint32_t c = 0, cur;

		if (grow_array(&path, &depth_cap, r->len + 1, sizeof(*path),
			       64) < 0)
			goto out;
		while (c < r->len && c < prev_len && k[c] == prev[c])
			c++;
		path[0] = 0;
		for (uint32_t d = c; d < r->len; d++) {
			path[d + 1] = new_node(t, path[d], k[d]);
			if (!path[d + 1])
				goto out;
		}
		for (uint32_t d = 0; d <= r->len; d++) {
			cur = path[d];
			t->v[cur].total[0] += r->val[0];
			t->v[cur].total[1] += r->val[1];
		}
		cur = path[r->len];
		t->v[cur].self[0] += r->val[0];
		t->v[cur].self[1] += r->val[1];
		prev = k;
		prev_len = r->len;
	}
	rc = 0;
out:
	free(path);
	return rc;
}

int view_tree_add_profile(struct view_tree *t, const struct view_profile *p,
			  const uint32_t *key_of_frame,
			  const struct view_filter *f, const int slot_type[2])
{
	struct bulk B = { 0 };
	int fresh = t->n == 1, rc = -ENOMEM;

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t val[2] = { 0, 0 };
		int skip = 0;

		for (int k = 0; k < 2; k++) {
			if (slot_type[k] < 0)
				continue;
			val[k] = s->values[slot_type[k]];
			skip |= val[k] < 0;
		}
		if (skip || (val[0] == 0 && val[1] == 0))
			continue;
		if (f && !view_sample_matches(s, f))
			continue;
		if (grow_array(&B.keys, &B.cap_keys, B.n_keys + s->n_frames,
			       sizeof(*B.keys), 1024) < 0 ||
		    grow_array(&B.refs, &B.cap_refs, B.n_refs + 1,
			       sizeof(*B.refs), 1024) < 0)
			goto out;
		/* Root first: the reverse of pprof's order. */
		for (uint32_t j = 0; j < s->n_frames; j++)
			B.keys[B.n_keys + j] =
				key_of_frame[s->frames[s->n_frames - 1 - j]];
		B.refs[B.n_refs++] = (struct stack_ref){
			.first = B.n_keys, .len = s->n_frames, .val = { val[0], val[1] }
		};
		B.n_keys += s->n_frames;
	}
	if (fresh) {
		rc = build_sorted(t, &B);
		goto out;
	}
	/* A tree that already has nodes (the second profile of a diff):
	 * one lookup per frame. */
	rc = 0;
	for (size_t i = 0; i < B.n_refs && rc == 0; i++) {
		const struct stack_ref *r = &B.refs[i];
		uint32_t cur = 0;
		t->v[0].total[0] += r->val[0];
		t->v[0].total[1] += r->val[1];
		for (uint32_t d = 0; d < r->len; d++) {
			cur = child(t, cur, B.keys[r->first + d]);
			if (!cur) {
				rc = -ENOMEM;
				break;
			}
			t->v[cur].total[0] += r->val[0];
			t->v[cur].total[1] += r->val[1];
		}
		if (rc == 0) {
			t->v[cur].self[0] += r->val[0];
			t->v[cur].self[1] += r->val[1];
		}
	}
out:
	free(B.keys);
	free(B.refs);
	return rc;
}

size_t view_tree_path(const struct view_tree *t, uint32_t node,
		      uint32_t *out, size_t n)
{
	size_t depth = t->v[node].depth, i = depth;

	for (uint32_t cur = node; cur && i > 0; cur = t->v[cur].parent)
		if (--i < n)
			out[i] = t->v[cur].key;
	return depth;
}

int view_kids_push(struct view_kids *k, uint32_t id)
{
	if (grow_array(&k->v, &k->cap, k->n + 1, sizeof(*k->v), 256) < 0)
		return -ENOMEM;
	k->v[k->n++] = id;
	return 0;
}

void view_kids_sort(struct view_kids *k, size_t base,
		    int (*cmp)(const void *, const void *, void *), void *ctx)
{
	if (k->n > base) /* k->v is still NULL when no node has a child */
		qsort_r(k->v + base, k->n - base, sizeof(*k->v), cmp, ctx);
}

void view_kids_fini(struct view_kids *k)
{
	free(k->v);
	k->v = NULL;
	k->n = k->cap = 0;
}
