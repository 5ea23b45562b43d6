/*
 * view_folded.c - folded ("collapsed") stacks, the text format of
 * FlameGraph and inferno: one line per distinct stack, frames from the
 * root down joined by ';', a space, and the stack's value.
 *
 *     main (app.py);work (app.py);leaf (app.py) 42
 *
 * A frame is "name (file)" (by line: "name (file:LINE)"), or just "name"
 * for frames without a file such as "[lost: ring full]": Python names
 * alone are ambiguous ("<module>" is the top of every module). The value
 * is the samples/count type when the profile has one (what FlameGraph
 * calls samples), else the default type, unless --sample-type says.
 * Lines come out in the order of a walk of the call tree with siblings
 * sorted by name, so equal prefixes are adjacent and the output is stable.
 *
 * With split, a sample whose time label is native or system has one more
 * frame under its leaf, "[native]" or "[system]": the format has nothing
 * but frames to carry it. The two are keys past the profile's own
 * (keys.n and keys.n + 1), ranked after every name.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "views/view_tree.h"

struct folder {
	FILE *out;
	const struct view_tree *t;
	const struct view_keys *keys;
	const uint32_t *rank;
	char *path;
	size_t len, cap;
	struct view_kids kids; /* children being walked */
	int oom;
};

static int cmp_kid(const void *a, const void *b, void *ctx)
{
	const struct folder *f = ctx;
	uint32_t ra = f->rank[f->t->v[*(const uint32_t *)a].key];
	uint32_t rb = f->rank[f->t->v[*(const uint32_t *)b].key];
	return ra < rb ? -1 : ra > rb;
}

static void put(struct folder *f, const char *s, size_t n)
{
	if (grow_array(&f->path, &f->cap, f->len + n + 1, 1, 256) < 0) {
		f->oom = 1;
		return;
	}
	memcpy(f->path + f->len, s, n);
	f->len += n;
	f->path[f->len] = 0;
}

/* Appends text with ';' -> ':' and control characters -> ' '. */
static void put_clean(struct folder *f, const char *s)
{
	size_t start = f->len;
	put(f, s, strlen(s));
	if (f->oom)
		return;
	for (size_t i = start; i < f->len; i++) {
		if (f->path[i] == ';')
			f->path[i] = ':';
		else if ((unsigned char)f->path[i] < 0x20 ||
			 (unsigned char)f->path[i] == 0x7f)
			f->path[i] = ' ';
	}
}

static void put_frame(struct folder *f, uint32_t key)
{
	const struct view_key *k;
	char line[32];

	if (key >= f->keys->n) {
		put_clean(f, key == f->keys->n ? "[native]" : "[system]");
		return;
	}
	k = &f->keys->v[key];
	put_clean(f, k->name);
	if (!k->file[0])
		return;
	put(f, " (", 2);
	put_clean(f, k->file);
	if (f->keys->by == VIEW_BY_LINE) {
		int n = snprintf(line, sizeof(line), ":%" PRId64, k->line);
		put(f, line, (size_t)n);
	}
	put(f, ")", 1);
}

static void walk(struct folder *f, uint32_t node)
{
	const struct view_node *nd = &f->t->v[node];
	size_t len = f->len, base = f->kids.n;

	if (node) {
		if (nd->depth > 1)
			put(f, ";", 1);
		put_frame(f, nd->key);
		if (nd->self[0] > 0 && !f->oom)
			fprintf(f->out, "%s %" PRId64 "\n", f->path,
				nd->self[0]);
	}
	for (uint32_t c = nd->first_child; c && !f->oom;
	     c = f->t->v[c].next_sibling) {
		if (view_kids_push(&f->kids, c) < 0) {
			f->oom = 1;
			break;
		}
	}
	view_kids_sort(&f->kids, base, cmp_kid, f);
	for (size_t i = base; i < f->kids.n && !f->oom; i++)
		walk(f, f->kids.v[i]);
	f->kids.n = base;
	f->len = len;
	if (f->path)
		f->path[len] = 0;
}

/* The tree with split's leaves: each sample added on its own, its time
 * label's key under its leaf (see the top). */
static int add_split(struct view_tree *t, const struct view_profile *p,
		     const struct view_keys *keys, const uint32_t *kmap,
		     const struct view_filter *filter, size_t type)
{
	uint32_t *stack = NULL;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; i < p->n_samples && rc == 0; i++) {
		const struct view_sample *s = &p->samples[i];
		int64_t val[2] = { s->values[type], 0 };
		char buf[16];
		const char *v;
		size_t n = 0;
		/* as view_tree_add_profile: nothing to draw, or not shown */
		if (val[0] <= 0 || (filter && !view_sample_matches(s, filter)))
			continue;
		if (grow_array(&stack, &cap, s->n_frames + 1, sizeof(*stack),
			       64) < 0) {
			rc = -ENOMEM;
			break;
		}
		v = view_sample_label(s, "time", buf, sizeof(buf));
		if (v && !strcmp(v, "native"))
			stack[n++] = (uint32_t)keys->n;
		else if (v && !strcmp(v, "system"))
			stack[n++] = (uint32_t)keys->n + 1;
		for (uint32_t j = 0; j < s->n_frames; j++)
			stack[n++] = kmap[s->frames[j]];
		rc = view_tree_add(t, stack, n, val);
	}
	free(stack);
	return rc;
}

int view_folded(FILE *out, const struct view_profile *p,
		const char *sample_type, const struct view_filter *filter,
		enum view_by by, int split, char *err)
{
	struct view_keys keys;
	struct view_tree tree;
	struct folder f = { 0 };
	uint32_t *kmap = NULL, *rank = NULL;
	size_t type;
	int slots[2] = { -1, -1 }, rc;

	err[0] = 0;
	if (sample_type && sample_type[0]) {
		if (view_need_type(p, sample_type, &type, err) < 0)
			return -ENOENT;
	} else if (view_count_type(p) >= 0) {
		type = (size_t)view_count_type(p);
	} else {
		type = p->default_type;
	}
	slots[0] = (int)type;
	view_keys_init(&keys, by);
	rc = view_tree_init(&tree);
	if (rc == 0)
		rc = view_keys_map(&keys, p, &kmap);
	if (rc == 0 && split)
		rc = add_split(&tree, p, &keys, kmap, filter, type);
	else if (rc == 0)
		rc = view_tree_add_profile(&tree, p, kmap, filter, slots);
	if (rc == 0 && !(rank = view_keys_rank(&keys)))
		rc = -ENOMEM;
	if (rc == 0 && split) {
		/* the split's two keys, after every name */
		uint32_t *r = realloc(rank, (keys.n + 2) * sizeof(*rank));
		if (!r)
			rc = -ENOMEM;
		else {
			rank = r;
			rank[keys.n] = (uint32_t)keys.n;
			rank[keys.n + 1] = (uint32_t)keys.n + 1;
		}
	}
	if (rc < 0)
		goto out;
	f.out = out;
	f.t = &tree;
	f.keys = &keys;
	f.rank = rank;
	walk(&f, 0);
	rc = f.oom ? -ENOMEM : ferror(out) ? -EIO
					   : 0;
out:
	view_errno_text(rc, err);
	free(f.path);
	view_kids_fini(&f.kids);
	free(rank);
	free(kmap);
	view_tree_fini(&tree);
	view_keys_fini(&keys);
	return rc;
}
