/*
 * view_tree.c - the call tree (see view_tree.h).
 *
 * Nodes live in one growing array; an idhash finds the child (parent,
 * key). A sample is added by walking its stack from the root end, one
 * lookup per frame.
 */
#include "view_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

#define TREE_INIT_CAP 1024

struct probe {
	const struct view_tree *t;
	uint32_t parent, key;
};

static int node_eq(const void *ctx, uint32_t id)
{
	const struct probe *q = ctx;
	const struct view_node *nd = &q->t->v[id];
	return nd->parent == q->parent && nd->key == q->key;
}

static uint64_t node_hash(uint32_t parent, uint32_t key)
{
	return idhash_mix((uint64_t)parent << 32 | key);
}

int view_tree_init(struct view_tree *t)
{
	memset(t, 0, sizeof(*t));
	idhash_init(&t->hash);
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
	idhash_fini(&t->hash);
	memset(t, 0, sizeof(*t));
}

/* The child of parent with key, created if need be; 0 on ENOMEM. */
static uint32_t child(struct view_tree *t, uint32_t parent, uint32_t key)
{
	struct probe q = { t, parent, key };
	uint64_t h = node_hash(parent, key);
	uint32_t id = idhash_find(&t->hash, h, node_eq, &q);
	struct view_node *nd;

	if (id)
		return id;
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		struct view_node *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return 0;
		t->v = v;
		t->cap = cap;
	}
	if (t->n >= UINT32_MAX - 1)
		return 0;
	id = (uint32_t)t->n;
	if (idhash_insert(&t->hash, h, id) < 0)
		return 0;
	t->n++;
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

int view_tree_add_profile(struct view_tree *t, const struct view_profile *p,
			  const uint32_t *key_of_frame,
			  const struct view_filter *f, const int slot_type[2])
{
	uint32_t *keys = NULL;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n_samples && rc == 0; i++) {
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
		if (s->n_frames > cap) {
			uint32_t *nk;
			cap = s->n_frames * 2;
			nk = realloc(keys, cap * sizeof(*keys));
			if (!nk) {
				rc = -ENOMEM;
				break;
			}
			keys = nk;
		}
		for (uint32_t j = 0; j < s->n_frames; j++)
			keys[j] = key_of_frame[s->frames[j]];
		rc = view_tree_add(t, keys, s->n_frames, val);
	}
	free(keys);
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
