/*
 * proc_impl.h - the per-process state's structs, private to proc.c and
 * the files it is split into: proc_def.c (a connection's definitions),
 * proc_heap.c (heap profiles) and proc_copy.c (taps and the copies
 * windows keep). Nothing else includes it: the rest of the collector
 * goes through proc.h, which its includers include first (for
 * proc_info, procs_tap and the limits; were it included here, the include
 * check would see a cycle: proc.c and proc.h are one module, which
 * includes this header).
 *
 * Runs on the collector's loop thread, as proc.c does.
 */
#ifndef PYPROF_PROC_IMPL_H
#define PYPROF_PROC_IMPL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "common/arith.h"
#include "common/idhash.h"
#include "pyprof/wire.h"

/* Connection id -> collector-wide id; v[0] unused, v[1..n] defined. */
struct idmap {
	uint32_t *v;
	size_t n, cap;
};

struct proc_thread {
	uint64_t tid;
	uint32_t name_sid;
};

struct proc {
	struct procs *reg;
	struct proc *prev, *next; /* registry list, in connect order; of a
				     copy (window.c), reg->copies */
	int is_copy;		  /* made by proc_copy_new */
	struct proc_info info;
	struct agg *agg;
	struct proc_thread *threads; /* [1..n_threads] */
	uint32_t n_threads;
	size_t threads_cap;
	struct idhash thread_hash;
	struct proc_session *sessions;		  /* its open connections */
	uint64_t lost_samples[PROC_LOST_MAX + 1]; /* in the window */
	uint64_t lost_value[PROC_LOST_MAX + 1];
	uint64_t cum_lost_buffer; /* WIRE_LOST_BUFFER, never reset */
	uint64_t cum_lost_away;	  /* PROC_LOST_AWAY, never reset */
	uint64_t n_refs;	  /* its share of procs.n_refs */
	uint64_t closed_refs;	  /* the largest closed session's n_refs */
	uint64_t max_mono_ns;	  /* latest sample time seen, 0 if none */
	uint64_t heard_unix_ns;	  /* collector's clock at the last frame */
	unsigned n_sessions;
	struct heapagg *heap;	 /* NULL until its first HEAP frame */
	uint64_t snap_seq;	 /* a snapshot asked for, not written; 0 */
	uint64_t n_written;	 /* of info.n_samples, those in a written
				   profile (proc_mark_written) */
	uint64_t n_acked;	 /* of those, acknowledged to the library */
	uint64_t tomb_unacked;	 /* of info.written_before, what we wrote for
				   its earlier object, unacknowledged */
	uint64_t snap_last_ns;	 /* CLOCK_MONOTONIC of the last one taken */
	uint64_t n_snap_skipped; /* too soon after the last, or no heap */
};

struct proc_session {
	struct proc *proc;
	struct proc_session *prev, *next; /* the process's sessions */
	struct idmap strings, functions, locations, nodes, threads;
	struct idmap mappings; /* PYPROF_NATIVE's MAPPING frames */
	struct idmap labels;   /* LABELS sets: collector-wide set ids */
	uint64_t def_bytes;
	unsigned uid; /* its client's (proc_session_set_uid) */
	int has_uid;
	uint64_t n_samples, n_lost;
	uint64_t n_refs;	    /* ids pushed into its maps */
	void *owner;		    /* its connection, for the written hook */
	uint64_t n_to_ack, n_acked; /* of n_samples: written; acknowledged */
};

/* What the registry wrote of a process it forgot, and had not
 * acknowledged: if the process comes back (a reconnection after its
 * program closed our socket), that is not lost. */
struct tomb {
	uint64_t pid, start_unix_ns, unacked;
};

struct procs {
	struct symtab *st;
	struct elfsym *es; /* native names; NULL: addresses only */
	struct proc *head, *tail;
	size_t n;
	uint64_t n_seen, total_samples, total_waits, total_lost;
	uint64_t n_refs;	 /* bound on symtab entries processes refer to */
	uint64_t gc_kept;	 /* entries the last compaction kept */
	uint64_t n_snap_pending; /* processes with snap_seq set */
	/* procs_heap_peak's */
	struct procs_heap_peak heap_peak;
	struct timeline *timeline; /* NULL unless --timeline */
	struct proc *copies;	   /* copies (window.c), a list */
	size_t n_copies;
	struct procs_tap tap;		/* all NULL: none */
	struct tomb tombs[PROCS_TOMBS]; /* a ring; pid 0: empty */
	unsigned n_tombs;
	void (*written_fn)(void *arg, void *owner);
	void *written_arg;
	/* Definitions open sessions hold (proc_def.c's charge): in all, and
	 * per uid (an entry at 0 bytes is free); the bounds
	 * procs_set_def_limits set, 0 for none. */
	uint64_t def_total, max_def_total, max_def_user;
	unsigned own_uid;
	struct def_user {
		unsigned uid;
		uint64_t bytes;
	} * def_users;
	size_t n_def_users, cap_def_users;
	uint64_t n_refused; /* HELLOs with WIRE_H_REFUSED */
	size_t n_refused_kinds;
	struct {
		uint64_t n;
		char why[PROCS_REFUSED_LEN];
	} refused[PROCS_REFUSED_KINDS + 1]; /* + "other reasons" */
};

/* Every id stored in a process or session counts towards the bound. */
static inline void add_refs(struct proc *p, uint64_t n)
{
	p->n_refs += n;
	p->reg->n_refs += n;
}

/* Gives back what session s was charged for its definitions
 * (proc_def.c), as it closes. */
void proc_def_release(struct proc_session *s);

/* Says "out of memory" in err; -ENOMEM. */
static inline int oom(char *err)
{
	snprintf(err, ERR_LEN, "out of memory");
	return -ENOMEM;
}

#endif /* PYPROF_PROC_IMPL_H */
