/*
 * agg.h - one process's aggregate: (leaf node, thread, flags, label set)
 * -> (count, value).
 *
 * Every SAMPLES record a client sends ends here (proc.c calls agg_add once
 * per record), so this is the collector's hot path: goal over one million
 * records a second on one core with the rest of ingest. Keys are
 * collector-wide node ids (symtab.h), the process's own thread index
 * (proc.c), the wire's sample flags and a collector-wide label set id
 * (symtab.h; 0 for a sample without labels). The pprof builder walks the
 * entries with agg_next.
 *
 * Counts and values saturate at UINT64_MAX instead of wrapping (a hostile
 * client must not be able to turn a total negative).
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_AGG_H
#define PYPROF_AGG_H

#include <stddef.h>
#include <stdint.h>

struct agg;

/* One key and its sums. Read-only outside agg.c. */
struct agg_entry {
	uint32_t node; /* leaf node id, never 0 */
	uint32_t thread;
	uint32_t flags;	 /* wire flags; with WIRE_SF_OPCODE, bits 16..23
			    hold the opcode (AGG_OPCODE_SHIFT) */
	uint32_t labels; /* label set id (symtab.h), 0: none */
	uint64_t count;
	uint64_t value;
};

/* The opcode of a sample (PYPROF_OPCODES) is part of its key. It rides in
 * the flags word, above the wire's flag bits, so that an entry stays 32
 * bytes (two per cache line, the table's premise; bit 31 is agg.c's own)
 * and agg_add keeps its signature: proc.c builds the key with
 * agg_key_flags, pprof.c reads the opcode back with agg_entry_opcode when
 * flags has WIRE_SF_OPCODE. */
#define AGG_OPCODE_SHIFT 16
static inline uint32_t agg_key_flags(uint32_t wire_flags, unsigned opcode)
{
	return wire_flags | (uint32_t)(opcode & 0xff) << AGG_OPCODE_SHIFT;
}
static inline unsigned agg_entry_opcode(const struct agg_entry *e)
{
	return (e->flags >> AGG_OPCODE_SHIFT) & 0xff;
}

/* An empty aggregate, or NULL (ENOMEM). */
struct agg *agg_new(void);
void agg_free(struct agg *a);

/* Adds count and value to key (node, thread, flags, labels); node must
 * not be 0. Returns 0, or -ENOMEM when the table could not grow (nothing
 * added). */
int agg_add(struct agg *a, uint32_t node, uint32_t thread, uint32_t flags,
	    uint32_t labels, uint64_t count, uint64_t value);

/* Iteration: start with *pos = 0; returns the next entry or NULL at the
 * end. Any agg_add or agg_clear invalidates the walk. */
const struct agg_entry *agg_next(const struct agg *a, size_t *pos);

/* Distinct keys held. */
size_t agg_len(const struct agg *a);
/* Sums of every count and every value added (saturating). */
uint64_t agg_total_count(const struct agg *a);
uint64_t agg_total_value(const struct agg *a);
/* Bytes held. */
size_t agg_mem(const struct agg *a);

/* Empties the aggregate and returns its table to the initial size. */
void agg_clear(struct agg *a);

/* Replaces each entry's node with map_node(arg, node) and its label set
 * with map_labels(arg, labels) (not called for 0), which must be one to
 * one and never 0 (the renumbering of a symtab compaction), and moves the
 * entries to their new slots in place: it allocates nothing and cannot
 * fail, so a compaction never has to undo it. */
typedef uint32_t (*agg_map_fn)(const void *arg, uint32_t id);
void agg_renumber(struct agg *a, agg_map_fn map_node, agg_map_fn map_labels,
		  const void *arg);

#endif /* PYPROF_AGG_H */
