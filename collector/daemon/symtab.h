/*
 * symtab.h - the collector-wide symbol tables: strings, functions,
 * locations, stack nodes, mappings and label sets, each interned once for
 * all processes. A location is a Python one (function, line) or a native one
 * (PYPROF_NATIVE: an address in a mapping, with the function and line
 * found for it, or none).
 *
 * Clients define these per connection with their own ids (wire.h); proc.c
 * maps each connection id to the collector-wide id returned here, so a
 * reconnecting client's replay, or 32 workers running the same code, cost
 * one entry each. Aggregates (agg.h) and the pprof builder (pprof.h) speak
 * only collector-wide ids. Ids of each kind are dense and start at 1; 0
 * means none.
 *
 * Memory: entries are never freed one by one. symtab_clear drops them all
 * (the collector calls it when it holds no process any more), and a
 * compaction (below) keeps only what the caller marks as still referenced
 * and renumbers it, so that a collector running for days while processes
 * come and go holds what its live processes use, not everything they ever
 * defined.
 *
 * Single-threaded (the collector's loop thread). Fed by definition frames,
 * which are rare next to samples.
 */
#ifndef PYPROF_SYMTAB_H
#define PYPROF_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct symtab;

/* An empty table, or NULL (ENOMEM). */
struct symtab *symtab_new(void);
void symtab_free(struct symtab *st);
/* Forgets every entry and frees their memory; ids restart at 1. Only call
 * it when nothing holds an id. */
void symtab_clear(struct symtab *st);

/* Interns len bytes (not NUL-terminated; may contain anything): invalid
 * UTF-8 and NUL bytes are replaced with U+FFFD first, because pprof
 * string tables are UTF-8 and protobuf-c strings are NUL-terminated.
 * Stores the id in *sid. 0, -ENOMEM, or -E2BIG past 2^32-2 strings. */
int symtab_intern_string(struct symtab *st, const void *s, size_t len,
			 uint32_t *sid);
/* The NUL-terminated string for sid ("" for 0). sid must exist. The
 * pointer is valid until the next symtab_intern_string or symtab_clear. */
const char *symtab_string(const struct symtab *st, uint32_t sid);

/* Interns a function; every sid must exist. 0, -ENOMEM or -E2BIG. */
int symtab_intern_function(struct symtab *st, uint32_t name_sid,
			   uint32_t system_name_sid, uint32_t filename_sid,
			   int64_t start_line, uint32_t *fid);
/* The fields of function fid, which must exist. */
void symtab_function(const struct symtab *st, uint32_t fid,
		     uint32_t *name_sid, uint32_t *system_name_sid,
		     uint32_t *filename_sid, int64_t *start_line);

/* Interns a location (function fid, line); fid must exist. */
int symtab_intern_location(struct symtab *st, uint32_t fid, int64_t line,
			   uint32_t *lid);
void symtab_location(const struct symtab *st, uint32_t lid, uint32_t *fid,
		     int64_t *line);

/* A loaded object's executable segment (wire.h's MAPPING). file and
 * build_id are string ids (the build id in lowercase hex, "" if none);
 * flags (SYMTAB_MAP_*) say what the collector found in the file. */
struct symtab_mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id;
	uint32_t flags;
};
#define SYMTAB_MAP_FUNCTIONS 1u /* some address was named from the file */
#define SYMTAB_MAP_LINES 2u	/* some address got a source line       */

/* Interns a mapping (every field but flags is its identity; flags are
 * ORed into the entry's). 0, -ENOMEM or -E2BIG. */
int symtab_intern_mapping(struct symtab *st, const struct symtab_mapping *m,
			  uint32_t *mid);
void symtab_mapping(const struct symtab *st, uint32_t mid,
		    struct symtab_mapping *m);

/* Interns a native location: address addr of mapping mid (0: in no known
 * mapping), named by function fid and line (fid 0: no name was found). */
int symtab_intern_native_location(struct symtab *st, uint32_t fid,
				  int64_t line, uint32_t mid, uint64_t addr,
				  uint32_t *lid);
/* mid and addr of a native location; 0, 0 for a Python one. */
void symtab_location_native(const struct symtab *st, uint32_t lid,
			    uint32_t *mid, uint64_t *addr);

/* Interns the stack node (parent, location): parent 0 is the root, else it
 * must exist; lid must exist. A node's depth is its parent's plus one (a
 * root child has depth 1). Returns 0, -ENOMEM, or -ELOOP if the depth
 * would pass WIRE_MAX_DEPTH. */
int symtab_intern_node(struct symtab *st, uint32_t parent, uint32_t lid,
		       uint32_t *nid);
/* Parent (0 at the root) and location of node nid, which must exist. */
void symtab_node(const struct symtab *st, uint32_t nid, uint32_t *parent,
		 uint32_t *lid);
uint32_t symtab_node_depth(const struct symtab *st, uint32_t nid);

/* A label set (wire.h's LABELS): n pairs of (key sid, value sid), keys
 * distinct, 1 <= n <= WIRE_MAX_LABELS, every sid existing. Interned by
 * content: the pairs are kept sorted by key sid, so one set sent in two
 * orders, or by two processes, is one id (a merged profile maps the sets
 * of its processes by what they say, not by who sent them). kv holds 2n
 * sids, key first. 0, -ENOMEM or -E2BIG. */
int symtab_intern_labels(struct symtab *st, const uint32_t *kv, size_t n,
			 uint32_t *lsid);
/* The pairs of set lsid, which must exist: *kv points at 2 * *n sids
 * (key, value, key, value...), sorted by key; valid until the next
 * symtab_intern_labels or symtab_clear. */
void symtab_labels(const struct symtab *st, uint32_t lsid,
		   const uint32_t **kv, size_t *n);

/* How many entries of each kind exist: the largest id of that kind. */
uint32_t symtab_n_strings(const struct symtab *st);
uint32_t symtab_n_functions(const struct symtab *st);
uint32_t symtab_n_locations(const struct symtab *st);
uint32_t symtab_n_nodes(const struct symtab *st);
uint32_t symtab_n_mappings(const struct symtab *st);
uint32_t symtab_n_labels(const struct symtab *st);
/* Bytes held, for statistics. */
size_t symtab_bytes(const struct symtab *st);
/* Entries of all kinds. */
uint64_t symtab_n_entries(const struct symtab *st);

/* ---- compaction ---------------------------------------------------------
 *
 *   symtab_gc_begin(st)         start: every entry unmarked
 *   symtab_gc_mark_*(st, id)    once for every id still held anywhere
 *   symtab_gc_rebuild(st)       keep the marked entries, renumbered densely
 *                               in their old order
 *   symtab_gc_new_*(st, old)    the new id of a marked old id
 *   symtab_gc_end(st)           forget the marks and the renumbering
 *
 * Marking follows references: a node marks its ancestors and their
 * locations, a location its function and mapping, a function, a mapping
 * or a label set its strings, so callers mark only what they hold directly. Old order is kept, so a node's parent
 * still has a smaller id than the node. Ids of each kind are dense again
 * after the rebuild; their memory is what the marked entries need.
 *
 * symtab_gc_rebuild builds the new tables beside the old ones and swaps
 * them in only when everything succeeded: it returns 0, or -ENOMEM with
 * the tables, ids and strings unchanged (then do not renumber anything).
 * After a successful rebuild, every id held anywhere must be replaced with
 * its symtab_gc_new_* before the next use of the table, and pointers from
 * symtab_string are stale. Between begin and end only the calls above may
 * be made. begin returns 0 or -ENOMEM (then call nothing else). */
int symtab_gc_begin(struct symtab *st);
void symtab_gc_mark_string(struct symtab *st, uint32_t sid);
void symtab_gc_mark_function(struct symtab *st, uint32_t fid);
void symtab_gc_mark_location(struct symtab *st, uint32_t lid);
void symtab_gc_mark_node(struct symtab *st, uint32_t nid);
void symtab_gc_mark_mapping(struct symtab *st, uint32_t mid);
void symtab_gc_mark_labels(struct symtab *st, uint32_t lsid);
int symtab_gc_rebuild(struct symtab *st);
/* 0 maps to 0; old must have been marked. */
uint32_t symtab_gc_new_string(const struct symtab *st, uint32_t old);
uint32_t symtab_gc_new_function(const struct symtab *st, uint32_t old);
uint32_t symtab_gc_new_location(const struct symtab *st, uint32_t old);
uint32_t symtab_gc_new_node(const struct symtab *st, uint32_t old);
uint32_t symtab_gc_new_mapping(const struct symtab *st, uint32_t old);
uint32_t symtab_gc_new_labels(const struct symtab *st, uint32_t old);
void symtab_gc_end(struct symtab *st);

#endif /* PYPROF_SYMTAB_H */
