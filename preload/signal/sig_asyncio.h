/*
 * sig_asyncio.h - asyncio's tasks as the wall sampler reads them in its
 * guarded region (sig_asyncio.c); the layouts are found by
 * sample/asyncio.c (see asyncio.h).
 */
#ifndef PYPROF_SIG_ASYNCIO_H
#define PYPROF_SIG_ASYNCIO_H

#include <stddef.h>
#include <stdint.h>

#include "cpython/pydict.h"

/* offsetof(PyTypeObject, tp_base): the same in every CPython 3.x on a
 * 64-bit target (32 pointer-sized fields after the variable-size header
 * come first). */
#define ASYNCIO_TP_BASE 256

/* Bytes of a task name kept (UTF-8; longer names are cut at a character
 * boundary). */
#define ASYNCIO_NAME_MAX 128
/* Tasks read per thread and tick; a loop with more has the rest unseen. */
#define ASYNCIO_MAX_TASKS 4096
/* Leaf tasks sampled per thread and tick. */
#define ASYNCIO_MAX_SAMPLED 32

enum asyncio_kind {
	ASYNCIO_NONE = 0,  /* not found (yet), or off (PYPROF_ASYNCIO=0)    */
	ASYNCIO_LISTS = 1, /* 3.14+: per-thread lists of C tasks             */
	ASYNCIO_SETS = 2   /* 3.7-3.13: the asyncio module's registry        */
};

/* A pure-Python task's fields (asyncio.tasks._PyTask), by name in its
 * instance dictionary (pydict.h). */
enum asyncio_py_field {
	ASYNCIO_PY_LOOP,
	ASYNCIO_PY_NAME,
	ASYNCIO_PY_CORO,
	ASYNCIO_PY_CONTEXT,
	ASYNCIO_PY_WAITER,
	ASYNCIO_PY_CALLBACKS,
	ASYNCIO_PY_N
};

/* What the guarded half reads; written by asyncio.c before `kind` is
 * published (release store, acquire load). */
struct asyncio_abi {
	int kind; /* enum asyncio_kind (atomic)          */
	/* An event loop was seen running (atomic, relaxed; set by the wall
	 * thread: sig_asyncio.c on LISTS, wall.c's look at frames when no
	 * extension was seen): asyncio is in use, its registry worth a look
	 * with the GIL. */
	int loop_seen;
	/* TaskObj (the C Task) */
	uint64_t task_loop; /* fut_loop                            */
	uint64_t task_name; /* a str, or (3.12+) an int n for
	                                 "Task-n", made lazily               */
	uint64_t task_coro;
	uint64_t task_context;
	uint64_t task_fut_waiter;	 /* SETS: the future it waits on        */
	uint64_t task_awaited_by;	 /* LISTS: NULL, a task, or a set       */
	uint64_t task_awaited_by_is_set; /* LISTS: char                      */
	uint64_t task_is_task;		 /* LISTS: char                         */
	uint64_t task_node;		 /* LISTS: its struct llist_node        */
	/* LISTS: where thread and interpreter states keep their lists, the
	 * running loop and task */
	uint64_t ts_running_loop, ts_running_task, ts_tasks_head;
	uint64_t interp_tasks_head;
	/* The registry's objects (3.7-3.11 one WeakSet's set of weak
	 * references; 3.12+ the scheduled tasks' and the eager tasks', a
	 * plain set). SETS: every task; LISTS: the pure-Python tasks, which
	 * 3.14+ keep there (0 until the names thread found them). */
	uintptr_t weak_tasks;  /* set of weakrefs to tasks            */
	uintptr_t eager_tasks; /* set of tasks, or 0                  */
	/* types */
	uintptr_t task_type; /* SETS: _asyncio.Task, or 0 when the
	                                 extension is missing                */
	/* Pure-Python tasks: their class (a subclass is one too), where an
	 * instance keeps its attributes, and their names. py_task_type is
	 * published (release) after the rest. */
	uintptr_t py_task_type; /* asyncio.tasks._PyTask, or 0         */
	struct pydict_layout dict;
	struct pydict_key py_keys[ASYNCIO_PY_N];
	uintptr_t coro_type, gen_type, unicode_type, long_type, set_type;
	uintptr_t weakref_type;
	/* SETS: what a task's done-callbacks may be */
	uintptr_t function_type, method_type, cell_type, tuple_type;
	uintptr_t list_type, partial_type;
	uint64_t tuple_items; /* offsetof(PyTupleObject, ob_item)    */
};

extern struct asyncio_abi asyncio_abi;


/* What one thread is doing, for the wall sampler (sig_asyncio.c). */
enum asyncio_state {
	ASYNCIO_NOT_LOOP = 0, /* no event loop, or it runs something else   */
	ASYNCIO_RUNNING = 1,  /* a task runs: its name is in the view       */
	ASYNCIO_WAITING = 2   /* the loop waits: n_leaves tasks to sample   */
};

struct asyncio_view {
	int state;
	char name[ASYNCIO_NAME_MAX]; /* RUNNING: the task's name            */
	size_t name_len;
	int n_leaves; /* WAITING: leaves found               */
};

/*
 * Reads thread state ts's event loop, guarded. selecting: the thread's
 * frames show it in the loop's selector (asyncio_loop_frame_sigsafe).
 * Returns the state (also in *v). Wall sampler thread only (the task
 * table is its own).
 */
int asyncio_view_sigsafe(uintptr_t ts, int selecting, struct asyncio_view *v);

/*
 * WAITING, after asyncio_view_sigsafe: the stack of leaf i (0 <= i <
 * n_leaves) into out[0..max), leaf first, task names to name/name_len,
 * the task's context (for its labels) to *ctx. Returns the frames
 * written, -1 if a read faulted.
 */
int asyncio_leaf_sigsafe(int i, void *out, int max, char *name,
			 size_t *name_len, uintptr_t *ctx);

/* Where, in a thread's own frames (leaf first), the event loop's
 * _run_once is: its index, or -1; *selecting: the frame above it, the
 * innermost, is the selector's select. */
int asyncio_loop_frame_sigsafe(const void *frames, int n, int *selecting);

#endif /* PYPROF_SIG_ASYNCIO_H */
