/*
 * intern.h - the agent's dictionaries: strings, functions, locations, stack
 * nodes, threads and mappings, each numbered densely from 1 in order of
 * first use, as the wire protocol wants (include/pyprof/wire.h). Locations
 * are of two kinds sharing one id space, as on the wire: a Python location
 * (function, line) or a native one (mapping, address).
 *
 * Ids last for the life of the process, so that after a reconnect the
 * agent can replay every definition from id 1 (transport.c). Agent thread
 * only; no locking. Memory grows with the number of distinct things seen
 * and is capped (INTERN_MAX_IDS per kind): past the cap, lookups fail and
 * the caller counts the sample as lost.
 */
#ifndef PYPROF_INTERN_H
#define PYPROF_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define INTERN_MAX_IDS (1u << 22)

/* A map from a 128-bit key to a 32-bit value (never 0). */
struct imap {
	uint64_t *keys; /* 2 words per slot */
	uint32_t *vals; /* 0 = empty        */
	uint32_t cap, n;
};

/* Returns the value for (a, b), or 0 if absent. */
uint32_t imap_get(const struct imap *m, uint64_t a, uint64_t b);
/* Sets (a, b) -> v (v != 0). 0 or -ENOMEM. */
int imap_put(struct imap *m, uint64_t a, uint64_t b, uint32_t v);
void imap_free(struct imap *m);

struct istr {
	char *s;
	uint32_t len;
};
struct ifunc {
	uint32_t name, system_name, filename;
	int32_t start_line;
};
/* A location: native == 0: func, line; native == 1: mapping, addr. */
struct iloc {
	uint32_t func;
	int32_t line;
	uint32_t mapping;
	uint32_t native;
	uint64_t addr;
};
struct inode {
	uint32_t parent, loc;
};
struct ithread {
	int tid;
	uint32_t name;
};
/* A label set (wire.h's LABELS): n (key, value) string id pairs at
 * label_kv[first .. first + 2n). */
struct ilabels {
	uint32_t first, n;
};
struct imapping {
	uint64_t start, limit, offset;
	uint32_t file; /* string id of the path */
	uint32_t build_id_len;
	uint8_t build_id[64]; /* WIRE_MAX_BUILD_ID */
};

struct intern {
	struct imap str_map, func_map, loc_map, node_map, thread_map, map_map;
	struct imap labels_map;
	struct istr *strs; /* [id - 1] */
	struct ifunc *funcs;
	struct iloc *locs;
	struct inode *nodes;
	struct ithread *threads;
	struct imapping *maps;
	struct ilabels *labels;
	uint32_t *label_kv;
	uint32_t n_strs, n_funcs, n_locs, n_nodes, n_threads, n_maps, n_labels;
	uint32_t cap_strs, cap_funcs, cap_locs, cap_nodes, cap_threads, cap_maps;
	uint32_t cap_labels, n_label_kv, cap_label_kv;
};

/* Each returns the id (>= 1), or 0 when out of memory or over the cap. */
uint32_t intern_str(struct intern *in, const char *s, size_t len);
uint32_t intern_func(struct intern *in, uint32_t name, uint32_t system_name,
		     uint32_t filename, int32_t start_line);
uint32_t intern_loc(struct intern *in, uint32_t func, int32_t line);
uint32_t intern_node(struct intern *in, uint32_t parent, uint32_t loc);
/* A mapping (wire.h's MAPPING): the same fields give the same id; a new
 * object at the same addresses gets a new one. build_id_len <= 64. */
uint32_t intern_mapping(struct intern *in, uint64_t start, uint64_t limit,
			uint64_t offset, uint32_t file, const uint8_t *build_id,
			size_t build_id_len);
/* A native location: addr in mapping (0 = none). */
uint32_t intern_addr(struct intern *in, uint32_t mapping, uint64_t addr);
/* Threads are keyed by tid; a new name updates the entry (returns its id
 * and sets *changed). */
uint32_t intern_thread(struct intern *in, int tid, uint32_t name,
		       int *changed);
/* The id of tid's thread (0: never interned), its name in *name. */
uint32_t intern_thread_find(const struct intern *in, int tid, uint32_t *name);

/* A label set of n_pairs (key, value) string ids at kv: the same pairs
 * in the same order give the same id. */
uint32_t intern_labels(struct intern *in, const uint32_t *kv,
		       uint32_t n_pairs);

void intern_free(struct intern *in);

#endif /* PYPROF_INTERN_H */
