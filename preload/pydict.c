/*
 * pydict.c - the instance dictionary layout of each CPython version
 * (pydict.h). Constructor only.
 *
 * The numbers were measured against each version's headers (3.11+:
 * offsetof(PyHeapTypeObject, ht_cached_keys) and struct _dictvalues in
 * internal/pycore_dict.h; 3.7-3.10 install no dict-common.h, whose keys
 * object did not change from 3.6 to 3.10), and the reading is checked end
 * to end on every interpreter by tests/e2e/asyncio.bats (pure-Python
 * tasks). A minor not listed here reads no attribute: its layout may
 * have moved.
 */
#include "pydict.h"

#include <errno.h>
#include <string.h>

int pydict_layout_init(struct pydict_layout *out, int major, int minor)
{
	memset(out, 0, sizeof *out);
	if (major != 3 || minor < 7 || minor > 15)
		return -ENOTSUP;
	out->old_keys = minor <= 10;
	/* 3.13 put capacity, size, embedded, valid before the values */
	out->values_at = minor >= 13 ? 8 : 0;
	switch (minor) {
	case 11:
		out->ht_cached_keys = 872;
		break;
	case 12: case 13: case 14:
		out->ht_cached_keys = 880;
		break;
	case 15:
		out->ht_cached_keys = 888;
		break;
	default:
		out->ht_cached_keys = 0;
	}
	out->kind = minor <= 10   ? PYDICT_OFFSET
		    : minor == 11 ? PYDICT_MANAGED
		    : minor == 12 ? PYDICT_TAGGED
				  : PYDICT_INLINE;
	return 0;
}
