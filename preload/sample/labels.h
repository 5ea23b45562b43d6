/*
 * labels.h - labels from the program's own code (the `pyprof` module's
 * pyprof.labels()), read by every sampler and sent as wire LABELS sets.
 *
 * The module (preload/module/pyprof.py, pure Python) keeps the labels in
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
#include "signal/sig_labels.h"

/* The module's calls (labels.c says what each does): the bodies of
 * interpose/pyprof.c's pyprof_labels_* (exports.map). */
int labels_module_thread(void *ts, void *value);
long labels_module_find(void *ts, void *ctx, long start);
int labels_module_setup(int kind, void *var, long long hash, long ts_context,
			long tuple_item, void *tuple_type, void *bytes_type);
long labels_module_read(void *ts, char *out, long cap);
void labels_module_off(void);

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
