/*
 * merge.h - one stack from a sample's native and Python stacks
 * (PYPROF_NATIVE).
 *
 * The native stack says which C functions were running; the Python stack
 * says which Python frames. Every call of the interpreter's eval loop
 * (_PyEval_EvalFrameDefault; PyEval_EvalFrameEx on 2.7) on the native
 * stack runs one group of Python frames: one frame on <= 3.10, the frames
 * from an entry frame leafward on 3.11+ (RAW_ENTRY in sampler.h). The merge
 * puts each group where its eval-loop frame is. From the root:
 *
 *   - native frames before the first eval-loop frame are kept (the way
 *     into Python: _start, __libc_start_main, main, Py_BytesMain, ... or a
 *     thread's clone, start_thread, ...);
 *   - each eval-loop frame is replaced by its group's Python frames, in
 *     order;
 *   - between two groups, native frames outside the interpreter are kept
 *     (a C extension calling back into Python) and the interpreter's own
 *     frames are folded away (the call machinery: _PyObject_Vectorcall,
 *     _PyFunction_Vectorcall, slot wrappers...), as in a Python-only
 *     profile; with "all" (PYPROF_NATIVE=all) they are kept;
 *   - below the innermost group everything is kept, the interpreter's own
 *     functions too (PyDict_SetItem, list_sort, a GC collection): that is
 *     where the time goes;
 *   - frames of pyprof itself (its thread trampoline) are dropped.
 *
 * When the counts line up (as many eval-loop frames as groups, or one more:
 * the innermost eval loop interrupted while entering or leaving, before its
 * frame is linked or after it is unlinked, which keeps it as a native
 * frame) the merge is exact. Otherwise nothing is guessed: the stack is a
 * marker frame at the root, then every Python frame, then the native frames
 * below the innermost eval-loop frame (those are certain to run under the
 * innermost Python frame). The same shape, with its own marker, when the
 * native stack was cut (deeper than SAMPLER_NATIVE_MAX) or not taken.
 *
 * Pure: no I/O, no allocation, any thread (the agent calls it; the unit
 * test runs it against hand-made stacks).
 */
#ifndef PYPROF_MERGE_H
#define PYPROF_MERGE_H

#include <stdint.h>

/* What a native frame is (native_classify in native.h decides). */
enum merge_class {
	MERGE_OTHER = 0,  /* outside the interpreter: kept              */
	MERGE_INTERP = 1, /* the interpreter's own code (not the loop)  */
	MERGE_EVAL = 2,	  /* the eval loop: replaced by a Python group   */
	MERGE_SELF = 3	  /* pyprof's own code: dropped                  */
};

enum merge_kind { MERGE_PY = 1,
		  MERGE_NATIVE = 2,
		  MERGE_MARK = 3 };

/* Why a stack is not an exact merge; the marker frame's name. */
enum merge_status {
	MERGE_EXACT = 0,
	MERGE_MISMATCH = 1,  /* "[merge failed]": the counts do not line up */
	MERGE_TRUNCATED = 2, /* "[native stack truncated]"                   */
	MERGE_NO_NATIVE = 3  /* "[native unwind failed]"                     */
};

/* One frame of the merged stack: a Python frame or a native frame, by its
 * index in the input arrays (leaf first), or the marker (index unused). */
struct merge_item {
	uint8_t kind; /* enum merge_kind */
	uint8_t pad[3];
	uint32_t index;
};

struct merge_in {
	const uint8_t *py_entry; /* per Python frame, leaf first: RAW_ENTRY? */
	int n_py;
	int py_complete;	  /* the Python walk reached the outermost
	                             frame (not cut at max depth)             */
	const uint8_t *nat_class; /* per native frame, leaf first: enum
	                             merge_class; [0] is the interrupted PC  */
	int n_nat;
	int nat_truncated; /* root side of the native stack cut       */
	int nat_failed;	   /* no native stack (n_nat is then 0)       */
	int keep_all;	   /* PYPROF_NATIVE=all                       */
};

/* Size out[] must have: every frame of both stacks, plus a marker. */
static inline int merge_cap(const struct merge_in *in)
{
	return in->n_py + in->n_nat + 1;
}

/*
 * Writes the merged stack into out[0..*n_out), root first. out has at
 * least merge_cap(in) items. Returns enum merge_status (MERGE_EXACT also
 * when one of the stacks is empty: a native-only or Python-only stack).
 */
int merge_stacks(const struct merge_in *in, struct merge_item *out,
		 int *n_out);

#endif /* PYPROF_MERGE_H */
