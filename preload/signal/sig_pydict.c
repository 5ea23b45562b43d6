/*
 * signal/sig_pydict.c - an attribute from an instance dictionary, or a
 * value from an ordinary dict, read with plain loads inside the caller's
 * guarded region (pydict.h says where each version keeps them).
 *
 * async-signal-safe: no malloc, stdio, locks or lazily initialised
 * thread-locals; nothing but loads. Runs on the wall sampler thread for
 * sig_asyncio.c. The object may be freed or changed while it is read: a
 * fault jumps out of the caller's region; a half-made dictionary gives a
 * wrong or no answer, which the caller type-checks. Every count read from
 * memory is bounded before it is used.
 *
 * Compiled a second time into pyprof (the Makefile's
 * remote_walk_pydict.o, with PYPROF_REMOTE_WALK), as sig_frames.c is:
 * the same reads of another process's memory through walk_remote_load,
 * for the thread names read from outside (pyprof/walk.h's
 * pydict_*_remote).
 */
#ifdef PYPROF_REMOTE_WALK
#include <string.h>

#include "pyprof/walk.h"
#define RD_PTR(a) ((uintptr_t)walk_remote_load((uintptr_t)(a), 8))
#define RD_I64(a) ((int64_t)walk_remote_load((uintptr_t)(a), 8))
#define RD_U8(a) ((uint8_t)walk_remote_load((uintptr_t)(a), 1))
/* the library's names stay the library's (the unit tests link both) */
#define pydict_attr_sigsafe pydict_attr_remote_
#define pydict_get_str_sigsafe pydict_get_str_remote_
#define pydict_get_hash_sigsafe pydict_get_hash_remote_
#else
#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))
#define RD_U8(a) (*(volatile uint8_t *)(uintptr_t)(a))
#endif

#include "cpython/pydict.h"
#include "sig_pydict.h"

/* Every offset below is the row's (l->abi: struct pyabi's objects, from
 * tools/gen-pyabi); this file holds none of its own. */
#define NO_HASH (-1)

/* The entries to look at: n of size bytes from entries, each with its
 * key, value and hash (hash_at NO_HASH: none) at those offsets; a split
 * table's values in values (0: in the entries), cap of them (-1: as
 * many as the keys). */
struct scan {
	uintptr_t entries, values;
	int64_t n;
	int size, hash_at, key_at, value_at, cap;
};

static void entry_shape(const struct pyabi *a, struct scan *s, int general)
{
	if (general) { /* {hash, key, value} (2.7: PyDictEntry) */
		s->size = a->dict_entry_size;
		s->hash_at = a->dict_entry_hash;
		s->key_at = a->dict_entry_key;
		s->value_at = a->dict_entry_value;
	} else { /* 3.11+ unicode keys: {key, value} */
		s->size = a->dict_uentry_size;
		s->hash_at = NO_HASH;
		s->key_at = a->dict_uentry_key;
		s->value_at = a->dict_uentry_value;
	}
}

/* The entries of the keys object keys (3.6+): 0, or -1. */
static int keys_scan(const struct pydict_layout *l, uintptr_t keys,
		     struct scan *s)
{
	const struct pyabi *a = l->abi;
	uintptr_t indices = keys + (uintptr_t)a->dk_indices;
	if (!keys)
		return -1;
	if (l->old_keys) { /* 3.6-3.10: indices of 1, 2 or 4 bytes */
		int64_t dk_size = RD_I64(keys + (uintptr_t)a->dk_size);
		int64_t ix = dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2
								     : 4;
		if (dk_size <= 0 || dk_size > (1 << 20))
			return -1;
		s->entries = indices + (uintptr_t)(dk_size * ix);
		entry_shape(a, s, 1);
	} else {
		unsigned log2_bytes =
			RD_U8(keys + (uintptr_t)a->dk_log2_index_bytes);
		if (log2_bytes > 24)
			return -1;
		s->entries = indices + ((uintptr_t)1 << log2_bytes);
		entry_shape(a, s,
			    RD_U8(keys + (uintptr_t)a->dk_kind) ==
				    (uint8_t)a->dk_kind_general);
	}
	s->n = RD_I64(keys + (uintptr_t)a->dk_nentries);
	return 0;
}

/* The entries of dict object d (the values of a split one): 0, or -1
 * when d is no dict. */
static int dict_scan(const struct pydict_layout *l, uintptr_t d,
		     struct scan *s)
{
	const struct pyabi *a = l->abi;
	uintptr_t v;

	s->values = 0;
	s->cap = -1;
	if (!d || RD_PTR(d + (uintptr_t)a->ob_type) != l->dict_type)
		return -1;
	if (l->table == PYABI_TABLE_27) {
		int64_t mask = RD_I64(d + (uintptr_t)l->mask27);
		if (mask < 0 || mask >= PYDICT_MAX_SCAN)
			return -1;
		s->n = mask + 1;
		s->entries = RD_PTR(d + (uintptr_t)l->table27);
		entry_shape(a, s, 1);
		return s->entries ? 0 : -1;
	}
	v = RD_PTR(d + (uintptr_t)a->dict_ma_values); /* a split table */
	if (keys_scan(l, RD_PTR(d + (uintptr_t)a->dict_ma_keys), s) < 0)
		return -1;
	if (v && l->values_at) /* 3.13+: capacity, size, embedded, valid */
		s->cap = RD_U8(v + (uintptr_t)a->dictvalues_capacity);
	s->values = v ? v + (uintptr_t)l->values_at : 0;
	return 0;
}

/* Where obj's attributes are: 0, or -1 when obj has none to read. */
static int attr_scan(const struct pydict_layout *l, uintptr_t obj,
		     struct scan *s)
{
	const struct pyabi *a = l->abi;
	uintptr_t tp = RD_PTR(obj + (uintptr_t)a->ob_type);
	uint64_t flags = tp ? RD_PTR(tp + (uintptr_t)a->tp_flags) : 0;
	uintptr_t d = 0, v = 0;
	if (!tp)
		return -1;
	if (l->kind >= PYABI_DICT_MANAGED && (flags & a->tpflag_managed_dict)) {
		if (l->kind == PYABI_DICT_INLINE &&
		    (flags & a->tpflag_inline_values)) {
			uintptr_t in = obj + (uintptr_t)RD_I64(
						     tp + (uintptr_t)a->tp_basicsize);
			if (RD_U8(in + (uintptr_t)a->dictvalues_valid))
				v = in;
		}
		if (!v) {
			uintptr_t w = RD_PTR(obj + (intptr_t)a->obj_managed_dict);
			if (l->kind == PYABI_DICT_MANAGED && !w)
				v = RD_PTR(obj + (intptr_t)a->obj_managed_values);
			else if (l->kind == PYABI_DICT_TAGGED && (w & 1))
				v = w + 1; /* 3.12: values minus one, tagged */
			else
				d = w;
		}
	} else {
		int64_t off = RD_I64(tp + (uintptr_t)a->tp_dictoffset);
		if (off <= 0 || off > 4096) /* < 0: variable-size objects */
			return -1;
		d = RD_PTR(obj + (uintptr_t)off);
	}
	if (d)
		return dict_scan(l, d, s);
	if (!v || keys_scan(l, RD_PTR(tp + (uintptr_t)l->ht_cached_keys), s) < 0)
		return -1;
	s->cap = l->values_at
			 ? RD_U8(v + (uintptr_t)a->dictvalues_capacity)
			 : -1;
	s->values = v + (uintptr_t)l->values_at;
	return 0;
}

/* The 4-byte state bitfield of str s, byte by byte (pycode.h's order). */
static uint32_t str_state(const struct pyabi *a, uintptr_t s)
{
	uint32_t st = 0;
	for (unsigned b = 0; b < 4; b++)
		st |= (uint32_t)RD_U8(s + (uintptr_t)a->u_state + b) << 8 * b;
	return st;
}

/* Whether str s is the ASCII text of key (2.7: its bytes). */
static int same_text(const struct pydict_layout *l, uintptr_t s,
		     const struct pydict_key *key)
{
	const struct pyabi *a = l->abi;
	uintptr_t data;
	if (s == key->interned)
		return 1;
	if (RD_PTR(s + (uintptr_t)a->ob_type) != l->str_type)
		return 0;
	if (a->str_kind == PYABI_STR_BYTES) {
		if (RD_I64(s + (uintptr_t)a->var_size) != (int64_t)key->len)
			return 0;
		data = s + (uintptr_t)a->bytes_sval;
	} else {
		uint32_t st = str_state(a, s);
		if (!(st >> a->u_compact_bit & 1) || !(st >> a->u_ascii_bit & 1) ||
		    RD_I64(s + a->u_length) != (int64_t)key->len)
			return 0;
		data = s + (uintptr_t)a->u_ascii_size;
	}
	for (size_t i = 0; i < key->len; i++)
		if (RD_U8(data + i) != (uint8_t)key->text[i])
			return 0;
	return 1;
}

/* The value of the first entry of s whose key is key's text (key not
 * NULL) or whose stored hash is hash, and has a value; 0 if none. */
static uintptr_t find(const struct pydict_layout *l, const struct scan *s,
		      const struct pydict_key *key, int64_t hash, int64_t max)
{
	if (s->n < 0 || s->n > max || (!key && s->hash_at == NO_HASH))
		return 0;
	for (int64_t i = 0; i < s->n; i++) {
		uintptr_t e = s->entries + (uintptr_t)i * (uintptr_t)s->size;
		uintptr_t k = RD_PTR(e + (uintptr_t)s->key_at), v;
		if (!k || (key ? !same_text(l, k, key)
			       : RD_I64(e + (uintptr_t)s->hash_at) != hash))
			continue;
		if (s->values && s->cap >= 0 && i >= s->cap)
			return 0; /* a key added after these values were made */
		v = s->values ? RD_PTR(s->values + 8 * (uintptr_t)i)
			      : RD_PTR(e + (uintptr_t)s->value_at);
		if (v) /* else deleted (2.7: a dummy key) */
			return v;
	}
	return 0;
}

uintptr_t pydict_attr_sigsafe(const struct pydict_layout *l, uintptr_t obj,
			      const struct pydict_key *key)
{
	struct scan s;
	if (!l->kind || !obj || attr_scan(l, obj, &s) < 0)
		return 0;
	return find(l, &s, key, 0, PYDICT_MAX_ENTRIES);
}

uintptr_t pydict_get_str_sigsafe(const struct pydict_layout *l, uintptr_t d,
				 const struct pydict_key *key)
{
	struct scan s;
	if (!l->table || dict_scan(l, d, &s) < 0)
		return 0;
	return find(l, &s, key, 0, PYDICT_MAX_SCAN);
}

uintptr_t pydict_get_hash_sigsafe(const struct pydict_layout *l, uintptr_t d,
				  int64_t hash)
{
	struct scan s;
	if (!l->table || dict_scan(l, d, &s) < 0)
		return 0;
	return find(l, &s, NULL, hash, PYDICT_MAX_SCAN);
}

#ifdef PYPROF_REMOTE_WALK
/* pyprof's build: walk.h's entry points, each with a layout of its own
 * (a few stores: the names are read once per thread). */
static int remote_layout(const struct walk_dict_env *env,
			 struct pydict_layout *l)
{
	if (!env || pydict_layout_any_init(l, env->abi) < 0)
		return -1;
	l->dict_type = (uintptr_t)env->dict_type;
	l->str_type = (uintptr_t)env->str_type;
	return l->dict_type && l->str_type ? 0 : -1;
}

uint64_t pydict_get_str_remote(const struct walk_dict_env *env, uint64_t d,
			       const char *text)
{
	struct pydict_layout l;
	struct pydict_key k = { 0, text, strlen(text) };
	return remote_layout(env, &l) < 0 ? 0 : pydict_get_str_sigsafe(&l, d, &k);
}

uint64_t pydict_get_hash_remote(const struct walk_dict_env *env, uint64_t d,
				int64_t hash)
{
	struct pydict_layout l;
	return remote_layout(env, &l) < 0 ? 0
					  : pydict_get_hash_sigsafe(&l, d, hash);
}

uint64_t pydict_attr_remote(const struct walk_dict_env *env, uint64_t obj,
			    const char *name)
{
	struct pydict_layout l;
	struct pydict_key k = { 0, name, strlen(name) };
	return remote_layout(env, &l) < 0 ? 0 : pydict_attr_sigsafe(&l, obj, &k);
}
#endif
