/*
 * intern.c - see intern.h. Open addressing with linear probing, load
 * factor at most 1/2; keys are two 64-bit words hashed together. Agent
 * thread only.
 */
#include "intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x7F4A7C15ull) *
							 0xC2B2AE3D27D4EB4Full;
	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ull;
	return h ^ (h >> 32);
}

uint32_t imap_get(const struct imap *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return 0;
	uint32_t i = (uint32_t)mix(a, b) & (m->cap - 1);
	while (m->vals[i]) {
		if (m->keys[2 * i] == a && m->keys[2 * i + 1] == b)
			return m->vals[i];
		i = (i + 1) & (m->cap - 1);
	}
	return 0;
}

static int grow(struct imap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *keys = calloc((size_t)cap * 2, sizeof *keys);
	uint32_t *vals = calloc(cap, sizeof *vals);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < m->cap; j++) {
		if (!m->vals[j])
			continue;
		uint64_t a = m->keys[2 * j], b = m->keys[2 * j + 1];
		uint32_t i = (uint32_t)mix(a, b) & (cap - 1);
		while (vals[i])
			i = (i + 1) & (cap - 1);
		keys[2 * i] = a;
		keys[2 * i + 1] = b;
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int imap_put(struct imap *m, uint64_t a, uint64_t b, uint32_t v)
{
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	uint32_t i = (uint32_t)mix(a, b) & (m->cap - 1);
	while (m->vals[i]) {
		if (m->keys[2 * i] == a && m->keys[2 * i + 1] == b) {
			m->vals[i] = v;
			return 0;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->keys[2 * i] = a;
	m->keys[2 * i + 1] = b;
	m->vals[i] = v;
	m->n++;
	return 0;
}

void imap_free(struct imap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

/* Makes room for one more element in a dense array. */
static int reserve(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n >= INTERN_MAX_IDS)
		return -ENOSPC;
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 256;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

/*
 * A new id for the key (a, b) of m: makes room for one more element of a
 * dense array (arr, cap, n, elem: ARRAY below), maps the key to *id (the
 * element's index + 1) and returns the element, for the caller to fill.
 * NULL when out of memory or ids (nothing added).
 */
static void *new_id(struct imap *m, uint64_t a, uint64_t b, void **arr,
		    uint32_t *cap, uint32_t *n, size_t elem, uint32_t *id)
{
	if (reserve(arr, cap, *n, elem) < 0)
		return NULL;
	*id = *n + 1;
	if (imap_put(m, a, b, *id) < 0)
		return NULL;
	return (char *)*arr + (size_t)(*n)++ * elem;
}

/*
 * The id of the key (a, b) of m, added with new_id if it is not there.
 * Returns the new element for the caller to fill, or NULL when the key
 * was there (*id its id) or could not be added (*id 0).
 */
static void *find_or_new(struct imap *m, uint64_t a, uint64_t b, void **arr,
			 uint32_t *cap, uint32_t *n, size_t elem, uint32_t *id)
{
	if ((*id = imap_get(m, a, b)))
		return NULL;
	void *slot = new_id(m, a, b, arr, cap, n, elem, id);
	if (!slot)
		*id = 0;
	return slot;
}

/* new_id's array arguments for the array in->name (with its cap_name and
 * n_name). */
#define ARRAY(in, name)                                           \
	(void **)&(in)->name, &(in)->cap_##name, &(in)->n_##name, \
		sizeof *(in)->name

static uint64_t str_hash(const char *s, size_t len, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint32_t intern_str(struct intern *in, const char *s, size_t len)
{
	/* Key: two independent 64-bit hashes of the bytes. A byte compare
	 * confirms a hit, so a (128-bit) collision can never merge two
	 * strings; it only makes the newer one fail to intern. */
	uint64_t a = str_hash(s, len, 0) ^ len;
	uint64_t b = str_hash(s, len, 0x5bd1e995);
	uint32_t id = imap_get(&in->str_map, a, b);
	if (id) {
		struct istr *e = &in->strs[id - 1];
		return e->len == len && !memcmp(e->s, s, len) ? id : 0;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return 0;
	memcpy(copy, s, len);
	copy[len] = 0;
	struct istr *e = new_id(&in->str_map, a, b, ARRAY(in, strs), &id);
	if (!e) {
		free(copy);
		return 0;
	}
	*e = (struct istr){ copy, (uint32_t)len };
	return id;
}

uint32_t intern_func(struct intern *in, uint32_t name, uint32_t system_name,
		     uint32_t filename, int32_t start_line)
{
	uint64_t a = (uint64_t)name << 32 | system_name;
	uint64_t b = (uint64_t)filename << 32 | (uint32_t)start_line;
	uint32_t id;
	struct ifunc *f = find_or_new(&in->func_map, a, b, ARRAY(in, funcs), &id);
	if (f)
		*f = (struct ifunc){ name, system_name, filename, start_line };
	return id;
}

uint32_t intern_loc(struct intern *in, uint32_t func, int32_t line)
{
	uint32_t id;
	struct iloc *l = find_or_new(&in->loc_map, func, (uint32_t)line,
				     ARRAY(in, locs), &id);
	if (l)
		*l = (struct iloc){ func, line, 0, 0, 0 };
	return id;
}

/* Native locations key the same map with the top bit of the first word
 * set: a function id never has it. */
uint32_t intern_addr(struct intern *in, uint32_t mapping, uint64_t addr)
{
	uint64_t a = 1ull << 63 | mapping;
	uint32_t id;
	struct iloc *l = find_or_new(&in->loc_map, a, addr, ARRAY(in, locs), &id);
	if (l)
		*l = (struct iloc){ 0, 0, mapping, 1, addr };
	return id;
}

uint32_t intern_mapping(struct intern *in, uint64_t start, uint64_t limit,
			uint64_t offset, uint32_t file, const uint8_t *build_id,
			size_t build_id_len)
{
	uint64_t b = limit * 0x9E3779B97F4A7C15ull ^ offset;
	if (build_id_len > sizeof in->maps[0].build_id)
		build_id_len = sizeof in->maps[0].build_id;
	uint32_t id = imap_get(&in->map_map, start, b);
	if (id) {
		const struct imapping *m = &in->maps[id - 1];
		if (m->limit == limit && m->offset == offset &&
		    m->file == file && m->build_id_len == build_id_len &&
		    !memcmp(m->build_id, build_id, build_id_len))
			return id;
		/* another object at these addresses now: a new id, which
		 * the key points to from now on */
	}
	struct imapping *m = new_id(&in->map_map, start, b, ARRAY(in, maps),
				    &id);
	if (!m)
		return 0;
	memset(m, 0, sizeof *m);
	m->start = start;
	m->limit = limit;
	m->offset = offset;
	m->file = file;
	m->build_id_len = (uint32_t)build_id_len;
	if (build_id_len)
		memcpy(m->build_id, build_id, build_id_len);
	return id;
}

uint32_t intern_node(struct intern *in, uint32_t parent, uint32_t loc)
{
	uint32_t id;
	struct inode *n = find_or_new(&in->node_map, parent, loc,
				      ARRAY(in, nodes), &id);
	if (n)
		*n = (struct inode){ parent, loc };
	return id;
}

uint32_t intern_thread(struct intern *in, int tid, uint32_t name,
		       int *changed)
{
	uint32_t id = imap_get(&in->thread_map, (uint64_t)(unsigned)tid, 0);
	*changed = 0;
	if (id) {
		if (in->threads[id - 1].name != name) {
			in->threads[id - 1].name = name;
			*changed = 1;
		}
		return id;
	}
	struct ithread *t = new_id(&in->thread_map, (uint64_t)(unsigned)tid, 0,
				   ARRAY(in, threads), &id);
	if (!t)
		return 0;
	*t = (struct ithread){ tid, name };
	*changed = 1;
	return id;
}

uint32_t intern_thread_find(const struct intern *in, int tid, uint32_t *name)
{
	uint32_t id = imap_get(&in->thread_map, (uint64_t)(unsigned)tid, 0);
	*name = id ? in->threads[id - 1].name : 0;
	return id;
}

uint32_t intern_labels(struct intern *in, const uint32_t *kv,
		       uint32_t n_pairs)
{
	size_t bytes = (size_t)n_pairs * 2 * sizeof *kv;
	uint64_t a = str_hash((const char *)kv, bytes, 0) ^ n_pairs;
	uint64_t b = str_hash((const char *)kv, bytes, 0x5bd1e995);
	uint32_t id = imap_get(&in->labels_map, a, b);
	if (id) { /* confirmed, as strings are */
		const struct ilabels *e = &in->labels[id - 1];
		return e->n == n_pairs &&
				       !memcmp(in->label_kv + e->first, kv, bytes)
			       ? id
			       : 0;
	}
	uint32_t first = in->n_label_kv;
	for (uint32_t i = 0; i < 2 * n_pairs; i++) {
		if (reserve((void **)&in->label_kv, &in->cap_label_kv,
			    in->n_label_kv, sizeof *in->label_kv) < 0) {
			in->n_label_kv = first;
			return 0;
		}
		in->label_kv[in->n_label_kv++] = kv[i];
	}
	struct ilabels *e = new_id(&in->labels_map, a, b, ARRAY(in, labels),
				   &id);
	if (!e) {
		in->n_label_kv = first;
		return 0;
	}
	*e = (struct ilabels){ first, n_pairs };
	return id;
}

void intern_free(struct intern *in)
{
	for (uint32_t i = 0; i < in->n_strs; i++)
		free(in->strs[i].s);
	free(in->strs);
	free(in->funcs);
	free(in->locs);
	free(in->nodes);
	free(in->threads);
	free(in->maps);
	free(in->labels);
	free(in->label_kv);
	imap_free(&in->labels_map);
	imap_free(&in->map_map);
	imap_free(&in->str_map);
	imap_free(&in->func_map);
	imap_free(&in->loc_map);
	imap_free(&in->node_map);
	imap_free(&in->thread_map);
	memset(in, 0, sizeof *in);
}
