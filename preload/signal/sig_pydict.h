/*
 * sig_pydict.h - an attribute of an object's instance dictionary, or a
 * value of an ordinary dict, read in signal context (sig_pydict.c) with
 * cpython/pydict.h's layout. pyprof's build of the same file answers
 * pyprof/walk.h's pydict_*_remote.
 */
#ifndef PYPROF_SIG_PYDICT_H
#define PYPROF_SIG_PYDICT_H

#include <stdint.h>

#include "cpython/pydict.h"

/*
 * The value of attribute key in obj's instance dictionary (a borrowed
 * address in the interpreter), or 0 when obj has none or no such key.
 * Reads interpreter memory unguarded: call inside guard_run_sigsafe.
 * Bounded (at most PYDICT_MAX_ENTRIES entries looked at). Signal context.
 */
uintptr_t pydict_attr_sigsafe(const struct pydict_layout *l, uintptr_t obj,
			      const struct pydict_key *key);

/*
 * The value of str key key (its text; key->interned may be 0) in the
 * ordinary dict d, or 0 when d is no dict (l->dict_type) or has no such
 * key; l from pydict_layout_any_init. The same rules as above, at most
 * PYDICT_MAX_SCAN entries looked at. Signal context.
 */
uintptr_t pydict_get_str_sigsafe(const struct pydict_layout *l, uintptr_t d,
				 const struct pydict_key *key);

/*
 * The value of the first entry of the ordinary dict d whose stored hash
 * is hash (an int key: its value, below 2**61 - 1), or 0; 0 too for a
 * dict whose entries store no hash (3.11+ str keys only). Signal context.
 */
uintptr_t pydict_get_hash_sigsafe(const struct pydict_layout *l, uintptr_t d,
				  int64_t hash);

#endif /* PYPROF_SIG_PYDICT_H */
