/*
 * pprof_builder.c - the pieces of a pprof profile (see pprof_builder.h).
 *
 * The protobuf-c message tree is built in a bump arena and freed in one
 * go; strings are not copied when they already live in the symtab. Every
 * collector-wide id is mapped to a pprof id on first use (dense arrays
 * indexed by the symtab id), so a profile lists only the functions and
 * locations its samples use. Allocation failures set a sticky flag (oom)
 * that pprof.c checks once, before packing.
 *
 * Collector loop thread only.
 */
#include "daemon/pprof_builder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"
#include "pyprof/wire.h"
#include "symbols/opcodes.h"

#define PPROF_ARENA_CHUNK (256u << 10)

/* ---- bump arena ----------------------------------------------------------- */

static void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	size = (size + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < size) {
		size_t cap = size > PPROF_ARENA_CHUNK ? size : PPROF_ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

void pb_arena_free(struct arena *a)
{
	while (a->head) {
		struct arena_chunk *next = a->head->next;
		free(a->head);
		a->head = next;
	}
}

void *pb_balloc(struct builder *b, size_t size)
{
	void *p = arena_alloc(&b->arena, size);
	if (!p)
		b->oom = 1;
	return p;
}

void pb_ptrs_push(struct builder *b, struct ptrs *a, void *p)
{
	if (!p) {
		b->oom = 1;
		return;
	}
	if (grow_array(&a->v, &a->cap, a->n + 1, sizeof(*a->v), 64) < 0) {
		b->oom = 1;
		return;
	}
	a->v[a->n++] = p;
}

/* ---- strings -------------------------------------------------------------- */

struct str_key {
	const struct builder *b;
	const char *s;
};

static int str_eq(const void *ctx, uint32_t id)
{
	const struct str_key *k = ctx;
	return strcmp(k->b->strs.v[id], k->s) == 0;
}

/* The string table index of s (which must stay valid until packing). */
int64_t pb_str_idx(struct builder *b, const char *s)
{
	struct str_key key = { b, s };
	uint64_t h;
	uint32_t id;

	if (s[0] == 0)
		return 0;
	h = idhash_bytes(s, strlen(s));
	id = idhash_find(&b->str_hash, h, str_eq, &key);
	if (id)
		return id;
	if (b->strs.n > UINT32_MAX - 1) {
		b->oom = 1;
		return 0;
	}
	id = (uint32_t)b->strs.n;
	if (idhash_insert(&b->str_hash, h, id) < 0) {
		b->oom = 1;
		return 0;
	}
	pb_ptrs_push(b, &b->strs, (void *)s);
	return id;
}

int64_t pb_sid_idx(struct builder *b, uint32_t sid)
{
	if (sid == 0)
		return 0;
	if (!b->sid_idx[sid])
		b->sid_idx[sid] = (uint32_t)pb_str_idx(b, symtab_string(b->st, sid));
	return b->sid_idx[sid];
}

/* A string formatted into the arena. */
int64_t pb_str_fmt(struct builder *b, const char *fmt, ...)
{
	char *buf = pb_balloc(b, PPROF_MAX_COMMENT);
	va_list ap;
	if (!buf)
		return 0;
	va_start(ap, fmt);
	vsnprintf(buf, PPROF_MAX_COMMENT, fmt, ap);
	va_end(ap);
	return pb_str_idx(b, buf);
}

void pb_add_comment(struct builder *b, int64_t idx)
{
	if (grow_array(&b->comments, &b->comments_cap, b->n_comments + 1,
		       sizeof(*b->comments), 16) < 0) {
		b->oom = 1;
		return;
	}
	b->comments[b->n_comments++] = idx;
}

/* ---- functions and locations ----------------------------------------------- */

static uint64_t new_function(struct builder *b, int64_t name, int64_t sys,
			     int64_t file, int64_t start_line)
{
	Function *f = pb_balloc(b, sizeof(*f));
	if (!f)
		return 0;
	perftools__profiles__function__init(f);
	f->id = b->funcs.n + 1;
	f->name = name;
	f->system_name = sys;
	f->filename = file;
	f->start_line = start_line;
	pb_ptrs_push(b, &b->funcs, f);
	return f->id;
}

/* A location in mapping mapping_id at address (0 for Python frames,
 * which are all in mapping 1), with one line, or none when function_id
 * is 0 (a native address without a name: pprof shows the address and may
 * symbolize it itself). */
static uint64_t new_location_at(struct builder *b, uint64_t function_id,
				int64_t line, uint64_t mapping_id,
				uint64_t address)
{
	Location *l = pb_balloc(b, sizeof(*l));
	Line *ln = pb_balloc(b, sizeof(*ln));
	Line **lines = pb_balloc(b, sizeof(*lines));
	if (!l || !ln || !lines)
		return 0;
	perftools__profiles__location__init(l);
	perftools__profiles__line__init(ln);
	ln->function_id = function_id;
	ln->line = line;
	lines[0] = ln;
	l->id = b->locs.n + 1;
	l->mapping_id = mapping_id;
	l->address = address;
	l->n_line = function_id ? 1 : 0;
	l->line = lines;
	pb_ptrs_push(b, &b->locs, l);
	return l->id;
}

static uint64_t new_location(struct builder *b, uint64_t function_id,
			     int64_t line)
{
	return new_location_at(b, function_id, line, 1, 0);
}

/* The pprof mapping of symtab mapping mid (PYPROF_NATIVE): one per loaded
 * object's executable segment, with its build id, so that pprof can
 * symbolize what we could not. */
static uint64_t mapping_id(struct builder *b, uint32_t mid)
{
	struct symtab_mapping sm;
	if (b->mid_map[mid])
		return b->mid_map[mid];
	Mapping *m = pb_balloc(b, sizeof(*m));
	if (!m)
		return 0;
	symtab_mapping(b->st, mid, &sm);
	perftools__profiles__mapping__init(m);
	m->id = 2 + b->maps.n;
	m->memory_start = sm.start;
	m->memory_limit = sm.limit;
	m->file_offset = sm.offset;
	m->filename = pb_sid_idx(b, sm.file);
	m->build_id = pb_sid_idx(b, sm.build_id);
	/* has_functions is settled once every location is known */
	m->has_functions = (sm.flags & SYMTAB_MAP_FUNCTIONS) != 0;
	m->has_filenames = m->has_line_numbers =
		(sm.flags & SYMTAB_MAP_LINES) != 0;
	pb_ptrs_push(b, &b->maps, m);
	b->mid_map[mid] = (uint32_t)m->id;
	return m->id;
}

/* A native function: its system name is its symbol, as it is. */
static uint64_t native_function_id(struct builder *b, uint32_t fid)
{
	uint32_t name, sys, file;
	int64_t start;
	if (!b->fid_map[fid]) {
		symtab_function(b->st, fid, &name, &sys, &file, &start);
		b->fid_map[fid] = (uint32_t)new_function(
			b, pb_sid_idx(b, name), pb_sid_idx(b, sys), pb_sid_idx(b, file),
			start);
	}
	return b->fid_map[fid];
}

static uint64_t function_id(struct builder *b, uint32_t fid)
{
	uint32_t name, sys, file;
	int64_t start;
	if (!b->fid_map[fid]) {
		symtab_function(b->st, fid, &name, &sys, &file, &start);
		/* System name: "FILE:co_name". It must differ from the name:
		 * where the two are equal, pprof takes the name for a C++ one
		 * and strips anything in <...>, so "<module>", "<lambda>" or
		 * "<listcomp>" would show up empty. */
		int64_t sys_idx = pb_sid_idx(b, sys);
		if (file)
			sys_idx = pb_str_fmt(b, "%s:%s", symtab_string(b->st, file),
					     symtab_string(b->st, sys));
		b->fid_map[fid] = (uint32_t)new_function(
			b, pb_sid_idx(b, name), sys_idx, pb_sid_idx(b, file), start);
	}
	return b->fid_map[fid];
}

uint64_t pb_location_id(struct builder *b, uint32_t lid)
{
	uint32_t fid, mid;
	uint64_t addr;
	int64_t line;
	if (!b->lid_map[lid]) {
		symtab_location(b->st, lid, &fid, &line);
		symtab_location_native(b->st, lid, &mid, &addr);
		if (mid || addr) {
			if (!fid)
				b->mid_unnamed[mid] = 1;
			b->lid_map[lid] = (uint32_t)new_location_at(
				b, fid ? native_function_id(b, fid) : 0, line,
				mid ? mapping_id(b, mid) : 0, addr);
		} else {
			b->lid_map[lid] = (uint32_t)new_location(
				b, function_id(b, fid), line);
		}
	}
	return b->lid_map[lid];
}

/* ---- defence in depth ------------------------------------------------------- */

/* Whether function fid (1.. ) exists with strings that exist. */
static int function_ok(const struct symtab *st, uint32_t fid)
{
	uint32_t name, sys, file, n_str = symtab_n_strings(st);
	int64_t start;
	if (fid == 0 || fid > symtab_n_functions(st))
		return 0;
	symtab_function(st, fid, &name, &sys, &file, &start);
	return name <= n_str && sys <= n_str && file <= n_str;
}

/* Whether location lid is one the builder can write: a Python one (a
 * function and a line) or a native one (an address, in a known mapping
 * or in none, named by a function or not); never neither. */
static int location_ok(const struct symtab *st, uint32_t lid)
{
	uint32_t fid, mid;
	uint64_t addr;
	int64_t line;
	if (lid == 0 || lid > symtab_n_locations(st))
		return 0;
	symtab_location(st, lid, &fid, &line);
	symtab_location_native(st, lid, &mid, &addr);
	if (!mid && !addr)
		return function_ok(st, fid);
	if (mid > symtab_n_mappings(st))
		return 0;
	return fid == 0 || function_ok(st, fid);
}

/* Whether the stack from leaf node nid to the root is whole: every node
 * and location exists, each parent comes before its child (so the walk
 * ends), and the depth is what the symtab says. conn.c and proc.c refuse
 * anything that would fail this; the builder checks again so that a bug
 * there costs one sample, not the collector and every profile it holds. */
int pb_stack_ok(const struct symtab *st, uint32_t nid)
{
	uint32_t n_nodes = symtab_n_nodes(st), depth, k = 0;
	if (nid == 0 || nid > n_nodes)
		return 0;
	depth = symtab_node_depth(st, nid);
	if (depth == 0 || depth > WIRE_MAX_DEPTH)
		return 0;
	while (nid) {
		uint32_t parent, lid;
		symtab_node(st, nid, &parent, &lid);
		if (parent >= nid || !location_ok(st, lid) || ++k > depth)
			return 0;
		nid = parent;
	}
	return k == depth;
}

/* The location of a pseudo-frame such as "[truncated]": a function of
 * that name with no file. */
uint64_t pb_pseudo_location(struct builder *b, const char *name)
{
	int64_t idx = pb_str_idx(b, name);
	for (size_t i = 0; i < b->n_pseudo; i++)
		if (b->pseudo[i].name == idx)
			return b->pseudo[i].loc;
	if (b->n_pseudo == PPROF_MAX_PSEUDO) {
		b->oom = 1; /* cannot happen: the names are a fixed set */
		return 0;
	}
	uint64_t loc = new_location(b, new_function(b, idx, idx, 0, 0), 0);
	b->pseudo[b->n_pseudo].name = idx;
	b->pseudo[b->n_pseudo].loc = loc;
	b->n_pseudo++;
	return loc;
}

/* ---- labels ----------------------------------------------------------------- */

/* A label: key = num, or key = str (a string index); the other 0. */
static Label *new_label(struct builder *b, const char *key, int64_t num,
			int64_t str)
{
	Label *l = pb_balloc(b, sizeof(*l));
	if (!l)
		return NULL;
	perftools__profiles__label__init(l);
	l->key = pb_str_idx(b, key);
	l->num = num;
	l->str = str;
	return l;
}

Label *pb_num_label(struct builder *b, const char *key, int64_t num)
{
	return new_label(b, key, num, 0);
}

Label *pb_str_label(struct builder *b, const char *key, int64_t str)
{
	return new_label(b, key, 0, str);
}

Label *pb_flag_label(struct builder *b, unsigned which)
{
	static const char *const kv[9][2] = {
		{ "cpu_state", "on" },
		{ "cpu_state", "off" },
		{ "gil", "held" },
		{ "gil", "released" },
		{ "native", "yes" },
		{ "native", "no" },
		{ "time", "python" },
		{ "time", "native" },
		{ "time", "system" },
	};
	if (!b->flag_labels[which])
		b->flag_labels[which] =
			pb_str_label(b, kv[which][0], pb_str_idx(b, kv[which][1]));
	return b->flag_labels[which];
}

/* A label's value as a string index. Readers take index 0 for "no string"
 * (Go's profile.go keeps a label only if its str is not 0, and reads
 * one with str 0 as a number), so an empty value, which a program's
 * labels may have (wire.h), points at a second "" in the table. */
static int64_t value_idx(struct builder *b, uint32_t sid)
{
	if (symtab_string(b->st, sid)[0])
		return pb_sid_idx(b, sid);
	if (!b->empty_value && b->strs.n <= UINT32_MAX - 1) {
		b->empty_value = (int64_t)b->strs.n;
		pb_ptrs_push(b, &b->strs, (void *)"");
	}
	return b->empty_value;
}

Label **pb_set_labels(struct builder *b, uint32_t lsid, size_t *n)
{
	const uint32_t *kv;
	Label **ls;

	symtab_labels(b->st, lsid, &kv, n);
	if (b->set_labels[lsid])
		return b->set_labels[lsid];
	ls = pb_balloc(b, *n * sizeof(*ls));
	for (size_t i = 0; ls && i < *n; i++) {
		ls[i] = pb_balloc(b, sizeof(**ls));
		if (!ls[i])
			return NULL;
		perftools__profiles__label__init(ls[i]);
		ls[i]->key = pb_sid_idx(b, kv[2 * i]);
		ls[i]->str = value_idx(b, kv[2 * i + 1]);
	}
	return b->set_labels[lsid] = ls;
}

/* The "opcode" label: the opcode's name in the process's Python version
 * (opcodes.h), e.g. BINARY_OP_ADD_INT on 3.11. */
Label *pb_opcode_label(struct builder *b, const struct proc *p,
		       unsigned op)
{
	const char *ver = symtab_string(b->st, proc_info(p)->pyversion_sid);
	char name[64];
	return pb_str_label(b, "opcode",
			    pb_str_fmt(b, "%s", opcodes_label(ver, op, name, sizeof(name))));
}
