/*
 * symtab.c - collector-wide interning of strings, functions, locations,
 * stack nodes, mappings and label sets (see symtab.h).
 *
 * Each kind is a dense array indexed by id (slot 0 unused) plus an idhash
 * to find an existing equal entry. Strings live back to back in one arena,
 * each NUL-terminated, found by offset; label sets likewise, as runs of
 * (key, value) sids in an array of their own. Called only for definition frames:
 * a busy client defines a few thousand of each and then sends samples that
 * name them, so none of this is on the per-sample path.
 *
 * Compaction re-interns the marked entries into a fresh set of tables (the
 * same code paths as definitions, so the result is exactly what interning
 * only those entries would have built), then swaps them in: memory peaks
 * at old plus live for the moment of the rebuild, and nothing is changed
 * if an allocation fails. It is rare (proc.c decides when) and costs
 * O(entries).
 */
#include "daemon/symtab.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "pyprof/wire.h"

#define SYMTAB_MAX_ID (UINT32_MAX - 1)

struct symtab_func {
	uint32_t name, system_name, filename;
	int64_t start_line;
};

struct symtab_loc {
	uint32_t fid; /* 0: a native address that has no name */
	int64_t line;
	uint32_t mid;  /* mapping of a native location, else 0 */
	uint64_t addr; /* its address in the process, else 0 */
};

struct symtab_map {
	struct symtab_mapping m;
};

struct symtab_node {
	uint32_t parent, lid, depth;
};

/* Compaction state, between symtab_gc_begin and symtab_gc_end: for each
 * kind, map[old id] is 0 while unmarked, 1 once marked, and the new id
 * after the rebuild. */
struct symtab_gc {
	uint32_t *str, *func, *loc, *node, *map, *lab;
	int rebuilt;
};

struct symtab {
	struct symtab_gc *gc; /* NULL outside a compaction */

	/* strings: arena bytes, and offset of string i at str_off[i] */
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t *str_off;
	uint32_t n_str;
	size_t str_cap;
	struct idhash str_hash;

	struct symtab_func *funcs;
	uint32_t n_funcs;
	size_t funcs_cap;
	struct idhash func_hash;

	struct symtab_loc *locs;
	uint32_t n_locs;
	size_t locs_cap;
	struct idhash loc_hash;

	struct symtab_node *nodes;
	uint32_t n_nodes;
	size_t nodes_cap;
	struct idhash node_hash;

	struct symtab_map *maps;
	uint32_t n_maps;
	size_t maps_cap;
	struct idhash map_hash;

	/* label sets: set i is lab_kv[lab_off[i] .. lab_off[i + 1]) */
	uint32_t *lab_kv;
	size_t lab_kv_len, lab_kv_cap;
	uint64_t *lab_off;
	uint32_t n_lab;
	size_t lab_cap;
	struct idhash lab_hash;
};

/* Makes room for index `need` in an array of elem-sized entries. */
static int reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (grow_array(arr, cap, need + 1, elem, 64) < 0)
		return -ENOMEM;
	return 0;
}

/* A new id, n + 1, for a record no equal one of which is stored: room
 * for it in *arr (elem bytes a record) and the id stored under hash h.
 * The caller then fills the record and counts it. 0, -E2BIG or -ENOMEM. */
static int add_id(struct idhash *hs, uint64_t h, void **arr, size_t *cap,
		  size_t elem, uint32_t n, uint32_t *id)
{
	int err;
	if (n >= SYMTAB_MAX_ID)
		return -E2BIG;
	*id = n + 1;
	err = reserve(arr, cap, *id, elem);
	return err ? err : idhash_insert(hs, h, *id);
}

struct symtab *symtab_new(void)
{
	struct symtab *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	idhash_init(&st->str_hash);
	idhash_init(&st->func_hash);
	idhash_init(&st->loc_hash);
	idhash_init(&st->node_hash);
	idhash_init(&st->map_hash);
	idhash_init(&st->lab_hash);
	return st;
}

/* Frees the tables, not the compaction state. */
static void tables_free(struct symtab *st)
{
	free(st->arena);
	free(st->str_off);
	free(st->funcs);
	free(st->locs);
	free(st->nodes);
	free(st->maps);
	free(st->lab_kv);
	free(st->lab_off);
	idhash_fini(&st->str_hash);
	idhash_fini(&st->func_hash);
	idhash_fini(&st->loc_hash);
	idhash_fini(&st->node_hash);
	idhash_fini(&st->map_hash);
	idhash_fini(&st->lab_hash);
}

void symtab_clear(struct symtab *st)
{
	assert(!st->gc);
	tables_free(st);
	memset(st, 0, sizeof(*st));
}

void symtab_free(struct symtab *st)
{
	if (!st)
		return;
	symtab_gc_end(st);
	symtab_clear(st);
	free(st);
}

/* ---- strings ------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence starting at s[0] (len > 0
 * bytes available), or 0 if it is malformed. NUL counts as malformed:
 * protobuf-c would cut the string there. */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF are
	 * excluded by narrowing the range of the second byte. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

static int utf8_clean(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		if (s[i] >= 0x01 && s[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = utf8_seq(s + i, len - i);
		if (n == 0)
			return 0;
		i += n;
	}
	return 1;
}

/* A copy of s with each malformed byte replaced by U+FFFD (EF BF BD), in
 * a new buffer (up to 3 * len bytes) stored in *out, length in *out_len. */
static int utf8_repair(const unsigned char *s, size_t len, char **out,
		       size_t *out_len)
{
	char *buf = malloc(3 * len + 1);
	size_t o = 0;
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(s + i, len - i);
		if (n == 0) {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(buf + o, s + i, n);
			o += n;
			i += n;
		}
	}
	*out = buf;
	*out_len = o;
	return 0;
}

struct str_key {
	const struct symtab *st;
	const char *s;
	size_t len;
};

static int str_eq(const void *ctx, uint32_t id)
{
	const struct str_key *k = ctx;
	const struct symtab *st = k->st;
	size_t len = st->str_off[id + 1] - st->str_off[id] - 1;
	return len == k->len && memcmp(st->arena + st->str_off[id], k->s,
				       len) == 0;
}

static int intern_clean(struct symtab *st, const char *s, size_t len,
			uint32_t *sid)
{
	struct str_key key = { st, s, len };
	uint64_t h = idhash_bytes(s, len);
	uint32_t id;
	int err;

	id = idhash_find(&st->str_hash, h, str_eq, &key);
	if (id) {
		*sid = id;
		return 0;
	}
	if (st->n_str >= SYMTAB_MAX_ID)
		return -E2BIG;
	id = st->n_str + 1;
	/* str_off[id + 1] marks the end of string id. */
	err = reserve((void **)&st->str_off, &st->str_cap, (size_t)id + 1,
		      sizeof(*st->str_off));
	if (err)
		return err;
	if (grow_array(&st->arena, &st->arena_cap, st->arena_len + len + 1, 1,
		       4096) < 0)
		return -ENOMEM;
	if ((err = idhash_insert(&st->str_hash, h, id)) < 0)
		return err;
	if (id == 1)
		st->str_off[1] = st->arena_len;
	memcpy(st->arena + st->arena_len, s, len);
	st->arena[st->arena_len + len] = 0;
	st->arena_len += len + 1;
	st->str_off[id + 1] = st->arena_len;
	st->n_str = id;
	*sid = id;
	return 0;
}

int symtab_intern_string(struct symtab *st, const void *s, size_t len,
			 uint32_t *sid)
{
	char *fixed = NULL;
	size_t fixed_len;
	int err;

	if (len == 0)
		s = ""; /* an absent field arrives as (NULL, 0) */
	if (utf8_clean(s, len))
		return intern_clean(st, s, len, sid);
	err = utf8_repair(s, len, &fixed, &fixed_len);
	if (err)
		goto out;
	err = intern_clean(st, fixed, fixed_len, sid);
out:
	free(fixed);
	return err;
}

const char *symtab_string(const struct symtab *st, uint32_t sid)
{
	if (sid == 0)
		return "";
	return st->arena + st->str_off[sid];
}

/* ---- functions, locations, nodes ---------------------------------------- */

struct func_key {
	const struct symtab *st;
	struct symtab_func f;
};

static int func_eq(const void *ctx, uint32_t id)
{
	const struct func_key *k = ctx;
	const struct symtab_func *f = &k->st->funcs[id];
	return f->name == k->f.name && f->system_name == k->f.system_name &&
	       f->filename == k->f.filename &&
	       f->start_line == k->f.start_line;
}

int symtab_intern_function(struct symtab *st, uint32_t name_sid,
			   uint32_t system_name_sid, uint32_t filename_sid,
			   int64_t start_line, uint32_t *fid)
{
	struct func_key key = {
		st, { name_sid, system_name_sid, filename_sid, start_line }
	};
	uint64_t h = idhash_combine(idhash_combine(idhash_mix(name_sid),
						   system_name_sid),
				    idhash_combine(filename_sid,
						   (uint64_t)start_line));
	uint32_t id;
	int err;

	id = idhash_find(&st->func_hash, h, func_eq, &key);
	if (!id) {
		err = add_id(&st->func_hash, h, (void **)&st->funcs,
			     &st->funcs_cap, sizeof(*st->funcs), st->n_funcs,
			     &id);
		if (err)
			return err;
		st->funcs[id] = key.f;
		st->n_funcs = id;
	}
	*fid = id;
	return 0;
}

void symtab_function(const struct symtab *st, uint32_t fid,
		     uint32_t *name_sid, uint32_t *system_name_sid,
		     uint32_t *filename_sid, int64_t *start_line)
{
	const struct symtab_func *f = &st->funcs[fid];
	*name_sid = f->name;
	*system_name_sid = f->system_name;
	*filename_sid = f->filename;
	*start_line = f->start_line;
}

struct loc_key {
	const struct symtab *st;
	struct symtab_loc l;
};

static int loc_eq(const void *ctx, uint32_t id)
{
	const struct loc_key *k = ctx;
	const struct symtab_loc *l = &k->st->locs[id];
	return l->fid == k->l.fid && l->line == k->l.line &&
	       l->mid == k->l.mid && l->addr == k->l.addr;
}

int symtab_intern_location(struct symtab *st, uint32_t fid, int64_t line,
			   uint32_t *lid)
{
	return symtab_intern_native_location(st, fid, line, 0, 0, lid);
}

int symtab_intern_native_location(struct symtab *st, uint32_t fid,
				  int64_t line, uint32_t mid, uint64_t addr,
				  uint32_t *lid)
{
	struct loc_key key = { st, { fid, line, mid, addr } };
	uint64_t h = idhash_combine(idhash_mix(fid), (uint64_t)line);
	if (mid)
		h = idhash_combine(idhash_combine(h, mid), addr);
	uint32_t id;
	int err;

	id = idhash_find(&st->loc_hash, h, loc_eq, &key);
	if (!id) {
		err = add_id(&st->loc_hash, h, (void **)&st->locs,
			     &st->locs_cap, sizeof(*st->locs), st->n_locs,
			     &id);
		if (err)
			return err;
		st->locs[id] = key.l;
		st->n_locs = id;
	}
	*lid = id;
	return 0;
}

void symtab_location(const struct symtab *st, uint32_t lid, uint32_t *fid,
		     int64_t *line)
{
	*fid = st->locs[lid].fid;
	*line = st->locs[lid].line;
}

void symtab_location_native(const struct symtab *st, uint32_t lid,
			    uint32_t *mid, uint64_t *addr)
{
	*mid = st->locs[lid].mid;
	*addr = st->locs[lid].addr;
}

/* ---- mappings ------------------------------------------------------------ */

struct map_key {
	const struct symtab *st;
	const struct symtab_mapping *m;
};

static int map_eq(const void *ctx, uint32_t id)
{
	const struct map_key *k = ctx;
	const struct symtab_mapping *m = &k->st->maps[id].m;
	return m->start == k->m->start && m->limit == k->m->limit &&
	       m->offset == k->m->offset && m->file == k->m->file &&
	       m->build_id == k->m->build_id;
}

int symtab_intern_mapping(struct symtab *st, const struct symtab_mapping *m,
			  uint32_t *mid)
{
	struct map_key key = { st, m };
	uint64_t h = idhash_combine(
		idhash_combine(idhash_mix(m->start), m->limit),
		idhash_combine(idhash_combine(m->offset, m->file),
			       m->build_id));
	uint32_t id;
	int err;

	id = idhash_find(&st->map_hash, h, map_eq, &key);
	if (!id) {
		err = add_id(&st->map_hash, h, (void **)&st->maps,
			     &st->maps_cap, sizeof(*st->maps), st->n_maps,
			     &id);
		if (err)
			return err;
		st->maps[id].m = *m;
		st->maps[id].m.flags = 0;
		st->n_maps = id;
	}
	st->maps[id].m.flags |= m->flags;
	*mid = id;
	return 0;
}

void symtab_mapping(const struct symtab *st, uint32_t mid,
		    struct symtab_mapping *m)
{
	*m = st->maps[mid].m;
}

uint32_t symtab_n_mappings(const struct symtab *st)
{
	return st->n_maps;
}

/* ---- label sets ----------------------------------------------------------- */

struct lab_key {
	const struct symtab *st;
	const uint32_t *kv; /* sorted */
	size_t n;	    /* pairs */
};

static int lab_eq(const void *ctx, uint32_t id)
{
	const struct lab_key *k = ctx;
	const struct symtab *st = k->st;
	size_t len = st->lab_off[id + 1] - st->lab_off[id];
	return len == 2 * k->n &&
	       !memcmp(st->lab_kv + st->lab_off[id], k->kv,
		       len * sizeof(*k->kv));
}

static int pair_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int symtab_intern_labels(struct symtab *st, const uint32_t *kv, size_t n,
			 uint32_t *lsid)
{
	uint32_t sorted[2 * WIRE_MAX_LABELS], id;
	struct lab_key key = { st, sorted, n };
	uint64_t h = idhash_mix(n);
	int err;

	assert(n >= 1 && n <= WIRE_MAX_LABELS);
	/* Keys are distinct, so sorting by key gives one order per set. */
	memcpy(sorted, kv, 2 * n * sizeof(*kv));
	qsort(sorted, n, 2 * sizeof(*sorted), pair_cmp);
	for (size_t i = 0; i < 2 * n; i++)
		h = idhash_combine(h, sorted[i]);
	id = idhash_find(&st->lab_hash, h, lab_eq, &key);
	if (id) {
		*lsid = id;
		return 0;
	}
	if (st->n_lab >= SYMTAB_MAX_ID)
		return -E2BIG;
	id = st->n_lab + 1;
	if ((err = reserve((void **)&st->lab_off, &st->lab_cap, (size_t)id + 1,
			   sizeof(*st->lab_off))) < 0)
		return err;
	if (grow_array(&st->lab_kv, &st->lab_kv_cap, st->lab_kv_len + 2 * n,
		       sizeof(*st->lab_kv), 256) < 0)
		return -ENOMEM;
	if ((err = idhash_insert(&st->lab_hash, h, id)) < 0)
		return err;
	if (id == 1)
		st->lab_off[1] = st->lab_kv_len;
	memcpy(st->lab_kv + st->lab_kv_len, sorted, 2 * n * sizeof(*kv));
	st->lab_kv_len += 2 * n;
	st->lab_off[id + 1] = st->lab_kv_len;
	st->n_lab = id;
	*lsid = id;
	return 0;
}

void symtab_labels(const struct symtab *st, uint32_t lsid,
		   const uint32_t **kv, size_t *n)
{
	assert(lsid >= 1 && lsid <= st->n_lab);
	*kv = st->lab_kv + st->lab_off[lsid];
	*n = (size_t)(st->lab_off[lsid + 1] - st->lab_off[lsid]) / 2;
}

uint32_t symtab_n_labels(const struct symtab *st)
{
	return st->n_lab;
}

struct node_key {
	const struct symtab *st;
	uint32_t parent, lid;
};

static int node_eq(const void *ctx, uint32_t id)
{
	const struct node_key *k = ctx;
	const struct symtab_node *n = &k->st->nodes[id];
	return n->parent == k->parent && n->lid == k->lid;
}

int symtab_intern_node(struct symtab *st, uint32_t parent, uint32_t lid,
		       uint32_t *nid)
{
	struct node_key key = { st, parent, lid };
	uint64_t h = idhash_combine(idhash_mix(parent), lid);
	uint32_t id, depth;
	int err;

	id = idhash_find(&st->node_hash, h, node_eq, &key);
	if (!id) {
		depth = parent ? st->nodes[parent].depth + 1 : 1;
		if (depth > WIRE_MAX_DEPTH)
			return -ELOOP;
		err = add_id(&st->node_hash, h, (void **)&st->nodes,
			     &st->nodes_cap, sizeof(*st->nodes), st->n_nodes,
			     &id);
		if (err)
			return err;
		st->nodes[id] = (struct symtab_node){ parent, lid, depth };
		st->n_nodes = id;
	}
	*nid = id;
	return 0;
}

void symtab_node(const struct symtab *st, uint32_t nid, uint32_t *parent,
		 uint32_t *lid)
{
	*parent = st->nodes[nid].parent;
	*lid = st->nodes[nid].lid;
}

uint32_t symtab_node_depth(const struct symtab *st, uint32_t nid)
{
	return nid ? st->nodes[nid].depth : 0;
}

uint32_t symtab_n_strings(const struct symtab *st)
{
	return st->n_str;
}

uint32_t symtab_n_functions(const struct symtab *st)
{
	return st->n_funcs;
}

uint32_t symtab_n_locations(const struct symtab *st)
{
	return st->n_locs;
}

uint32_t symtab_n_nodes(const struct symtab *st)
{
	return st->n_nodes;
}

uint64_t symtab_n_entries(const struct symtab *st)
{
	return (uint64_t)st->n_str + st->n_funcs + st->n_locs + st->n_nodes +
	       st->n_maps + st->n_lab;
}

size_t symtab_bytes(const struct symtab *st)
{
	return st->arena_cap + st->str_cap * sizeof(*st->str_off) +
	       st->funcs_cap * sizeof(*st->funcs) +
	       st->locs_cap * sizeof(*st->locs) +
	       st->nodes_cap * sizeof(*st->nodes) +
	       st->maps_cap * sizeof(*st->maps) +
	       st->lab_kv_cap * sizeof(*st->lab_kv) +
	       st->lab_cap * sizeof(*st->lab_off) + idhash_mem(&st->lab_hash) +
	       idhash_mem(&st->str_hash) + idhash_mem(&st->func_hash) +
	       idhash_mem(&st->loc_hash) + idhash_mem(&st->node_hash) +
	       idhash_mem(&st->map_hash);
}

/* ---- compaction ------------------------------------------------------------ */

int symtab_gc_begin(struct symtab *st)
{
	struct symtab_gc *gc = calloc(1, sizeof(*gc));
	assert(!st->gc);
	if (!gc)
		return -ENOMEM;
	gc->str = calloc((size_t)st->n_str + 1, sizeof(uint32_t));
	gc->func = calloc((size_t)st->n_funcs + 1, sizeof(uint32_t));
	gc->loc = calloc((size_t)st->n_locs + 1, sizeof(uint32_t));
	gc->node = calloc((size_t)st->n_nodes + 1, sizeof(uint32_t));
	gc->map = calloc((size_t)st->n_maps + 1, sizeof(uint32_t));
	gc->lab = calloc((size_t)st->n_lab + 1, sizeof(uint32_t));
	st->gc = gc;
	if (!gc->str || !gc->func || !gc->loc || !gc->node || !gc->map ||
	    !gc->lab) {
		symtab_gc_end(st);
		return -ENOMEM;
	}
	return 0;
}

void symtab_gc_mark_string(struct symtab *st, uint32_t sid)
{
	assert(st->gc && !st->gc->rebuilt && sid <= st->n_str);
	st->gc->str[sid] = sid != 0;
}

void symtab_gc_mark_function(struct symtab *st, uint32_t fid)
{
	struct symtab_gc *gc = st->gc;
	assert(gc && !gc->rebuilt && fid <= st->n_funcs);
	if (fid == 0 || gc->func[fid])
		return;
	gc->func[fid] = 1;
	symtab_gc_mark_string(st, st->funcs[fid].name);
	symtab_gc_mark_string(st, st->funcs[fid].system_name);
	symtab_gc_mark_string(st, st->funcs[fid].filename);
}

void symtab_gc_mark_location(struct symtab *st, uint32_t lid)
{
	struct symtab_gc *gc = st->gc;
	assert(gc && !gc->rebuilt && lid <= st->n_locs);
	if (lid == 0 || gc->loc[lid])
		return;
	gc->loc[lid] = 1;
	symtab_gc_mark_function(st, st->locs[lid].fid);
	symtab_gc_mark_mapping(st, st->locs[lid].mid);
}

void symtab_gc_mark_mapping(struct symtab *st, uint32_t mid)
{
	struct symtab_gc *gc = st->gc;
	assert(gc && !gc->rebuilt && mid <= st->n_maps);
	if (mid == 0 || gc->map[mid])
		return;
	gc->map[mid] = 1;
	symtab_gc_mark_string(st, st->maps[mid].m.file);
	symtab_gc_mark_string(st, st->maps[mid].m.build_id);
}

void symtab_gc_mark_labels(struct symtab *st, uint32_t lsid)
{
	struct symtab_gc *gc = st->gc;
	assert(gc && !gc->rebuilt && lsid <= st->n_lab);
	if (lsid == 0 || gc->lab[lsid])
		return;
	gc->lab[lsid] = 1;
	for (uint64_t i = st->lab_off[lsid]; i < st->lab_off[lsid + 1]; i++)
		symtab_gc_mark_string(st, st->lab_kv[i]);
}

void symtab_gc_mark_node(struct symtab *st, uint32_t nid)
{
	struct symtab_gc *gc = st->gc;
	assert(gc && !gc->rebuilt && nid <= st->n_nodes);
	/* Up to the root or to a node already marked (whose ancestors
	 * are then marked too): each node is visited once. */
	while (nid != 0 && !gc->node[nid]) {
		gc->node[nid] = 1;
		symtab_gc_mark_location(st, st->nodes[nid].lid);
		nid = st->nodes[nid].parent;
	}
}

/* Interns the marked entries of st into fresh tables in nst, in id order,
 * recording each new id in st->gc. Interning in order gives dense ids
 * that keep the old order (no two marked entries are equal, so each takes
 * the next id). */
static int rebuild_into(struct symtab *nst, const struct symtab *st)
{
	struct symtab_gc *gc = st->gc;
	int err = 0;

	for (uint32_t i = 1; i <= st->n_str && !err; i++) {
		if (!gc->str[i])
			continue;
		size_t len = st->str_off[i + 1] - st->str_off[i] - 1;
		/* Already clean UTF-8: straight to intern_clean. */
		err = intern_clean(nst, st->arena + st->str_off[i], len,
				   &gc->str[i]);
	}
	for (uint32_t i = 1; i <= st->n_funcs && !err; i++) {
		const struct symtab_func *f = &st->funcs[i];
		if (!gc->func[i])
			continue;
		err = symtab_intern_function(nst, gc->str[f->name],
					     gc->str[f->system_name],
					     gc->str[f->filename],
					     f->start_line, &gc->func[i]);
	}
	for (uint32_t i = 1; i <= st->n_maps && !err; i++) {
		struct symtab_mapping m = st->maps[i].m;
		if (!gc->map[i])
			continue;
		m.file = gc->str[m.file];
		m.build_id = gc->str[m.build_id];
		err = symtab_intern_mapping(nst, &m, &gc->map[i]);
	}
	for (uint32_t i = 1; i <= st->n_locs && !err; i++) {
		const struct symtab_loc *l = &st->locs[i];
		if (!gc->loc[i])
			continue;
		err = symtab_intern_native_location(
			nst, l->fid ? gc->func[l->fid] : 0, l->line,
			l->mid ? gc->map[l->mid] : 0, l->addr, &gc->loc[i]);
	}
	for (uint32_t i = 1; i <= st->n_lab && !err; i++) {
		uint32_t kv[2 * WIRE_MAX_LABELS];
		const uint32_t *old;
		size_t n;
		if (!gc->lab[i])
			continue;
		symtab_labels(st, i, &old, &n);
		for (size_t k = 0; k < 2 * n; k++)
			kv[k] = gc->str[old[k]];
		err = symtab_intern_labels(nst, kv, n, &gc->lab[i]);
	}
	for (uint32_t i = 1; i <= st->n_nodes && !err; i++) {
		const struct symtab_node *n = &st->nodes[i];
		if (!gc->node[i])
			continue;
		/* The parent was marked with its child and has a smaller
		 * id, so it already has its new id. */
		err = symtab_intern_node(nst, n->parent ? gc->node[n->parent] : 0,
					 gc->loc[n->lid], &gc->node[i]);
	}
	return err;
}

int symtab_gc_rebuild(struct symtab *st)
{
	struct symtab_gc *gc = st->gc;
	struct symtab nst;
	int err;

	assert(gc && !gc->rebuilt);
	memset(&nst, 0, sizeof(nst));
	idhash_init(&nst.str_hash);
	idhash_init(&nst.func_hash);
	idhash_init(&nst.loc_hash);
	idhash_init(&nst.node_hash);
	idhash_init(&nst.map_hash);
	idhash_init(&nst.lab_hash);
	err = rebuild_into(&nst, st);
	if (err) {
		/* The marks were overwritten with partial new ids: useless
		 * now, and the old tables are untouched. */
		tables_free(&nst);
		return err;
	}
	tables_free(st);
	nst.gc = gc;
	*st = nst;
	gc->rebuilt = 1;
	return 0;
}

uint32_t symtab_gc_new_string(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->str[old]));
	return old ? st->gc->str[old] : 0;
}

uint32_t symtab_gc_new_function(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->func[old]));
	return old ? st->gc->func[old] : 0;
}

uint32_t symtab_gc_new_location(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->loc[old]));
	return old ? st->gc->loc[old] : 0;
}

uint32_t symtab_gc_new_mapping(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->map[old]));
	return old ? st->gc->map[old] : 0;
}

uint32_t symtab_gc_new_labels(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->lab[old]));
	return old ? st->gc->lab[old] : 0;
}

uint32_t symtab_gc_new_node(const struct symtab *st, uint32_t old)
{
	assert(st->gc && st->gc->rebuilt && (old == 0 || st->gc->node[old]));
	return old ? st->gc->node[old] : 0;
}

void symtab_gc_end(struct symtab *st)
{
	struct symtab_gc *gc = st->gc;
	if (!gc)
		return;
	free(gc->str);
	free(gc->func);
	free(gc->loc);
	free(gc->node);
	free(gc->map);
	free(gc->lab);
	free(gc);
	st->gc = NULL;
}
