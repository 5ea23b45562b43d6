/*
 * sig_labels.h - the labels in force, read in signal context
 * (sig_labels.c) for every sampler; set up by sample/labels.c (see
 * labels.h for where the labels live).
 */
#ifndef PYPROF_SIG_LABELS_H
#define PYPROF_SIG_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/sampler.h"

/* The most bytes of one encoded set; the module refuses larger ones. */
#define LABELS_MAX_BYTES 1024

enum labels_kind {
	LABELS_OFF = 0,
	LABELS_CONTEXT = 1, /* 3.7+: a ContextVar, found through ts->context */
	LABELS_THREAD = 2   /* 2.7, 3.6: per thread state, set by the module */
};

/*
 * What the samplers read, written by pyprof_labels_setup before `kind` is
 * published (release store; the samplers load it with acquire).
 */
struct labels_abi {
	int kind;			  /* enum labels_kind (atomic)                   */
	uintptr_t var;			  /* the module's ContextVar (CONTEXT)           */
	uint32_t hash;			  /* its HAMT hash: hash(var) folded to 32 bits  */
	int ts_context;			  /* offsetof(PyThreadState, context)            */
	int ctx_vars;			  /* offsetof(PyContext, ctx_vars)               */
	int hamt_root;			  /* offsetof(PyHamtObject, h_root)              */
	int tuple_item;			  /* offsetof(PyTupleObject, ob_item)            */
	uintptr_t tuple_type, bytes_type; /* &PyTuple_Type, &PyBytes_Type   */
	/* the three HAMT node types, learned from their tp_name on first
	 * sight (atomic): bitmap, array, collision */
	uintptr_t node_type[3];
};

extern struct labels_abi labels_abi;

/*
 * The encoded labels in force on thread state ts copied to out (room for
 * LABELS_MAX_BYTES). Returns the length, 0 when none, when labels are off
 * or when a read faulted (a guarded region of its own).
 * Async-signal-safe; any thread.
 */
size_t labels_capture_sigsafe(uintptr_t ts, uint8_t *out);

/* The same, for the labels of context ctx (a PyContext: an asyncio task's
 * own, asyncio.h) rather than a thread's. */
size_t labels_capture_ctx_sigsafe(uintptr_t ctx, uint8_t *out);

/* LABELS_THREAD: the value the module set for thread state ts (0:
 * none). Async-signal-safe; any thread. */
uintptr_t labels_thread_value_sigsafe(uintptr_t ts);

/* LABELS_THREAD: sets thread state ts's value (0: none), on the thread
 * itself (pyprof_labels_thread). 0, or -1 when no slot is left. Lock-free
 * (readers: labels_thread_value_sigsafe). */
int labels_thread_put(uintptr_t ts, uintptr_t value);


/* Room a record reserves for labels: LABELS_MAX_BYTES while the module
 * has set them up, else 0 (labels.h). Async-signal-safe. */
size_t sampler_labels_room_sigsafe(void);

/* Reads the labels in force on rec's thread state (rec->tstate, set by
 * the frame walk; none without one) into the end of rec, after its
 * frames and native PCs, if room (from sampler_labels_room_sigsafe
 * before the record was reserved) allows; sets rec->n_labels.
 * Async-signal-safe. */
void sampler_labels_sigsafe(struct raw_sample *rec, size_t room);

#endif /* PYPROF_SIG_LABELS_H */
