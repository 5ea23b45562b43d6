/*
 * pythreads.h - the Python threads of the process as seen from one of the
 * library's own threads: each thread state, its interpreter and its OS
 * thread id, read from the interpreters' lists with guarded reads.
 *
 * Used by the samplers that run beside the program (wall.c, cpuclock.c),
 * never by a signal handler (tid_of is not async-signal-safe). The OS id
 * comes from the thread state on 3.11+ (native_thread_id), else from the
 * thread's struct pthread (tid.h).
 */
#ifndef PYPROF_PYTHREADS_H
#define PYPROF_PYTHREADS_H

#include <stdint.h>

#define PYTHREADS_MAX 4096

struct pythread {
	uintptr_t ts;	  /* the PyThreadState                           */
	uintptr_t interp; /* its PyInterpreterState                      */
	int tid;	  /* OS thread id; 0 if not started or not known */
};

/* Lists up to max thread states into out, one per OS thread: with
 * subinterpreters, the one the thread runs (frames_ts_rank_sigsafe). Returns how many, or -1 if a
 * read faulted (the caller skips this tick). Interpreter initialized. */
int pythreads_list(struct pythread *out, int max);

#endif /* PYPROF_PYTHREADS_H */
