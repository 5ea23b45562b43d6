/*
 * sig_pydict.h - an attribute of an object's instance dictionary, read
 * in signal context (sig_pydict.c) with cpython/pydict.h's layout.
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

#endif /* PYPROF_SIG_PYDICT_H */
