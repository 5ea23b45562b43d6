/*
 * sig_frames.h - the guarded walk of a thread's Python frames
 * (sig_frames.c), run by every sampler: the SIGPROF handler, the heap
 * hooks, the wall sampler. The record's layout is base/sampler.h's.
 */
#ifndef PYPROF_SIG_FRAMES_H
#define PYPROF_SIG_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "base/sampler.h"

/* The innermost frame of thread state ts (guarded region). */
uintptr_t frames_first_sigsafe(uintptr_t ts);

/* One frame (a PyFrameObject or _PyInterpreterFrame at frame, per the
 * version) as the walk would keep it, into *f; -1 if it holds no code
 * object. Call inside a guarded region. Async-signal-safe. */
int frames_one_sigsafe(uintptr_t frame, struct raw_frame *f);


/*
 * Walks the frames of thread state ts into out[0..max), leaf first.
 * Returns the number written; sets *flags (SAMPLE_TRUNCATED,
 * SAMPLE_INVALID). Reads interpreter memory directly: the caller MUST have
 * armed the fault guard (guard_jmp) around the call. Async-signal-safe.
 */
int frames_walk_sigsafe(uintptr_t ts, struct raw_frame *out, int max,
			uint16_t *flags);

/* 1 + the opcode byte at f's offset in its code, or 0. Guard armed by
 * the caller. Async-signal-safe. */
uint32_t frames_opcode_sigsafe(const struct raw_frame *f);

/*
 * The thread state of the calling thread, found by walking the
 * interpreters' thread lists (cached per thread while there is one
 * interpreter; with subinterpreters, the one the thread runs, by
 * frames_ts_rank_sigsafe). 0 if none. Guard armed by the caller.
 * Async-signal-safe.
 */
uintptr_t frames_find_tstate_sigsafe(void);

/*
 * How surely thread state ts, of interpreter interp, is the one its thread
 * runs now, among the thread states a thread has in the interpreters it
 * entered: 2 it holds its interpreter's GIL, 1 it has a Python frame, 0
 * neither. Guard armed by the caller. Async-signal-safe.
 */
int frames_ts_rank_sigsafe(uintptr_t ts, uintptr_t interp);

/*
 * One Python stack into a sample: the guarded region every sampler uses
 * (the SIGPROF handler, the heap hooks, the wall sampler). Walks thread
 * state ts, or with ts 0 the calling thread's (frames_find_tstate_sigsafe),
 * into the frames after rec (room for sampler.max_depth): sets
 * rec->tstate, rec->n_frames, the walk's flags, and with want_opcode
 * rec->opcode. Returns 0; -ESRCH if the calling thread has no thread
 * state (SAMPLE_NO_TSTATE set, no frames); -EFAULT if a read faulted
 * (no frames; the caller marks the sample its own way). Arms the fault
 * guard itself and puts back the guard it found: see frames.c.
 * Async-signal-safe.
 */
int frames_sample_sigsafe(struct raw_sample *rec, uintptr_t ts,
			  int want_opcode);

#endif /* PYPROF_SIG_FRAMES_H */
