/*
 * pprof_builder.h - the pprof builder's state and the pieces every
 * message is made of (see pprof_builder.c): the arena, the string table,
 * functions, locations and mappings made on first use, labels, the checks
 * that a stack names only what the symtab holds. pprof.c builds a profile
 * from them, one encoder per message. Private to those two files.
 *
 * Collector loop thread only, like pprof.c.
 */
#ifndef PYPROF_PPROF_BUILDER_H
#define PYPROF_PPROF_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "common/idhash.h"
#include "profile.pb-c.h"

struct proc;
struct symtab;

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

#define PPROF_MAX_COMMENT 4096
#define PPROF_MAX_PSEUDO 16

/* A bump arena: the message tree of one profile, freed in one go. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
};

/* A growable array of pointers (protobuf-c's repeated message fields). */
struct ptrs {
	void **v;
	size_t n, cap;
};

struct thread_labels {
	Label *tid, *name;
};

struct builder {
	const struct symtab *st;
	struct arena arena;
	int oom;

	/* string table: strs[i] is string index i; strs[0] = "" */
	struct ptrs strs;
	struct idhash str_hash; /* content -> index */
	uint32_t *sid_idx;	/* symtab sid -> index, 0 = not yet */

	uint32_t *fid_map;    /* symtab fid -> pprof function id */
	uint32_t *lid_map;    /* symtab lid -> pprof location id */
	uint32_t *mid_map;    /* symtab mid -> pprof mapping id (2..) */
	uint8_t *mid_unnamed; /* symtab mid: an address without a name */
	Label ***set_labels;  /* symtab label set -> its Labels, made on
				    first use (as many as it has pairs) */
	int64_t empty_value;  /* index of a second "", 0 = not yet */
	struct ptrs maps;     /* native mappings, pprof ids 2.. */
	struct ptrs funcs, locs, samples;
	int64_t *comments;
	size_t n_comments, comments_cap;

	struct {
		int64_t name;
		uint64_t loc;
	} pseudo[PPROF_MAX_PSEUDO];
	size_t n_pseudo;

	Label *flag_labels[9]; /* cpu on/off, gil held/released, native y/n,
				  time python/native/system */
	unsigned mode;
	int proc_labels;
	int one_thread;	     /* pprof_opts.one_thread: only thread tid's samples */
	uint32_t wait_flags; /* the block and mutex flags ...            */
	uint32_t wait_want;  /* ... and those a sample must have (0: none) */
	uint64_t tid;
};

/* Frees every chunk of the arena. */
void pb_arena_free(struct arena *a);
/* Bytes from the builder's arena (freed with it); NULL sets b->oom. */
void *pb_balloc(struct builder *b, size_t size);
/* Appends p (NULL, or no memory, sets b->oom). */
void pb_ptrs_push(struct builder *b, struct ptrs *a, void *p);
/* The string table index of s (copied into the arena on first use). */
int64_t pb_str_idx(struct builder *b, const char *s);
/* The string table index of symtab string sid (not copied). */
int64_t pb_sid_idx(struct builder *b, uint32_t sid);
/* The string table index of a formatted string (at most
 * PPROF_MAX_COMMENT bytes). */
int64_t pb_str_fmt(struct builder *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends a comment: a string table index. */
void pb_add_comment(struct builder *b, int64_t idx);
/* The pprof location of symtab location lid, made (with its function
 * and mapping) on first use. */
uint64_t pb_location_id(struct builder *b, uint32_t lid);
/* Whether node nid and every node above it name what the symtab holds. */
int pb_stack_ok(const struct symtab *st, uint32_t nid);
/* The location of a pseudo-frame such as "[truncated]". */
uint64_t pb_pseudo_location(struct builder *b, const char *name);
/* A label key = num. */
Label *pb_num_label(struct builder *b, const char *key, int64_t num);
/* A label key = str (a string table index). */
Label *pb_str_label(struct builder *b, const char *key, int64_t str);
/* The label of flag which (cpu_state, gil, native; made once). */
Label *pb_flag_label(struct builder *b, unsigned which);
/* The Labels of symtab label set lsid (one per pair, sorted by key; made
 * once), *n of them; NULL (b->oom set) without memory. lsid must
 * exist. */
Label **pb_set_labels(struct builder *b, uint32_t lsid, size_t *n);
/* The "opcode" label: op's name in p's Python version. */
Label *pb_opcode_label(struct builder *b, const struct proc *p,
		       unsigned op);

#endif /* PYPROF_PPROF_BUILDER_H */
