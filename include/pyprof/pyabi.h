/*
 * pyabi.h - what pyprof knows about one CPython version's memory layout.
 *
 * Everything version-specific that the sampler reads lives in one struct
 * pyabi: byte offsets of the fields we read, and a few small enums saying
 * how to interpret them. One row per supported minor version sits in
 * pyabi_table.h, generated from each interpreter's own headers by
 * tools/gen-pyabi (re-run it to add a version; the committed table is what
 * the library uses at run time). pyabi.c picks the row for the running
 * interpreter at start-up and refuses to guess: an unknown version, a debug
 * build or a free-threaded build leaves pyprof inert.
 *
 * Read by: the signal handler (signal/sig_frames.c), the wall sampler and the
 * agent's symbolizer. The struct is written once, before any timer is
 * armed, and only read afterwards, so it needs no synchronization.
 *
 * What a new CPython version needs: a row from tools/gen-pyabi (run it
 * against the new headers; tools/get-sid-pythons fetches Debian's builds),
 * and a look at what moved. 3.14: f_executable is a _PyStackRef whose low
 * bits are tags (code_ref_tag_mask masks them); frame owners were
 * renumbered (owner_cstack = 4, and 3 = FRAME_OWNED_BY_INTERPRETER is also
 * an entry sentinel: owner_skip2). 3.15 dropped FRAME_OWNED_BY_CSTACK:
 * owner_cstack = 3, no owner_skip2.
 *
 * 3.13+: the row actually used is built at start-up from the process's
 * own _Py_DebugOffsets (pyabi_from_debug_offsets): the compiled row only
 * supplies what the block does not say, and a compiled row that disagrees
 * with the block loses (logged). A minor with no compiled row (a 3.16
 * pre-release) is laid out from its block when the block keeps a known
 * shape, the other facts taken from the newest 3.13+ row: an assumption
 * (owner values, tag bits and bit positions change rarely, and each
 * change so far came with a changed block) that the walker's own checks
 * back up: every code object is type-checked and every read guarded.
 */
#ifndef PYPROF_PYABI_H
#define PYPROF_PYABI_H

#include <stddef.h>
#include <stdint.h>

/* How a thread's frames are chained. */
enum pyabi_frame_kind {
	PYABI_FRAME_OBJECT = 1, /* <= 3.10: PyFrameObject via tstate->frame  */
	PYABI_FRAME_INTERP = 2	/* >= 3.11: _PyInterpreterFrame               */
};

/*
 * How a frame tells where it is in its code. In every case the byte offset
 * handed to pycode_addr2line is used as is, never stepped back: for 3.11+
 * it is the pointer minus (code + co_code_adaptive). tests/versions/pyabi.sh
 * checks this against PyFrame_GetLineNumber for callers and callees; on
 * 3.13 stepping back one unit puts callers on the wrong line. A negative
 * offset (f_lasti == -1 before the first instruction, <= 3.10) means
 * "not started": CPython then reports co_firstlineno.
 */
enum pyabi_lasti_kind {
	PYABI_LASTI_BYTES = 1, /* <= 3.9: int f_lasti, a byte offset          */
	PYABI_LASTI_UNITS = 2, /* 3.10: int f_lasti, in 2-byte code units     */
	PYABI_LASTI_PREV = 3,  /* 3.11-3.12: prev_instr, a pointer to the last
	                          instruction started                         */
	PYABI_LASTI_NEXT = 4   /* 3.13+: instr_ptr, the instruction executing
	                          or about to start                           */
};

/* Line table formats. */
enum pyabi_lines_kind {
	PYABI_LINES_LNOTAB = 1,	  /* <= 3.9 co_lnotab (signed deltas 3.6+)   */
	PYABI_LINES_LNOTAB27 = 2, /* 2.7 co_lnotab, unsigned line deltas     */
	PYABI_LINES_310 = 3,	  /* 3.10 co_linetable (PEP 626)             */
	PYABI_LINES_311 = 4	  /* 3.11+ location table                    */
};

enum pyabi_str_kind {
	PYABI_STR_BYTES = 1,  /* 2.7: PyStringObject, ob_size + ob_sval      */
	PYABI_STR_UNICODE = 2 /* 3.x: PEP 393 compact/non-compact unicode     */
};

/*
 * Where a thread outside the interpreter (no GIL, no C API, guarded reads
 * only) learns which thread state holds the GIL; pyabi_gil_holder reads it.
 * The exact semantics of each kind are documented there.
 */
enum pyabi_gil_kind {
	PYABI_GIL_CURRENT_SYM = 1, /* 2.7, 3.6: the exported _PyThreadState_Current
	                              (2.7 a PyThreadState *, 3.6 an atomic
	                              address holding one)                     */
	PYABI_GIL_RUNTIME = 2,	   /* 3.7-3.11: _PyRuntime.gilstate.tstate_current */
	PYABI_GIL_INTERP_PTR = 3   /* 3.12+: interp->ceval.gil, a pointer to a
	                              struct _gil_runtime_state: locked and
	                              last_holder                              */
};

/* Where a suspended frame's value stack ends (struct pyabi f_stack). */
enum pyabi_stack_kind {
	PYABI_STACK_TOP = 1,	    /* 3.7-3.9: PyObject **f_stacktop, one past
	                              the top                                  */
	PYABI_STACK_DEPTH = 2,	    /* 3.10: int f_stackdepth, entries from
	                              f_valuestack                             */
	PYABI_STACK_LOCALSPLUS = 3, /* 3.11-3.13: int stacktop, entries from
	                              localsplus                               */
	PYABI_STACK_POINTER = 4	    /* 3.14+: _PyStackRef *stackpointer, one
	                              past the top; entries are tagged         */
};

/* Where an object's attributes are (pydict.h says how each is read). */
enum pyabi_dict_kind {
	PYABI_DICT_NONE = 0,	/* not known: no attribute is read          */
	PYABI_DICT_OFFSET = 1,	/* 3.7-3.10: a dict at tp_dictoffset         */
	PYABI_DICT_MANAGED = 2, /* 3.11: dict at -24, values at -32          */
	PYABI_DICT_TAGGED = 3,	/* 3.12: dict, or values - 1, at -24         */
	PYABI_DICT_INLINE = 4	/* 3.13+: inline values, else dict at -24    */
};

/* How an ordinary dict (not an instance's) keeps its entries: the
 * thread names read from outside (collector/remote/remote_names.c). */
enum pyabi_dict_table {
	PYABI_TABLE_27 = 1,   /* 2.7: ma_mask + 1 slots at ma_table          */
	PYABI_TABLE_SIZE = 2, /* 3.6-3.10: a keys object with dk_size        */
	PYABI_TABLE_LOG2 = 3  /* 3.11+: a keys object with dk_log2_size      */
};

/* An offset that does not exist in this version. */
#define PYABI_NONE (-1)

struct pyabi {
	int major, minor; /* e.g. 3, 11                            */
	int frame_kind;	  /* enum pyabi_frame_kind                 */
	int lasti_kind;	  /* enum pyabi_lasti_kind                 */
	int lines_kind;	  /* enum pyabi_lines_kind                 */
	int str_kind;	  /* enum pyabi_str_kind                   */

	/* _PyRuntimeState (3.7+): interpreters.head, the list of interpreters.
	 * Added for the walker: from _PyRuntime (dlsym) it reaches every
	 * interpreter without calling into CPython. PYABI_NONE on 2.7 and 3.6,
	 * where the head is a static in pystate.c: use PyInterpreterState_Head().
	 */
	int rt_interp_head;

	/* PyInterpreterState */
	int interp_next;	/* PyInterpreterState *next              */
	int interp_tstate_head; /* tstate_head / threads.head            */

	/* PyThreadState */
	int ts_next;		  /* PyThreadState *next                   */
	int ts_interp;		  /* PyInterpreterState *interp            */
	int ts_thread_id;	  /* unsigned long thread_id (pthread_t)   */
	int ts_native_thread_id;  /* 3.11+: OS tid (gettid); else NONE     */
	int ts_frame;		  /* <= 3.10 frame, 3.13+ current_frame;
	                                PYABI_NONE on 3.11-3.12               */
	int ts_cframe;		  /* 3.11-3.12 cframe; else PYABI_NONE     */
	int cframe_current_frame; /* _PyCFrame.current_frame (3.11-3.12)   */

	/* The GIL (pyabi_gil_holder). Offsets of atomic fields are those of
	 * the value inside CPython's _Py_atomic_* wrapper (3.7-3.12), so the
	 * reader reads a plain int32_t or pointer there. */
	int gil_kind;		  /* enum pyabi_gil_kind                   */
	int rt_pending_finishing; /* 3.8: _PyRuntime.ceval.pending.finishing:
	                                once set, Py_AddPendingCall prints a
	                                SystemError on the program's stderr,
	                                so threadnames.c must not call it; else NONE */
	int rt_tstate_current;	  /* 3.7-3.11: _PyRuntime.gilstate.
	                                tstate_current; else NONE             */
	int rt_gil;		  /* 3.7-3.11: _PyRuntime.ceval.gil, the
	                                struct _gil_runtime_state; not used by
	                                pyabi_gil_holder (see there), kept so
	                                the tests can compare; else NONE      */
	int interp_gil_ptr;	  /* 3.12+: PyInterpreterState.ceval.gil, a
	                                struct _gil_runtime_state *; else NONE */
	int interp_gil;		  /* 3.12+: PyInterpreterState._gil, the
	                                interpreter's own GIL (ceval.gil points
	                                here unless it shares the main one);
	                                for the _Py_DebugOffsets check        */
	int gil_locked;		  /* 3.7+: _gil_runtime_state.locked, an
	                                int: 1 held, 0 free, -1 not created   */
	int gil_cond;		  /* 3.7+: _gil_runtime_state.cond, the
	                                pthread_cond_t a thread waiting for the
	                                GIL sleeps on and drop_gil signals
	                                (waits.h)                             */
	int gil_holder;		  /* 3.7+: _gil_runtime_state.last_holder,
	                                a PyThreadState *                     */

	/* Frames: PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	int f_back;		    /* f_back / previous                     */
	int f_code;		    /* f_code / f_executable                 */
	int f_lasti;		    /* f_lasti / prev_instr / instr_ptr      */
	int f_is_entry;		    /* 3.11: char is_entry; else NONE        */
	int f_owner;		    /* 3.11+: char owner; else NONE          */
	int owner_generator;	    /* FRAME_OWNED_BY_GENERATOR (3.11+)      */
	int owner_cstack;	    /* FRAME_OWNED_BY_CSTACK (3.12+), else -1 */
	int owner_skip2;	    /* another owner to skip (3.14+), else -1 */
	uint64_t code_ref_tag_mask; /* 3.14+: tag bits of f_executable       */

	/* PyCodeObject */
	int co_filename;
	int co_name;
	int co_qualname; /* 3.11+; else PYABI_NONE                */
	int co_firstlineno;
	int co_linetable;      /* co_lnotab (<= 3.9) / co_linetable     */
	int co_code_adaptive;  /* 3.11+: offset of the inline bytecode  */
	int co_code;	       /* <= 3.10: the bytecode's bytes object;
	                                else PYABI_NONE                      */
	int co_firsttraceable; /* 3.11+: _co_firsttraceable; else NONE  */
	int co_flags;	       /* <= 3.10: int co_flags (tells a
	                                generator's code); else NONE: 3.11+
	                                frames say it by their owner         */

	/* Objects */
	int ob_type;	/* offsetof(PyObject, ob_type)           */
	int var_size;	/* offsetof(PyVarObject, ob_size)        */
	int bytes_sval; /* offsetof(PyBytesObject, ob_sval)      */

	/* PEP 393 unicode (3.x). Bit positions count from the first byte of
	 * the 4-byte state bitfield: bit n is bit n % 8 of byte n / 8, which
	 * is how pycode_read_str assembles it (independent of host order). */
	int u_length;	    /* PyASCIIObject.length                  */
	int u_state;	    /* offset of the state bitfield          */
	int u_kind_shift;   /* bit position of kind (3 bits)         */
	int u_compact_bit;  /* bit position of compact               */
	int u_ascii_bit;    /* bit position of ascii                 */
	int u_ascii_size;   /* sizeof(PyASCIIObject)                 */
	int u_compact_size; /* sizeof(PyCompactUnicodeObject)        */
	int u_data_any;	    /* offsetof(PyUnicodeObject, data.any)   */

	/* Coroutines (3.7+; else NONE), for the asyncio view (asyncio.h). */
	int gen_frame;	     /* <= 3.10 gi_frame (a PyFrameObject *);
	                                3.11+ gi_iframe (the frame itself)   */
	int gen_frame_state; /* 3.11+: int8_t gi_frame_state          */
	int gen_suspended;   /* 3.11+: the state of a coroutine
	                                suspended in an await (3.13+
	                                FRAME_SUSPENDED_YIELD_FROM)           */
	int gen_yielded;     /* 3.13+: FRAME_SUSPENDED, at a plain
	                                yield (a generator-based coroutine);
	                                3.11-3.12 one state covers both, NONE */
	int f_localsplus;    /* the frame's locals (then its stack)  */
	int f_valuestack;    /* 3.10: PyObject **f_valuestack         */
	int f_stack_kind;    /* enum pyabi_stack_kind                 */
	int f_stack;	     /* where the value stack's top is known  */
	int func_closure;    /* PyFunctionObject.func_closure (3.7+)  */

	/* Instance dictionaries (pydict.h), for asyncio's pure-Python tasks
	 * (3.7+; else dict_kind 0: no attribute is read). dict_values_at is
	 * the first value in a values array (3.13+: capacity, size... come
	 * first); ht_cached_keys the class's shared keys (3.11+; else NONE). */
	int dict_kind;	    /* enum pyabi_dict_kind                  */
	int dict_old_keys;  /* 1: the 3.7-3.10 keys object           */
	int dict_values_at; /* PyDictValues.values                   */
	int ht_cached_keys; /* PyHeapTypeObject.ht_cached_keys       */
	int tuple_items;    /* offsetof(PyTupleObject, ob_item)      */

	/* asyncio's C tasks, 3.7-3.13 (3.14+ say it in their own
	 * _Py_AsyncioModuleDebugOffsets; else NONE). TaskObj is private to
	 * Modules/_asynciomodule.c: tools/pyabi_measure.py finds each field
	 * in a live task of the interpreter by the address it holds. */
	int task_loop;	     /* fut_loop                              */
	int task_fut_waiter; /* task_fut_waiter                       */
	int task_coro;	     /* task_coro                             */
	int task_name;	     /* task_name (3.8+; else NONE)           */
	int task_context;    /* task_context                          */

	/* The opcodes that call (CALL*, PRECALL*, INSTRUMENTED_CALL*, the
	 * specialized forms included), one bit each, as this version's code
	 * stores them (tools/pyabi_measure.py asks the interpreter's dis and
	 * opcode modules): a leaf frame executing one is inside what it
	 * called, which, the frame being the leaf, is C (time=native). */
	uint64_t call_ops[4];

	/* Thread names read from outside (collector/remote/remote_names.c):
	 * sys.modules -> threading -> _active -> the Thread's name, on every
	 * version (pydict.h reads the dicts). */
	int interp_modules; /* sys.modules: PyInterpreterState.modules
	                       (3.12+ imports.modules)               */
	int module_dict;    /* PyModuleObject.md_dict, measured      */
	int dict_table;	    /* enum pyabi_dict_table                 */
	int dict27_mask;    /* 2.7: PyDictObject.ma_mask; else NONE  */
	int dict27_table;   /* 2.7: PyDictObject.ma_table; else NONE */

	/* The objects the asyncio view, the labels and the thread names
	 * read from outside read besides frames and code (sig_asyncio.c,
	 * sig_pydict.c, sig_labels.c), by name: offsetof and sizeof from
	 * the headers; the 3.6-3.10 keys object (private to
	 * Objects/dict-common.h), functools.partial and TaskObj's first
	 * callback measured by tools/pyabi_measure.py. PYABI_NONE (a flag:
	 * 0) where the version has no such field, or before 3.7 where
	 * nothing reads it (the dicts' are there on 2.7 and 3.6 too: the
	 * thread names read them on every version). */
	int tp_basicsize;	       /* PyTypeObject.tp_basicsize        */
	int tp_name;		       /* PyTypeObject.tp_name             */
	int tp_flags;		       /* PyTypeObject.tp_flags            */
	int tp_dictoffset;	       /* PyTypeObject.tp_dictoffset       */
	uint64_t tpflag_managed_dict;  /* 3.11+ Py_TPFLAGS_MANAGED_DICT    */
	int obj_managed_dict;	       /* 3.11+: the managed dict (3.12:
	                                  or tagged values), from the object
	                                  (negative)                       */
	int obj_managed_values;	       /* 3.11: the values pointer, from
	                                  the object (negative)            */
	uint64_t tpflag_inline_values; /* 3.13+ Py_TPFLAGS_INLINE_VALUES   */
	int dictvalues_capacity;       /* 3.13+ PyDictValues.capacity, u8  */
	int dictvalues_valid;	       /* 3.13+ PyDictValues.valid, u8     */
	int dict_ma_keys;	       /* PyDictObject.ma_keys             */
	int dict_ma_values;	       /* PyDictObject.ma_values           */
	int dk_size;		       /* 3.6-3.10 dk_size, Py_ssize_t     */
	int dk_log2_index_bytes;       /* 3.11+, u8                        */
	int dk_kind;		       /* 3.11+, u8                        */
	int dk_kind_general;	       /* 3.11+ DICT_KEYS_GENERAL          */
	int dk_nentries;	       /* dk_nentries, Py_ssize_t          */
	int dk_indices;		       /* dk_indices: the index table      */
	int dict_entry_size;	       /* PyDictKeyEntry {hash, key, value}
	                                  (2.7: PyDictEntry)               */
	int dict_entry_hash;	       /* its hash: an int key's lookup    */
	int dict_entry_key;
	int dict_entry_value;
	int dict_uentry_size; /* 3.11+ PyDictUnicodeEntry {key, value} */
	int dict_uentry_key;
	int dict_uentry_value;
	int set_mask;	    /* PySetObject.mask                  */
	int set_table;	    /* PySetObject.table                 */
	int set_entry_size; /* sizeof(setentry)                  */
	int set_entry_key;  /* setentry.key                      */
	int list_items;	    /* PyListObject.ob_item              */
	int weakref_object; /* PyWeakReference.wr_object         */
	int method_self;    /* PyMethodObject.im_self            */
	int cell_ref;	    /* PyCellObject.ob_ref               */
	int long_tag;	    /* 3.12+ _PyLongValue.lv_tag         */
	int long_digits;    /* 3.12+ _PyLongValue.ob_digit       */
	int partial_args;   /* functools.partial's args (3.7+)   */
	int task_callback0; /* TaskObj fut_callback0 (3.7-3.13)  */

	/* What the version does, beyond where its fields are: the facts
	 * the library acts on outside preload/cpython/ (tools/pyabi_probe.c's
	 * facts(); asyncio's from asyncio itself), 1 or 0. */
	int py2_c_api;		   /* PyInt, PyString, Thread.__name mangled */
	int mem_allocators;	   /* PEP 445 PyMem_SetAllocator              */
	const char *eval_frame;	   /* the frame evaluator's symbol           */
	int waits_profiled;	   /* block and mutex profiles (3.8+)         */
	int locks_park;		   /* a PyMutex waiter parks on a semaphore
	                              of its parking-lot entry (3.13+)    */
	int pending_calls_cheap;   /* a pending call not yet run costs the
	                              other threads nothing (3.9+)        */
	int fork_warns_of_threads; /* os.fork warns of other threads (3.12+) */
	int asyncio_task_lists;	   /* C tasks on per-thread lists, read
	                              without the GIL (3.14+)             */
	int asyncio_task_names;	   /* tasks have names (3.8+)                */
	int asyncio_eager_tasks;   /* the registry is _scheduled_tasks and
	                              _eager_tasks (3.12+), else _all_tasks */

	/* Context variables (3.7+; else PYABI_NONE), for the labels */
	int ctx_vars;  /* PyContext.ctx_vars: a HAMT             */
	int hamt_root; /* PyHamtObject.h_root: its root node      */
	/* The HAMT's nodes (private to Python/hamt.c), from the node's start:
	 * measured by tools/pyabi_measure.py in a live context */
	int hamt_bitmap_bits;	  /* uint32_t b_bitmap                   */
	int hamt_bitmap_array;	  /* b_array: key, value pairs           */
	int hamt_array_items;	  /* a_array: 32 sub-nodes               */
	int hamt_collision_array; /* c_array: key, value pairs           */
};

/* Whether major.minor's _PyRuntime starts with _Py_DebugOffsets (3.13+):
 * a row can be built from, and checked against, the running interpreter.
 * Asked before a row is chosen. */
static inline int pyabi_has_debug_offsets(int major, int minor)
{
	return major > 3 || (major == 3 && minor >= 13);
}

/* Whether op is one of abi's calling opcodes (call_ops). Any context. */
static inline int pyabi_calls(const struct pyabi *abi, unsigned op)
{
	return op < 256 && ((abi->call_ops[op >> 6] >> (op & 63)) & 1);
}

/* The rows of pyabi_table.h, last entry has major == 0. */
extern const struct pyabi pyabi_table[];

/*
 * Picks the row for major.minor. Returns NULL for a version not in the
 * table. Any thread; no side effects.
 */
const struct pyabi *pyabi_find(int major, int minor);

/*
 * 3.13+: checks abi against the _Py_DebugOffsets block that _PyRuntime
 * starts with. runtime is &_PyRuntime in the interpreter's memory; every
 * access goes through read(dst, src, n), which returns 0 on success and
 * non-zero if src could not be read (guard_copy fits). Compares the
 * cookie "xdebugpy", the version's major.minor, free_threaded == 0, and
 * each offset the block shares with struct pyabi (interpreter list,
 * thread state, frame, code object, object header, bytes, unicode, and
 * the interpreter's GIL: ceval.gil, _gil, _gil.locked, _gil.last_holder).
 *
 * Returns 0 when everything agrees, and also for versions before 3.13,
 * which have no block (nothing is read); -EPROTO on the first mismatch,
 * described in why (NUL-terminated, truncated to why_len; why may be
 * NULL); -EFAULT when a read fails; -EINVAL for a NULL abi or runtime.
 * Constructor or agent thread; reads about 1 KiB (the values
 * pyabi_from_debug_offsets reads).
 */
int pyabi_check_debug_offsets(const struct pyabi *abi, const void *runtime,
			      int (*read)(void *dst, const void *src, size_t n),
			      char *why, size_t why_len);

/*
 * A row built at start-up from the interpreter's own _Py_DebugOffsets
 * (pyabi_from_debug_offsets), and where its parts came from.
 */
struct pyabi_derived {
	struct pyabi abi; /* the row to use                        */
	int facts_minor;  /* compiled row of the facts not in the
	                                block (owners, tag bits, bit positions) */
	int layout_minor; /* whose _Py_DebugOffsets layout read it */
};

/*
 * 3.13+: builds out->abi, the row for major.minor, from the
 * _Py_DebugOffsets block at runtime (&_PyRuntime in the interpreter's
 * memory), for a version with no compiled row or to check one.
 *
 * From the block (what CPython states about itself): the interpreter
 * list, thread states, frames, code objects, object headers, bytes,
 * unicode sizes and the interpreter's GIL (ceval.gil, _gil, and locked
 * and last_holder inside it). Not in the block, so taken from a compiled
 * row (the "facts" row: this version's own unless withheld, else the
 * newest 3.13+ row of the same major): the frame and line-table kinds,
 * frame owner values, _PyStackRef tag bits, the unicode state's bit
 * positions, the GIL kind; _co_firsttraceable keeps the facts row's
 * distance from co_code_adaptive, and before 3.15 sizeof
 * (PyCompactUnicodeObject) its distance from sizeof(PyASCIIObject).
 *
 * The block's own layout changes between minors; it is read with this
 * version's layout when known, else with each known layout of the same
 * major, newest first, until one validates: cookie "xdebugpy", version
 * major.minor, not free-threaded, every size the block declares within
 * 16 MiB and each offset inside its struct's declared size, the object
 * headers (ob_type, bytes and unicode header fields) equal to the facts
 * row's, and PyCode_Type's tp_name (code_type is &PyCode_Type), read at
 * the block's type_object.tp_name, being "code".
 *
 * withheld: a minor whose compiled row is not used (a test switch that
 * simulates a version released after this build), or -1;
 * withheld_layout: the same for the block layouts (a version whose block
 * changed shape), or -1.
 * Every access goes through read (0 on success; guard_copy fits).
 *
 * Returns 0 and fills *out; -ENOTSUP before 3.13 or with no row to take
 * facts from; -EPROTO when no layout validates; -EFAULT when a read
 * fails; -EINVAL for NULL arguments. why (may be NULL) says why, one
 * line. Constructor only; reads about 1 KiB.
 */
int pyabi_from_debug_offsets(int major, int minor, int withheld,
			     int withheld_layout, const void *runtime, const void *code_type,
			     int (*read)(void *dst, const void *src, size_t n),
			     struct pyabi_derived *out, char *why, size_t why_len);

/*
 * Compares every field pyabi_from_debug_offsets may set between a
 * compiled row and the row built from the block. Returns 0 when they
 * agree, -EPROTO on the first difference (named in why), -EINVAL for a
 * NULL row. Any thread; no side effects.
 */
int pyabi_compare(const struct pyabi *row, const struct pyabi *got, char *why,
		  size_t why_len);

/*
 * Which thread state holds the GIL right now, read from another thread
 * that holds no GIL and calls no C API: every access goes through
 * read(dst, src, n) (0 on success, non-zero when src cannot be read;
 * guard_copy fits, memcpy in tests). Lock-free, no side effects, about
 * three pointer-sized reads: fit for the wall sampler and for a signal
 * handler alike.
 *
 *   runtime  &_PyRuntime (dlsym "_PyRuntime"); needed on 3.7-3.11, may be
 *            0 otherwise (there is none on 2.7 and 3.6).
 *   interp   the PyInterpreterState the thread in question belongs to
 *            (its tstate's ts_interp); needed on 3.12+, where each
 *            interpreter may have a GIL of its own (PEP 684).
 *   cur_sym  &_PyThreadState_Current (dlsym); needed on 2.7 and 3.6, may
 *            be 0 otherwise (3.7+ do not export it).
 *
 * On 0, *holder is the PyThreadState * (an address in the interpreter)
 * holding the GIL, or 0 when nobody holds it. A thread "holds the GIL"
 * when its tstate equals *holder. Per version:
 *
 *   2.7, 3.6 (PYABI_GIL_CURRENT_SYM): *cur_sym. PyThreadState_Swap sets it;
 *     every release path (PyEval_SaveThread, the eval loop's periodic
 *     switch, PyEval_ReleaseThread) swaps in NULL *before* releasing the
 *     lock, and every acquire path swaps the tstate back *after* taking
 *     it, so a non-NULL value is a thread that holds the GIL. 2.7 creates
 *     the lock only when a second thread starts; until then the value
 *     still says which thread runs Python code (NULL while it blocks in
 *     Py_BEGIN_ALLOW_THREADS), which is what "holds the GIL" means there.
 *   3.7-3.11 (PYABI_GIL_RUNTIME): _PyRuntime.gilstate.tstate_current, the
 *     same variable moved into _PyRuntime with the same protocol (it is
 *     what PyGILState_Check and _PyThreadState_GET read). The GIL's own
 *     _PyRuntime.ceval.gil.{locked,last_holder} (rt_gil) are not used:
 *     take_gil stores locked = 1 before it updates last_holder, so for a
 *     moment a new holder is reported as the previous one, and a thread
 *     that switches thread states under the GIL with PyThreadState_Swap
 *     (sub-interpreters) keeps the old last_holder until it drops the GIL.
 *     tstate_current is one aligned pointer written at the hand-over.
 *   3.12+ (PYABI_GIL_INTERP_PTR): tstate_current is gone (a C thread-
 *     local now), so: gil = interp->ceval.gil; then gil->locked; 0 means
 *     free (*holder = 0); 1 means held by gil->last_holder. last_holder
 *     alone says nothing: drop_gil leaves it set after the release (that is
 *     how FORCE_SWITCHING sees whether another thread took over), hence
 *     locked first. locked and last_holder are two reads, not a snapshot:
 *     during a hand-over (and in take_gil's short window between storing
 *     locked and last_holder) the answer may name the previous holder.
 *
 * In every version the answer is instantaneous: a thread that does not
 * hold the GIL at the moment may be about to take it back, and a busy
 * thread gives it up at each switch interval (5 ms) for a moment.
 *
 * Returns 0; -EINVAL for a NULL abi/read/holder or a missing runtime,
 * interp or cur_sym that this version needs; -ENOTSUP when the row has no
 * gil_kind; -EFAULT when a read fails; -ENOENT when there is no GIL to
 * ask about (3.12+: interp->ceval.gil is NULL, before the GIL is created
 * or after finalization freed it; locked == -1: not created yet);
 * -EPROTO when locked is neither 0, 1 nor -1 (the row does not describe
 * this process). *holder is set only on 0.
 */
int pyabi_gil_holder(const struct pyabi *abi, uintptr_t runtime, uintptr_t interp,
		     uintptr_t cur_sym, int (*read)(void *dst, const void *src, size_t n),
		     uintptr_t *holder);

/*
 * 3.13+: the version the _Py_DebugOffsets block at runtime states (its
 * PY_VERSION_HEX, and whether the build is free-threaded), read through
 * read as above: how a reader outside the process tells the version
 * without running anything of the target's. 0; -ENOENT when there is no
 * cookie (before 3.13, or not CPython's runtime); -EFAULT when a read
 * fails; -EINVAL for NULL arguments.
 */
int pyabi_debug_version(const void *runtime,
			int (*read)(void *dst, const void *src, size_t n),
			uint64_t *hexversion, int *free_threaded);

/*
 * 3.14+: where PEP 768's remote exec writes, from the block at runtime
 * read with this minor's layout (header, bounds and each place inside its
 * struct checked). A debugger writes the script's path at tstate +
 * script_path (NUL-terminated, shorter than script_path_size), then the
 * int32 1 at tstate + pending_call, then sets please_stop_bit in the
 * uintptr_t at tstate + eval_breaker; tstate is the main thread's
 * (interp + threads_main, interp being *(runtime + interp_head)); the
 * interpreter runs the script at its next safe point if the int32 at
 * interp + remote_enabled is 1. Returns 0; -ENOTSUP for a version without
 * the fields; -EPROTO (why says which) or -EFAULT.
 */
struct pyabi_remote_exec {
	uint64_t interp_head;	 /* runtime_state.interpreters_head     */
	uint64_t threads_main;	 /* interpreter_state.threads_main      */
	uint64_t threads_head;	 /* interpreter_state.threads_head      */
	uint64_t remote_enabled; /* in the interpreter state: int32     */
	uint64_t eval_breaker;	 /* in the thread state: uintptr_t      */
	uint64_t pending_call;	 /* in the thread state: int32          */
	uint64_t script_path;	 /* in the thread state: char[size]     */
	uint64_t script_path_size;
	uint64_t please_stop_bit;
	uint64_t ts_next;	   /* thread_state.next: the next one      */
	uint64_t native_thread_id; /* thread_state.native_thread_id     */
};
int pyabi_remote_exec_offsets(int major, int minor, const void *runtime,
			      int (*read)(void *dst, const void *src, size_t n),
			      struct pyabi_remote_exec *out, char *why,
			      size_t why_len);

#endif /* PYPROF_PYABI_H */
