/*
 * pydict.h - an object's attribute read from its instance dictionary, with
 * guarded reads and no C API: for the asyncio view, whose pure-Python
 * tasks (asyncio.tasks._PyTask) keep their fields (_coro, _fut_waiter,
 * _name...) there rather than at fixed offsets.
 *
 * Two halves. pydict.c (constructor) picks the version's layout; the
 * lookup, signal/sig_pydict.c, runs inside a guarded region on the wall
 * sampler thread (sig_asyncio.c). Where an instance's attributes are,
 * per version:
 *   3.7-3.10  a dict at obj + tp_dictoffset: combined (the values in its
 *             keys' entries) or split (the keys shared by the class,
 *             ma_values an array of values);
 *   3.11      Py_TPFLAGS_MANAGED_DICT: the dict at obj - 24, or, until
 *             one is made, a values array at obj - 32 whose keys are the
 *             class's ht_cached_keys;
 *   3.12      the same word at obj - 24 holds the dict, or the values
 *             array minus one (tagged by its low bit);
 *   3.13+     Py_TPFLAGS_INLINE_VALUES: the values inline after the object
 *             (obj + tp_basicsize; valid while its `valid` byte is set),
 *             else the managed dict at obj - 24.
 * The keys object: 3.7-3.10 dk_size at 8, dk_nentries at 32, indices at
 * 40 (1, 2, 4 or 8 bytes each by dk_size), entries {hash, key, value};
 * 3.11+ dk_log2_size at 8, dk_log2_index_bytes at 9, dk_kind at 10,
 * dk_nentries at 24, indices at 32, entries {key, value} unless the kind
 * is general ({hash, key, value}). The values array starts 8 bytes in on
 * 3.13+ (capacity, size, embedded, valid come first).
 * (These numbers are an example, a 64-bit build's: sig_pydict.c takes
 * each from the row, struct pyabi's tp_*, obj_managed_*, dict_*, dk_*
 * and dictvalues_* fields.)
 * The entries are scanned in order (an instance has a dozen), a key
 * matching by address (the interned string found once with the GIL) or,
 * failing that, by its ASCII text.
 *
 * Ordinary dicts too (pydict_layout_any_init), for the thread names read
 * from outside (sys.modules, a module's dict, threading._active): their
 * keys object is ma_keys (at 32; ma_values at 40) on 3.6+ (3.6's keys
 * object is 3.7's); 2.7 has none: ma_mask + 1 slots {hash, key, value}
 * at ma_table (the row's dict27_mask, dict27_table), a deleted one
 * holding a dummy key and no value. 2.7 and 3.6 instances keep their
 * attributes in a dict at tp_dictoffset, as 3.7-3.10 do. An int key is
 * found by the hash its entry stores (2.7-3.10 and 3.11+'s general
 * keys): an int's hash is its value below 2**61 - 1 in every version.
 */
#ifndef PYPROF_PYDICT_H
#define PYPROF_PYDICT_H

#include <stddef.h>
#include <stdint.h>

#include "pyprof/pyabi.h"

struct pydict_layout {
	const struct pyabi *abi; /* the row: object headers, strings     */
	int kind;		 /* enum pyabi_dict_kind                     */
	int old_keys;		 /* 3.7-3.10 keys object                     */
	int values_at;		 /* first value in a values array            */
	int ht_cached_keys;	 /* PyHeapTypeObject.ht_cached_keys (3.11+)  */
	uintptr_t dict_type;	 /* &PyDict_Type, set by the caller          */
	uintptr_t str_type;	 /* &PyUnicode_Type, set by the caller       */
	int table;		 /* enum pyabi_dict_table, or 0              */
	int mask27, table27;	 /* 2.7: ma_mask, ma_table                   */
};

/* One attribute name: the interned str (or 0) and its ASCII text. */
struct pydict_key {
	uintptr_t interned;
	const char *text;
	size_t len;
};

/*
 * Fills *out from the running version's row (dict_type and str_type left
 * 0). Returns 0, or -ENOTSUP for a row that says no layout (then
 * out->kind is PYABI_DICT_NONE). Constructor; no side effects.
 */
int pydict_layout_init(struct pydict_layout *out, const struct pyabi *abi);

/*
 * The same for reading ordinary dicts and instances' attributes on every
 * version (2.7 and 3.6 included, whose rows give no kind: their instances'
 * dicts are at tp_dictoffset). Returns 0, or -ENOTSUP for a row with no
 * dict_table or without the dict fields it needs. Any thread; no side
 * effects.
 */
int pydict_layout_any_init(struct pydict_layout *out, const struct pyabi *abi);

#define PYDICT_MAX_ENTRIES 256
/* Most entries (2.7: slots) looked at in an ordinary dict: sys.modules
 * of a large program holds some thousands. */
#define PYDICT_MAX_SCAN (1 << 17)

#endif
