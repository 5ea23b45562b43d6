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
 * Read by: the signal handler (sig_frames.c), the wall sampler and the
 * agent's symbolizer. The struct is written once, before any timer is
 * armed, and only read afterwards, so it needs no synchronization.
 *
 * What a new CPython version needs (3.14 is the next one):
 *   - a row from tools/gen-pyabi (run it against the new headers);
 *   - 3.14: f_executable is a _PyStackRef, whose low bits are tags: set
 *     code_ref_tag_mask = 3 so the walker masks them; frame owners were
 *     renumbered (owner_cstack = 4, and 3 = FRAME_OWNED_BY_INTERPRETER is
 *     also an entry sentinel: list it in owner_skip2);
 *   - on 3.13+, cross-check the row with _Py_DebugOffsets (pyabi.c).
 */
#ifndef PYPROF_PYABI_H
#define PYPROF_PYABI_H

#include <stddef.h>
#include <stdint.h>

/* How a thread's frames are chained. */
enum pyabi_frame_kind {
	PYABI_FRAME_OBJECT = 1, /* <= 3.10: PyFrameObject via tstate->frame  */
	PYABI_FRAME_INTERP = 2  /* >= 3.11: _PyInterpreterFrame               */
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
	PYABI_LINES_LNOTAB = 1,    /* <= 3.9 co_lnotab (signed deltas 3.6+)   */
	PYABI_LINES_LNOTAB27 = 2,  /* 2.7 co_lnotab, unsigned line deltas     */
	PYABI_LINES_310 = 3,       /* 3.10 co_linetable (PEP 626)             */
	PYABI_LINES_311 = 4        /* 3.11+ location table                    */
};

enum pyabi_str_kind {
	PYABI_STR_BYTES = 1,   /* 2.7: PyStringObject, ob_size + ob_sval      */
	PYABI_STR_UNICODE = 2  /* 3.x: PEP 393 compact/non-compact unicode     */
};

/* An offset that does not exist in this version. */
#define PYABI_NONE (-1)

struct pyabi {
	int major, minor;            /* e.g. 3, 11                            */
	int frame_kind;              /* enum pyabi_frame_kind                 */
	int lasti_kind;              /* enum pyabi_lasti_kind                 */
	int lines_kind;              /* enum pyabi_lines_kind                 */
	int str_kind;                /* enum pyabi_str_kind                   */

	/* _PyRuntimeState (3.7+): interpreters.head, the list of interpreters.
	 * Added for the walker: from _PyRuntime (dlsym) it reaches every
	 * interpreter without calling into CPython. PYABI_NONE on 2.7 and 3.6,
	 * where the head is a static in pystate.c: use PyInterpreterState_Head().
	 */
	int rt_interp_head;

	/* PyInterpreterState */
	int interp_next;             /* PyInterpreterState *next              */
	int interp_tstate_head;      /* tstate_head / threads.head            */

	/* PyThreadState */
	int ts_next;                 /* PyThreadState *next                   */
	int ts_interp;               /* PyInterpreterState *interp            */
	int ts_thread_id;            /* unsigned long thread_id (pthread_t)   */
	int ts_native_thread_id;     /* 3.11+: OS tid (gettid); else NONE     */
	int ts_frame;                /* <= 3.10 frame, 3.13+ current_frame;
	                                PYABI_NONE on 3.11-3.12               */
	int ts_cframe;               /* 3.11-3.12 cframe; else PYABI_NONE     */
	int cframe_current_frame;    /* _PyCFrame.current_frame (3.11-3.12)   */

	/* Frames: PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	int f_back;                  /* f_back / previous                     */
	int f_code;                  /* f_code / f_executable                 */
	int f_lasti;                 /* f_lasti / prev_instr / instr_ptr      */
	int f_is_entry;              /* 3.11: char is_entry; else NONE        */
	int f_owner;                 /* 3.11+: char owner; else NONE          */
	int owner_generator;         /* FRAME_OWNED_BY_GENERATOR (3.11+)      */
	int owner_cstack;            /* FRAME_OWNED_BY_CSTACK (3.12+), else -1 */
	int owner_skip2;             /* another owner to skip (3.14+), else -1 */
	uint64_t code_ref_tag_mask;  /* 3.14+: tag bits of f_executable       */

	/* PyCodeObject */
	int co_filename;
	int co_name;
	int co_qualname;             /* 3.11+; else PYABI_NONE                */
	int co_firstlineno;
	int co_linetable;            /* co_lnotab (<= 3.9) / co_linetable     */
	int co_code_adaptive;        /* 3.11+: offset of the inline bytecode  */
	int co_firsttraceable;       /* 3.11+: _co_firsttraceable; else NONE  */

	/* Objects */
	int ob_type;                 /* offsetof(PyObject, ob_type)           */
	int var_size;                /* offsetof(PyVarObject, ob_size)        */
	int bytes_sval;              /* offsetof(PyBytesObject, ob_sval)      */

	/* PEP 393 unicode (3.x). Bit positions count from the first byte of
	 * the 4-byte state bitfield: bit n is bit n % 8 of byte n / 8, which
	 * is how pycode_read_str assembles it (independent of host order). */
	int u_length;                /* PyASCIIObject.length                  */
	int u_state;                 /* offset of the state bitfield          */
	int u_kind_shift;            /* bit position of kind (3 bits)         */
	int u_compact_bit;           /* bit position of compact               */
	int u_ascii_bit;             /* bit position of ascii                 */
	int u_ascii_size;            /* sizeof(PyASCIIObject)                 */
	int u_compact_size;          /* sizeof(PyCompactUnicodeObject)        */
	int u_data_any;              /* offsetof(PyUnicodeObject, data.any)   */
};

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
 * thread state, frame, code object, object header, bytes, unicode).
 *
 * Returns 0 when everything agrees, and also for versions before 3.13,
 * which have no block (nothing is read); -EPROTO on the first mismatch,
 * described in why (NUL-terminated, truncated to why_len; why may be
 * NULL); -EFAULT when a read fails; -EINVAL for a NULL abi or runtime.
 * Constructor or agent thread; reads about 600 bytes.
 */
int pyabi_check_debug_offsets(const struct pyabi *abi, const void *runtime,
			      int (*read)(void *dst, const void *src, size_t n),
			      char *why, size_t why_len);

#endif /* PYPROF_PYABI_H */
