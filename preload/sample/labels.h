/*
 * labels.h - labels from the program's own code (the `pyprof` module's
 * pyprof.labels()), read by every sampler and sent as wire LABELS sets.
 *
 * The module (preload/python/pyprof.py, pure Python) keeps the labels in
 * force as one value: a tuple whose first item is a bytes object, the
 * labels encoded as "key\0value\0key\0value\0", keys sorted (so a set has
 * one encoding). Where that value lives:
 *   - 3.7+ (LABELS_CONTEXT): in a contextvars.ContextVar of the module's,
 *     so each asyncio task and each thread sees its own. The samplers find
 *     it as the interpreter does: thread state -> context (ts->context,
 *     whose offset the module finds at set-up, see pyprof_labels_find)
 *     -> its variables, a HAMT (hash array mapped trie) -> the entry of the
 *     module's ContextVar, looked up by the variable's hash.
 *   - 2.7 and 3.6 (LABELS_THREAD): no contextvars; the module tells the
 *     library the value of the calling thread on every change
 *     (pyprof_labels_thread), and the library keeps it per thread state.
 *
 * The module talks to the library through the functions below, exported
 * (exports.map: pyprof_*) and called with ctypes while holding the GIL.
 * The samplers copy the encoded bytes into their record (after the native
 * PCs: raw_labels in sampler.h); the agent turns each distinct encoding
 * into one LABELS set, numbered for the life of the process as every
 * definition is (labels_set_id).
 */
#ifndef PYPROF_LABELS_H
#define PYPROF_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/intern.h"
#include "pyprof/wire.h"

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
	int kind;            /* enum labels_kind (atomic)                   */
	uintptr_t var;       /* the module's ContextVar (CONTEXT)           */
	uint32_t hash;       /* its HAMT hash: hash(var) folded to 32 bits  */
	int ts_context;      /* offsetof(PyThreadState, context)            */
	int ctx_vars;        /* offsetof(PyContext, ctx_vars)               */
	int hamt_root;       /* offsetof(PyHamtObject, h_root)              */
	int tuple_item;      /* offsetof(PyTupleObject, ob_item)            */
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

/* The module's calls (labels.c says what each does), exported. */
int pyprof_labels_thread(void *ts, void *value);
long pyprof_labels_find(void *ts, void *ctx, long start);
int pyprof_labels_setup(int kind, void *var, long long hash, long ts_context,
			long tuple_item, void *tuple_type, void *bytes_type);
long pyprof_labels_read(void *ts, char *out, long cap);
void pyprof_labels_off(void);

/* LABELS_THREAD: the value the module set for thread state ts (0:
 * none). Async-signal-safe; any thread. */
uintptr_t labels_thread_value_sigsafe(uintptr_t ts);

/* LABELS_THREAD: sets thread state ts's value (0: none), on the thread
 * itself (pyprof_labels_thread). 0, or -1 when no slot is left. Lock-free
 * (readers: labels_thread_value_sigsafe). */
int labels_thread_put(uintptr_t ts, uintptr_t value);

/*
 * The LABELS set id (intern_labels) of the encoded labels p[0..n) and,
 * when task_len > 0, the label task=<task[0..task_len)>, an asyncio
 * task's name (asyncio.h), which replaces a label "task" from the
 * program. 0 if they are not a valid set (keys empty, reserved, unsorted
 * or repeated, more than WIRE_MAX_LABELS pairs: a torn read, since the
 * samplers read without the GIL and the module checks what it encodes),
 * if there is nothing, or when out of memory. Agent thread.
 */
uint32_t labels_set_id(struct intern *in, const uint8_t *p, size_t n,
		       const uint8_t *task, size_t task_len);

#endif /* PYPROF_LABELS_H */
