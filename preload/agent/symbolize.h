/*
 * symbolize.h - from (code object address, instruction offset, fingerprint)
 * to an interned location (function + line), on the agent thread.
 *
 * The handler records only addresses. By the time the agent looks, the code
 * object may have died and its memory been reused. The fingerprint taken in
 * the handler (its name and file name object addresses and first line)
 * must match what the agent reads now, and the object must still be a code
 * object, its strings still strs (of the str type, no byte past 0x7f in
 * an ASCII one, no code point past U+10FFFF: a code object freed after
 * the sample keeps its fields, and is named from them while its strings
 * are there, but their memory may have gone to other objects); otherwise
 * the frame is named "[unknown]", never guessed. After
 * copying the strings and the line table, the agent reads the fingerprint
 * again, so an object that died during the copy is caught too.
 *
 * Cache: per (code address, fingerprint) the function id and a copy of the
 * line table, so each code object is read once; per (entry, offset) the
 * location id. Agent thread only; reads interpreter memory through
 * guard_copy() only, never through the Python C API.
 */
#ifndef PYPROF_SYMBOLIZE_H
#define PYPROF_SYMBOLIZE_H

#include <stdint.h>

#include "base/intern.h"
#include "base/sampler.h"

struct symbolizer;

struct symbolizer *symbolize_new(struct intern *in);
void symbolize_free(struct symbolizer *s);

/* The location id for one raw frame (0 only when out of memory). */
uint32_t symbolize_frame(struct symbolizer *s, const struct raw_frame *f);

/* A location for a pseudo-frame such as "[non-Python thread]". */
uint32_t symbolize_pseudo(struct symbolizer *s, const char *name);

/*
 * The code object at code is about to be freed (the death hook, GIL
 * held, under the agent's lock): its entry must not name a later object
 * at the same address. symbolize_maybe_known is a lock-free hint: 0 means
 * no entry can exist for code. */
void symbolize_forget(struct symbolizer *s, uintptr_t code);
int symbolize_maybe_known(uintptr_t code);

/* Code objects read so far, and how many could not be named. */
void symbolize_stats(const struct symbolizer *s, unsigned long *n_code,
		     unsigned long *n_unknown);

#endif /* PYPROF_SYMBOLIZE_H */
