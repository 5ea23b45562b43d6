/*
 * view_tree.h - the call tree of a profile: stacks merged from the root,
 * the shape every flame graph and folded-stack view is drawn from.
 *
 * Node 0 is the root (no key); every other node is (parent, key) with key
 * a view_keys id, so two samples whose stacks have the same keys from the
 * root down share nodes. Each node carries two value slots: total (the
 * node and everything below it) and self (samples whose leaf it is). The
 * caller says what goes in each slot: a flame graph puts the chosen sample
 * type in slot 0 and the sample count in slot 1; a diff puts the base
 * profile in slot 0 and the new one in slot 1.
 *
 * Children are linked (first_child, next_sibling) in no particular order;
 * views sort the few they draw.
 *
 * Workload: 100,000 distinct stacks of tens of frames build in well under
 * a second (one hash lookup per frame). Single-threaded.
 */
#ifndef PYPROF_VIEW_TREE_H
#define PYPROF_VIEW_TREE_H

#include <stddef.h>
#include <stdint.h>

struct view_profile;
struct view_filter;

#define VIEW_TREE_ROOT_KEY UINT32_MAX

/* One slot of the child table: the (parent, key) pair inline, so a probe
 * reads one slot and no node (private to view_tree.c). */
struct view_tree_slot {
	uint64_t pk; /* parent << 32 | key; 0 with id 0: empty */
	uint32_t id;
	uint32_t pad_;
};

struct view_node {
	uint32_t parent;       /* root: 0 as well */
	uint32_t key;	       /* root: VIEW_TREE_ROOT_KEY */
	uint32_t first_child;  /* 0 = none (the root is nobody's child) */
	uint32_t next_sibling; /* 0 = none */
	uint32_t depth;	       /* root 0, its children 1 */
	int64_t total[2];
	int64_t self[2];
};

struct view_tree {
	/* read-only for callers */
	size_t n;
	struct view_node *v;
	uint32_t max_depth;
	/* private */
	size_t cap;
	struct view_tree_slot *slots; /* (parent, key) -> node */
	size_t n_slots;		      /* power of two */
};

/* A tree holding only its root. 0 or -ENOMEM. */
int view_tree_init(struct view_tree *t);
void view_tree_fini(struct view_tree *t);

/* Adds one stack of n keys, leaf first, with val[0] and val[1] added to
 * the two slots of every node on the path (total) and of its last node
 * (self). 0 or -ENOMEM (the tree may then hold part of the stack). */
int view_tree_add(struct view_tree *t, const uint32_t *keys, size_t n,
		  const int64_t val[2]);

/* Adds every sample of p that passes f (NULL: all), its frames mapped to
 * keys by key_of_frame (view_keys_map): slot i gets the sample's value of
 * type slot_type[i], or nothing when slot_type[i] is -1. Samples with a
 * negative value in a used slot are skipped (a flame graph cannot draw
 * them). 0 or -ENOMEM. */
int view_tree_add_profile(struct view_tree *t, const struct view_profile *p,
			  const uint32_t *key_of_frame,
			  const struct view_filter *f, const int slot_type[2]);

/*
 * The children of tree nodes in the order a recursive walk visits them
 * (the flame graph's layout, folded stacks): one stack shared by every
 * level. A level remembers n as its base, pushes its node's children,
 * sorts them, walks them, and sets n back to its base.
 */
struct view_kids {
	uint32_t *v;
	size_t n, cap;
};

/* Pushes node id; 0 or -ENOMEM. */
int view_kids_push(struct view_kids *k, uint32_t id);
/* Sorts the ids pushed above base with cmp(a, b, ctx) (qsort_r's). */
void view_kids_sort(struct view_kids *k, size_t base,
		    int (*cmp)(const void *, const void *, void *), void *ctx);
void view_kids_fini(struct view_kids *k);

/* The child of parent with key, or 0 if there is none (a walk of the
 * parent's children). */
uint32_t view_tree_find(const struct view_tree *t, uint32_t parent,
			uint32_t key);

/* Writes into out (n entries) the path from the root's child down to
 * node (keys, root first) and returns its length (the node's depth). */
size_t view_tree_path(const struct view_tree *t, uint32_t node,
		      uint32_t *out, size_t n);

#endif /* PYPROF_VIEW_TREE_H */
