/*
 * pydict.c - the instance dictionary layout of the running CPython
 * (pydict.h), taken from its struct pyabi row. Constructor only.
 *
 * The numbers are the generated descriptor's (preload/cpython/pyabi_table.h,
 * tools/gen-pyabi: offsetof(PyHeapTypeObject, ht_cached_keys) and
 * PyDictValues from each version's headers); the reading is checked end
 * to end on every interpreter by tests/e2e/asyncio.bats (pure-Python
 * tasks), and for ordinary dicts by tests/e2e/outside.bats (thread
 * names). A row that says no kind reads no attribute.
 */
#include "pydict.h"

#include <errno.h>
#include <string.h>

int pydict_layout_init(struct pydict_layout *out, const struct pyabi *abi)
{
	memset(out, 0, sizeof *out);
	if (!abi || abi->dict_kind <= PYABI_DICT_NONE ||
	    abi->dict_kind > PYABI_DICT_INLINE ||
	    (abi->dict_kind >= PYABI_DICT_MANAGED && abi->ht_cached_keys < 0))
		return -ENOTSUP;
	out->abi = abi;
	out->kind = abi->dict_kind;
	out->old_keys = abi->dict_old_keys;
	out->values_at = abi->dict_values_at;
	out->ht_cached_keys = abi->ht_cached_keys > 0 ? abi->ht_cached_keys : 0;
	out->table = abi->dict_table;
	return 0;
}

int pydict_layout_any_init(struct pydict_layout *out, const struct pyabi *abi)
{
	if (!abi || abi->dict_table < PYABI_TABLE_27 ||
	    abi->dict_table > PYABI_TABLE_LOG2 ||
	    (abi->dict_table == PYABI_TABLE_27 &&
	     (abi->dict27_mask < 0 || abi->dict27_table < 0)) ||
	    (abi->dict_table != PYABI_TABLE_27 &&
	     (abi->dict_ma_keys < 0 || abi->dk_nentries < 0 ||
	      abi->dk_indices < 0)) ||
	    abi->dict_entry_size <= 0 || abi->dict_entry_hash < 0 ||
	    abi->dict_entry_key < 0 || abi->dict_entry_value < 0)
		return -ENOTSUP;
	if (pydict_layout_init(out, abi) < 0) {
		/* 2.7, 3.6: no asyncio view, so no kind in the row; their
		 * instances' dicts are at tp_dictoffset */
		if (abi->dict_kind != PYABI_DICT_NONE)
			return -ENOTSUP;
		memset(out, 0, sizeof *out);
		out->abi = abi;
		out->kind = PYABI_DICT_OFFSET;
		out->old_keys = abi->dict_table == PYABI_TABLE_SIZE;
	}
	out->table = abi->dict_table;
	out->mask27 = abi->dict27_mask;
	out->table27 = abi->dict27_table;
	return 0;
}
