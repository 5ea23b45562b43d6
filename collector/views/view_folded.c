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

static void put_frame(struct folder *f, const struct view_key *k)
{
	char line[32];

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
		put_frame(f, &f->keys->v[nd->key]);
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

int view_folded(FILE *out, const struct view_profile *p,
		const char *sample_type, const struct view_filter *filter,
		enum view_by by, char *err)
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
	if (rc == 0)
		rc = view_tree_add_profile(&tree, p, kmap, filter, slots);
	if (rc == 0 && !(rank = view_keys_rank(&keys)))
		rc = -ENOMEM;
	if (rc < 0)
		goto out;
	f.out = out;
	f.t = &tree;
	f.keys = &keys;
	f.rank = rank;
	walk(&f, 0);
	rc = f.oom ? -ENOMEM : ferror(out) ? -EIO : 0;
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
