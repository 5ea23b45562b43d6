/*
 * signal/sig_pydict.c - an attribute from an instance dictionary, read
 * with plain loads inside the caller's guarded region (pydict.h says
 * where each version keeps it).
 *
 * async-signal-safe: no malloc, stdio, locks or lazily initialised
 * thread-locals; nothing but loads. Runs on the wall sampler thread for
 * sig_asyncio.c. The object may be freed or changed while it is read: a
 * fault jumps out of the caller's region; a half-made dictionary gives a
 * wrong or no answer, which the caller type-checks. Every count read from
 * memory is bounded before it is used.
 */
#include "cpython/pydict.h"
#include "base/sampler.h"
#include "sig_pydict.h"

#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))
#define RD_U8(a) (*(volatile uint8_t *)(uintptr_t)(a))

/* The 4-byte state bitfield of str s, byte by byte (pycode.h's order). */
static uint32_t str_state(const struct pyabi *a, uintptr_t s)
{
	uint32_t st = 0;
	for (unsigned b = 0; b < 4; b++)
		st |= (uint32_t)RD_U8(s + (uintptr_t)a->u_state + b) << 8 * b;
	return st;
}

/* Where obj's attributes are: *keys and, for a split table, *values (the
 * values array) and *cap (how many it holds, or -1: as many as the keys);
 * 0, or -1 when obj has no attributes to read. */
static int where(const struct pydict_layout *l, uintptr_t obj,
		 uintptr_t *keys, uintptr_t *values, int *cap)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t tp = RD_PTR(obj + (uintptr_t)a->ob_type);
	uint64_t flags = tp ? RD_PTR(tp + (uintptr_t)a->tp_flags) : 0;
	uintptr_t d = 0, v = 0;
	*keys = *values = 0;
	*cap = -1;
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
		if (v)
			*keys = RD_PTR(tp + (uintptr_t)l->ht_cached_keys);
	} else {
		int64_t off = RD_I64(tp + (uintptr_t)a->tp_dictoffset);
		if (off <= 0 || off > 4096) /* < 0: variable-size objects */
			return -1;
		d = RD_PTR(obj + (uintptr_t)off);
	}
	if (d) {
		if (RD_PTR(d + (uintptr_t)a->ob_type) != l->dict_type)
			return -1;
		*keys = RD_PTR(d + (uintptr_t)a->dict_ma_keys);
		v = RD_PTR(d + (uintptr_t)a->dict_ma_values); /* split table */
	}
	if (v && l->values_at) /* 3.13+: capacity, size, embedded, valid */
		*cap = RD_U8(v + (uintptr_t)a->dictvalues_capacity);
	*values = v ? v + (uintptr_t)l->values_at : 0;
	return *keys ? 0 : -1;
}

/* Whether str s is the ASCII text of key. */
static int same_text(uintptr_t s, const struct pydict_key *key)
{
	const struct pyabi *a = sampler.abi;
	uint32_t st = str_state(a, s);
	if (!(st >> a->u_compact_bit & 1) || !(st >> a->u_ascii_bit & 1) ||
	    RD_I64(s + a->u_length) != (int64_t)key->len)
		return 0;
	uintptr_t data = s + (uintptr_t)a->u_ascii_size;
	for (size_t i = 0; i < key->len; i++)
		if (RD_U8(data + i) != (uint8_t)key->text[i])
			return 0;
	return 1;
}

/* The entries of keys object k: where the first is, how many, and each
 * one's size and where its key and value are in it; 0, or -1 for a keys
 * object that cannot be right. */
struct entries {
	uintptr_t at;
	int64_t n;
	unsigned size, key_at, value_at;
};

static int entries_of(const struct pydict_layout *l, uintptr_t k,
		      struct entries *e)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t indices = k + (uintptr_t)a->dk_indices;
	if (l->old_keys) { /* 3.7-3.10: indices of 1, 2 or 4 bytes */
		int64_t dk_size = RD_I64(k + (uintptr_t)a->dk_size);
		int64_t ix = dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2
								     : 4;
		if (dk_size <= 0 || dk_size > (1 << 20))
			return -1;
		e->at = indices + (uintptr_t)(dk_size * ix);
	} else {
		unsigned log2_bytes =
			RD_U8(k + (uintptr_t)a->dk_log2_index_bytes);
		if (log2_bytes > 24)
			return -1;
		e->at = indices + ((uintptr_t)1 << log2_bytes);
	}
	e->n = RD_I64(k + (uintptr_t)a->dk_nentries);
	if (l->old_keys ||
	    RD_U8(k + (uintptr_t)a->dk_kind) == (uint8_t)a->dk_kind_general) {
		e->size = (unsigned)a->dict_entry_size;
		e->key_at = (unsigned)a->dict_entry_key;
		e->value_at = (unsigned)a->dict_entry_value;
	} else {
		e->size = (unsigned)a->dict_uentry_size;
		e->key_at = (unsigned)a->dict_uentry_key;
		e->value_at = (unsigned)a->dict_uentry_value;
	}
	return 0;
}

uintptr_t pydict_attr_sigsafe(const struct pydict_layout *l, uintptr_t obj,
			      const struct pydict_key *key)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t keys, values;
	struct entries e;
	int cap;
	if (!l->kind || !obj || where(l, obj, &keys, &values, &cap) < 0 ||
	    entries_of(l, keys, &e) < 0)
		return 0;
	if (e.n < 0 || e.n > PYDICT_MAX_ENTRIES)
		return 0;
	for (int64_t i = 0; i < e.n; i++) {
		uintptr_t at = e.at + (uintptr_t)i * e.size;
		uintptr_t k = RD_PTR(at + e.key_at);
		if (!k || (k != key->interned &&
			   (RD_PTR(k + (uintptr_t)a->ob_type) != l->str_type ||
			    !same_text(k, key))))
			continue;
		if (values && cap >= 0 && i >= cap)
			return 0; /* a key added after these values were made */
		return values ? RD_PTR(values + 8 * (uintptr_t)i)
			      : RD_PTR(at + e.value_at);
	}
	return 0;
}
