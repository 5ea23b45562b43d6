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

/* PyTypeObject, the same in every CPython 3 on a 64-bit target */
#define TP_BASICSIZE 32
#define TP_FLAGS 168
#define TP_DICTOFFSET 288
#define FLAG_INLINE_VALUES (1ul << 2) /* 3.13+ */
#define FLAG_MANAGED_DICT (1ul << 4)  /* 3.11+ */
#define MANAGED_AT 24		      /* the dict (or values) at obj - 24 */

/* Where obj's attributes are: *keys and, for a split table, *values (the
 * values array) and *cap (how many it holds, or -1: as many as the keys);
 * 0, or -1 when obj has no attributes to read. */
static int where(const struct pydict_layout *l, uintptr_t obj,
		 uintptr_t *keys, uintptr_t *values, int *cap)
{
	uintptr_t tp = RD_PTR(obj + (uintptr_t)sampler.abi->ob_type);
	uint64_t flags = tp ? RD_PTR(tp + TP_FLAGS) : 0;
	uintptr_t d = 0, v = 0;
	*keys = *values = 0;
	*cap = -1;
	if (!tp)
		return -1;
	if (l->kind >= PYABI_DICT_MANAGED && (flags & FLAG_MANAGED_DICT)) {
		if (l->kind == PYABI_DICT_INLINE && (flags & FLAG_INLINE_VALUES)) {
			uintptr_t in = obj + (uintptr_t)RD_I64(tp + TP_BASICSIZE);
			if (RD_U8(in + 3)) /* valid */
				v = in;
		}
		if (!v) {
			uintptr_t w = RD_PTR(obj - MANAGED_AT);
			if (l->kind == PYABI_DICT_MANAGED && !w)
				v = RD_PTR(obj - MANAGED_AT - 8);
			else if (l->kind == PYABI_DICT_TAGGED && (w & 1))
				v = w + 1;
			else
				d = w;
		}
		if (v)
			*keys = RD_PTR(tp + (uintptr_t)l->ht_cached_keys);
	} else {
		int64_t off = RD_I64(tp + TP_DICTOFFSET);
		if (off <= 0 || off > 4096) /* < 0: variable-size objects */
			return -1;
		d = RD_PTR(obj + (uintptr_t)off);
	}
	if (d) {
		if (RD_PTR(d + (uintptr_t)sampler.abi->ob_type) != l->dict_type)
			return -1;
		*keys = RD_PTR(d + 32); /* ma_keys */
		v = RD_PTR(d + 40);	/* ma_values: a split table */
	}
	if (v && l->values_at) /* 3.13+: capacity, size, embedded, valid */
		*cap = RD_U8(v);
	*values = v ? v + (uintptr_t)l->values_at : 0;
	return *keys ? 0 : -1;
}

/* Whether str s is the ASCII text of key. */
static int same_text(uintptr_t s, const struct pydict_key *key)
{
	const struct pyabi *a = sampler.abi;
	uint32_t st = RD_U8(s + a->u_state) |
		      (uint32_t)RD_U8(s + a->u_state + 1) << 8 |
		      (uint32_t)RD_U8(s + a->u_state + 2) << 16 |
		      (uint32_t)RD_U8(s + a->u_state + 3) << 24;
	if (!(st >> a->u_compact_bit & 1) || !(st >> a->u_ascii_bit & 1) ||
	    RD_I64(s + a->u_length) != (int64_t)key->len)
		return 0;
	uintptr_t data = s + (uintptr_t)a->u_ascii_size;
	for (size_t i = 0; i < key->len; i++)
		if (RD_U8(data + i) != (uint8_t)key->text[i])
			return 0;
	return 1;
}

uintptr_t pydict_attr_sigsafe(const struct pydict_layout *l, uintptr_t obj,
			      const struct pydict_key *key)
{
	uintptr_t keys, values, entries;
	int64_t n;
	int cap;
	unsigned size, key_at, value_at;
	if (!l->kind || !obj || where(l, obj, &keys, &values, &cap) < 0)
		return 0;
	if (l->old_keys) {
		int64_t dk_size = RD_I64(keys + 8);
		int64_t ix = dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2
								     : 4;
		if (dk_size <= 0 || dk_size > (1 << 20))
			return 0;
		n = RD_I64(keys + 32);
		entries = keys + 40 + (uintptr_t)(dk_size * ix);
		size = 24, key_at = 8, value_at = 16;
	} else {
		unsigned log2_bytes = RD_U8(keys + 9);
		if (log2_bytes > 24)
			return 0;
		n = RD_I64(keys + 24);
		entries = keys + 32 + ((uintptr_t)1 << log2_bytes);
		if (RD_U8(keys + 10) == 0) /* DICT_KEYS_GENERAL */
			size = 24, key_at = 8, value_at = 16;
		else
			size = 16, key_at = 0, value_at = 8;
	}
	if (n < 0 || n > PYDICT_MAX_ENTRIES)
		return 0;
	for (int64_t i = 0; i < n; i++) {
		uintptr_t e = entries + (uintptr_t)i * size;
		uintptr_t k = RD_PTR(e + key_at);
		if (!k || (k != key->interned &&
			   (RD_PTR(k + (uintptr_t)sampler.abi->ob_type) !=
				    l->str_type ||
			    !same_text(k, key))))
			continue;
		if (values && cap >= 0 && i >= cap)
			return 0; /* a key added after these values were made */
		return values ? RD_PTR(values + 8 * (uintptr_t)i)
			      : RD_PTR(e + value_at);
	}
	return 0;
}
