/*
 * modules.h - the loaded objects of the process, as mappings for native
 * frames (PYPROF_NATIVE): which object a native PC is in, and the wire's
 * MAPPING and ADDRESS definitions for it.
 *
 * The table lists every executable PT_LOAD segment of every object the
 * dynamic loader knows (dl_iterate_phdr): start and limit in memory, the
 * file offset it was mapped from, the path (the main program's from
 * /proc/self/exe, "[vdso]" for the vDSO) and the GNU build id, read from
 * the object's PT_NOTE segments in memory (NT_GNU_BUILD_ID). A mapping is
 * interned (intern_mapping) the first time a sample needs it, so a profile
 * lists only the objects its stacks touch.
 *
 * Freshness: modules_refresh, every agent tick, rebuilds the table when the
 * loader's counters of objects added and removed (dlpi_adds, dlpi_subs)
 * moved, i.e. after a dlopen or dlclose; a PC that falls in no segment
 * forces one refresh (a sample taken just after a dlopen can reach the
 * agent before the tick that would have seen it).
 *
 * Agent thread only (the code-object death hook drains under the agent's
 * lock, so it is serialized with the agent too).
 */
#ifndef PYPROF_MODULES_H
#define PYPROF_MODULES_H

#include <stdint.h>

#include "base/intern.h"

struct modules;

/* An empty table, or NULL. */
struct modules *modules_new(void);
void modules_free(struct modules *m);

/* Rebuilds the table if objects were loaded or unloaded since the last
 * call (cheap otherwise: one dl_iterate_phdr callback). */
void modules_refresh(struct modules *m);

/*
 * The location id of native PC pc (interned into in with its mapping; 0
 * only when out of memory). exact: pc is the interrupted PC; otherwise a
 * return address, sent as pc - 1 (wire.h's ADDRESS).
 */
uint32_t modules_location(struct modules *m, struct intern *in, uint64_t pc,
			  int exact);

/* Segments in the table, for logs. */
int modules_count(const struct modules *m);

#endif /* PYPROF_MODULES_H */
