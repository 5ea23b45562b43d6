/*
 * test_pydict.c - the dict readers (signal/sig_pydict.c, pydict.h) on
 * dicts built by hand in this process, one per table kind: 2.7's own
 * table, 3.6-3.10's keys object with dk_size, 3.11+'s with dk_log2_size.
 *
 * The readers' agreement with real interpreters is tested end to end
 * (tests/e2e/outside.bats and dump_outside.bats read thread names
 * through them on every version, asyncio.bats the attributes of tasks);
 * this file pins the contract on what no interpreter would hand over:
 * a deleted entry, a key of another type, absurd sizes, a dict of the
 * wrong type. The objects are arrays of words laid out as the rows of
 * pyabi_find say (plain loads: no fault is expected here).
 *
 * Cases: 1 3.11+ (str and int keys), 2 3.6-3.10, 3 2.7 (an instance's
 * attribute too), 4 hostile dicts.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "cpython/pydict.h"
#include "pyprof/pyabi.h"
#include "signal/sig_pydict.h"

static uint64_t dict_type[4], str_type[4], other_type[4];

/* Writes v at byte offset at of object o. */
static void put(void *o, long at, uint64_t v)
{
	memcpy((char *)o + at, &v, sizeof v);
}

/* A str of text in o (3.x compact ASCII, 2.7 PyStringObject). */
static uintptr_t make_str(const struct pyabi *a, uint64_t *o, const char *text)
{
	size_t len = strlen(text);

	memset(o, 0, 64 * 8);
	put(o, a->ob_type, (uintptr_t)str_type);
	if (a->str_kind == PYABI_STR_BYTES) {
		put(o, a->var_size, len);
		memcpy((char *)o + a->bytes_sval, text, len);
	} else {
		uint32_t st = 1u << a->u_compact_bit | 1u << a->u_ascii_bit |
			      1u << a->u_kind_shift;
		put(o, a->u_length, len);
		memcpy((char *)o + a->u_state, &st, sizeof st);
		memcpy((char *)o + a->u_ascii_size, text, len);
	}
	return (uintptr_t)o;
}

static struct pydict_layout layout(int major, int minor)
{
	struct pydict_layout l;
	int rc = pydict_layout_any_init(&l, pyabi_find(major, minor));

	CHECK(rc == 0, "0 layout for every version");
	l.dict_type = (uintptr_t)dict_type;
	l.str_type = (uintptr_t)str_type;
	return l;
}

static uint64_t keys_o[256], dict_o[16], s1[64], s2[64], s3[64];

/* A 3.11+ dict of n entries {hash, key, value} (general) or {key,
 * value} (unicode keys), 8 index bytes. */
static uintptr_t dict311(int general, const uint64_t *ent, int n_words, int n)
{
	memset(keys_o, 0, sizeof keys_o);
	memset(dict_o, 0, sizeof dict_o);
	((uint8_t *)keys_o)[9] = 3;		   /* 8 bytes of indices  */
	((uint8_t *)keys_o)[10] = general ? 0 : 1; /* kind               */
	put(keys_o, 24, (uint64_t)n);		   /* dk_nentries        */
	memcpy((char *)keys_o + 40, ent, (size_t)n_words * 8);
	put(dict_o, 8, (uintptr_t)dict_type);
	put(dict_o, 32, (uintptr_t)keys_o);
	return (uintptr_t)dict_o;
}

static void t_311(void)
{
	struct pydict_layout l = layout(3, 12);
	const struct pyabi *a = l.abi;
	struct pydict_key k = { 0, "threading", 9 }, k2 = { 0, "thread", 6 };
	uint64_t ent[6] = { make_str(a, s1, "sys"), 11,
			    make_str(a, s2, "threading"), 22,
			    make_str(a, s3, "threadingx"), 33 };
	uintptr_t d = dict311(0, ent, 6, 3);

	CHECK(pydict_get_str_sigsafe(&l, d, &k) == 22, "1.1 str key found");
	CHECK(pydict_get_str_sigsafe(&l, d, &k2) == 0, "1.2 prefix not a key");
	CHECK(pydict_get_hash_sigsafe(&l, d, 22) == 0,
	      "1.3 no hash in unicode-keys entries");
	{
		uint64_t g[9] = { 5, 1, 0, 0x7f0000001000, 2, 0,
				  0x7f0000001000, 3, 33 };
		/* the same hash once deleted (no value), then live */
		d = dict311(1, g, 9, 3);
		CHECK(pydict_get_hash_sigsafe(&l, d, 0x7f0000001000) == 33,
		      "1.4 int key by its hash, a deleted entry skipped");
		CHECK(pydict_get_hash_sigsafe(&l, d, 6) == 0,
		      "1.5 no such hash");
	}
}

static void t_size(void)
{
	struct pydict_layout l = layout(3, 8);
	const struct pyabi *a = l.abi;
	struct pydict_key k = { 0, "_active", 7 };
	uint64_t ent[6] = { 1, make_str(a, s1, "_active"), 44,
			    0x7f0000002000, 7, 55 };

	memset(keys_o, 0, sizeof keys_o);
	memset(dict_o, 0, sizeof dict_o);
	put(keys_o, 8, 8);  /* dk_size: 1-byte indices */
	put(keys_o, 32, 2); /* dk_nentries */
	memcpy((char *)keys_o + 48, ent, sizeof ent);
	put(dict_o, 8, (uintptr_t)dict_type);
	put(dict_o, 32, (uintptr_t)keys_o);
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)dict_o, &k) == 44,
	      "2.1 str key found");
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)dict_o, 0x7f0000002000) ==
		      55,
	      "2.2 int key by its hash");
	CHECK(layout(3, 6).old_keys == 1, "2.3 3.6's keys object is 3.7's");
}

static void t_27(void)
{
	struct pydict_layout l = layout(2, 7);
	const struct pyabi *a = l.abi;
	struct pydict_key k = { 0, "_Thread__name", 13 };
	uint64_t table[24] = { 0 }, obj[8] = { 0 }, type[64] = { 0 };
	uintptr_t dummy = make_str(a, s2, "<dummy key>");

	CHECK(l.kind == PYABI_DICT_OFFSET, "3.1 2.7 instances: tp_dictoffset");
	/* slot 1 deleted (dummy key, no value), slot 5 the name */
	table[3] = 9, table[4] = dummy;
	table[15] = 8, table[16] = make_str(a, s1, "_Thread__name");
	table[17] = 66;
	memset(dict_o, 0, sizeof dict_o);
	put(dict_o, a->ob_type, (uintptr_t)dict_type);
	put(dict_o, a->dict27_mask, 7);
	put(dict_o, a->dict27_table, (uintptr_t)table);
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)dict_o, &k) == 66,
	      "3.2 str key in 2.7's table");
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)dict_o, 9) == 0,
	      "3.3 a deleted slot is no value");
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)dict_o, 8) == 66,
	      "3.4 by hash");
	/* an instance whose type says its dict is at 16 */
	put(type, 288, 16);
	put(obj, a->ob_type, (uintptr_t)type);
	put(obj, 16, (uintptr_t)dict_o);
	CHECK(pydict_attr_sigsafe(&l, (uintptr_t)obj, &k) == 66,
	      "3.5 a 2.7 instance's attribute");
}

static void t_hostile(void)
{
	struct pydict_layout l = layout(3, 8), l27 = layout(2, 7);
	struct pydict_key k = { 0, "x", 1 };

	memset(keys_o, 0, sizeof keys_o);
	memset(dict_o, 0, sizeof dict_o);
	put(dict_o, 8, (uintptr_t)dict_type);
	put(dict_o, 32, (uintptr_t)keys_o);
	put(keys_o, 8, (uint64_t)1 << 40); /* dk_size */
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)dict_o, &k) == 0,
	      "4.1 absurd dk_size: nothing read");
	put(keys_o, 8, 8);
	put(keys_o, 32, (uint64_t)PYDICT_MAX_SCAN + 1);
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)dict_o, 1) == 0,
	      "4.2 absurd dk_nentries: nothing read");
	put(keys_o, 32, (uint64_t)-5);
	CHECK(pydict_get_hash_sigsafe(&l, (uintptr_t)dict_o, 1) == 0,
	      "4.3 negative dk_nentries");
	put(dict_o, 8, (uintptr_t)other_type);
	CHECK(pydict_get_str_sigsafe(&l, (uintptr_t)dict_o, &k) == 0,
	      "4.4 not a dict");
	CHECK(pydict_get_str_sigsafe(&l, 0, &k) == 0, "4.5 NULL dict");
	memset(dict_o, 0, sizeof dict_o);
	put(dict_o, l27.abi->ob_type, (uintptr_t)dict_type);
	put(dict_o, l27.abi->dict27_mask, (uint64_t)PYDICT_MAX_SCAN);
	put(dict_o, l27.abi->dict27_table, (uintptr_t)keys_o);
	CHECK(pydict_get_hash_sigsafe(&l27, (uintptr_t)dict_o, 1) == 0,
	      "4.6 2.7: absurd ma_mask");
	put(dict_o, l27.abi->dict27_mask, 7);
	put(dict_o, l27.abi->dict27_table, 0);
	CHECK(pydict_get_hash_sigsafe(&l27, (uintptr_t)dict_o, 1) == 0,
	      "4.7 2.7: no table");
}

int main(void)
{
	t_311();
	t_size();
	t_27();
	t_hostile();
	return check_summary();
}
