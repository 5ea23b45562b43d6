/*
 * walk.h - what the frame walker (preload/signal/sig_frames.c) hands
 * back, and the one walker read from outside the process.
 *
 * The walker is compiled twice from the same source. In libpyprof.so
 * every load from interpreter memory is a plain volatile load under the
 * fault guard (base/guard.h). In pyprof (the Makefile's
 * preload_sig_frames.o, built with PYPROF_REMOTE_WALK) the same loads go
 * to another process's memory through walk_remote_load, a page cache
 * over process_vm_readv (collector/remote/remote_mem.c), and a load that
 * fails ends the walk as a fault does inside: walk_remote_guard stands
 * for guard_run_sigsafe. The layouts are the same struct pyabi rows.
 */
#ifndef PYPROF_WALK_H
#define PYPROF_WALK_H

#include <stdint.h>

#include "pyprof/pyabi.h"

/* raw_frame.offset of a frame that has not run its first instruction;
 * CPython reports co_firstlineno for it. */
#define RAW_NOT_STARTED 0xffffffffu

/* One frame as the walker saw it. The agent (or pyprof dump) turns it
 * into a location. */
struct raw_frame {
	uint64_t code;	 /* code object address; bit 0 is RAW_ENTRY      */
	uint32_t offset; /* byte offset of the instruction in the code   */
	uint32_t fp;	 /* fingerprint of (name, filename, firstlineno) */
};

/*
 * Bit 0 of raw_frame.code (code objects are 8-byte aligned, so the bit is
 * free), set only when native stacks are on: this frame is the first
 * (outermost) Python frame of one call of the eval loop, so the native
 * stack has one _PyEval_EvalFrameDefault frame per run of frames that
 * starts at a RAW_ENTRY frame and goes leafward up to the next one.
 *   <= 3.10  every frame (each runs in an eval loop call of its own);
 *   3.11     is_entry;
 *   3.12+    the frame just leafward of a C-stack shim (owner CSTACK; 3.14
 *            also INTERPRETER): the eval loop pushes one at its entry.
 * The outermost frame of a walk that reached the end is always one.
 * Readers mask it: raw_code(f).
 */
#define RAW_ENTRY 1u

static inline uint64_t raw_code(const struct raw_frame *f)
{
	return f->code & ~(uint64_t)RAW_ENTRY;
}

/* The walk's flags (the same bits as base/sampler.h's SAMPLE_*). */
#define WALK_TRUNCATED (1u << 0) /* more frames than asked for       */
#define WALK_INVALID (1u << 3)	 /* the chain failed validation      */
#define WALK_CUT (1u << 14)	 /* ended at a frame that is not the
                                    thread's first (sig_frames.c)     */

/* Fingerprint used by both the walker and the symbolizer. */
static inline uint32_t sampler_fp(uint64_t name, uint64_t file, uint32_t line)
{
	uint64_t h = name * 0x9E3779B97F4A7C15ull;
	h ^= (file + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
	h ^= (uint64_t)line * 0x165667B19E3779F9ull;
	h ^= h >> 29;
	return (uint32_t)(h ^ (h >> 32));
}

/* ---- the walker in pyprof, reading another process ---- */

/* What the walker needs of the target besides its memory. */
struct walk_remote_env {
	const struct pyabi *abi;
	uint64_t code_type;	 /* &PyCode_Type in the target              */
	uint64_t runtime;	 /* &_PyRuntime (3.7+) or 0                 */
	uint64_t cur_tstate_sym; /* &_PyThreadState_Current (2.7, 3.6) or 0 */
};

/*
 * Walks the frames of thread state ts of the target (remote_mem.c's
 * process) into out[0..max), innermost first, as the library's walker
 * does (the same code), again up to a few times while the walk is cut
 * by the running thread (WALK_CUT). Returns the number of frames, and
 * the flags in *flags; -EFAULT when a read failed (the frames read are
 * lost, as in the library: walk again). Single-threaded.
 */
int frames_walk_remote(const struct walk_remote_env *env, uint64_t ts,
		       struct raw_frame *out, int max, uint16_t *flags);

/*
 * Provided by pyprof (collector/remote/remote_mem.c) for the walker's
 * loads: n (1, 4 or 8) bytes at addr of the target, or a jump back to
 * walk_remote_guard's caller when they cannot be read.
 */
uint64_t walk_remote_load(uint64_t addr, unsigned n);
/* Runs fn(arg); -EFAULT when a load inside failed, else 0. */
int walk_remote_guard(void (*fn)(void *arg), void *arg);
/* Forgets what was read: the walk tried again reads the target anew. */
void walk_remote_afresh(void);

/* ---- dicts of another process (sig_pydict.c's pyprof build) ---- */

/* What the dict readers check the target's objects against. */
struct walk_dict_env {
	const struct pyabi *abi;
	uint64_t dict_type; /* &PyDict_Type in the target                 */
	uint64_t str_type;  /* &PyUnicode_Type (2.7: &PyString_Type)      */
};

/*
 * The library's dict readers (preload/cpython/pydict.h, every version
 * 2.7-3.15) over the target's memory: the value of ASCII str key text in
 * the ordinary dict d; of the entry whose stored hash is hash (an int
 * key below 2**61 - 1: its value); of attribute name in obj's instance
 * dict. 0 when there is none, when d or obj is not what it should be, or
 * when env lacks a type. Loads through walk_remote_load: call inside
 * walk_remote_guard (a failed load jumps out). Bounded: pydict.h's
 * PYDICT_MAX_SCAN entries (PYDICT_MAX_ENTRIES attributes).
 */
uint64_t pydict_get_str_remote(const struct walk_dict_env *env, uint64_t d,
			       const char *text);
uint64_t pydict_get_hash_remote(const struct walk_dict_env *env, uint64_t d,
				int64_t hash);
uint64_t pydict_attr_remote(const struct walk_dict_env *env, uint64_t obj,
			    const char *name);

#endif /* PYPROF_WALK_H */
