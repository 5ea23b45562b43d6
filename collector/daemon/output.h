/*
 * output.h - what the collector writes, when, and when it forgets a
 * process: per-process profiles, --period windows, --merge profiles, the
 * --output profile and the --summary line; and, because forgetting is
 * what frees memory, the compaction of the shared symbol tables and the
 * return of freed memory to the system.
 *
 * collector.c creates one output beside the registry, tells it when a
 * process has no connection left (output_proc_ended) and calls
 * output_shutdown once every connection is closed. The --period timer
 * runs on the collector's loop. The file layout is in collector.h.
 *
 * Single-threaded (the collector's loop thread). Profiles are built and
 * written synchronously (fileio.h says why that is acceptable).
 */
#ifndef PYPROF_OUTPUT_H
#define PYPROF_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

struct collector_opts;
struct loop;
struct procs;
struct push;
struct proc;
struct symtab;

struct output;

/* An output for opts (which, like loop, st and reg, must outlive it), or
 * NULL (ENOMEM). Nothing is scheduled before output_start. */
struct output *output_new(const struct collector_opts *opts, struct loop *loop,
			  struct symtab *st, struct procs *reg);
/* Cancels its timers. NULL is fine. */
void output_free(struct output *o);

/* --pyroscope, --otlp: every window built from now on (and its heap
 * profile) is also handed to each push given (push.h; NULL: none), which
 * outlive it or are unset first. Without --output-dir the windows are
 * pushed only. */
void output_set_push(struct output *o, struct push *a, struct push *b);

/* The collector is listening: the first window starts now and, with
 * --period, the timer for its end is set. 0 or -ENOMEM. */
int output_start(struct output *o);

/* p has no connection left: write what is due and free it, or keep it
 * for a later merged write. p may be gone when this returns. */
void output_proc_ended(struct output *o, struct proc *p);

/* Writes the heap snapshots processes asked for (HEAP_SNAPSHOT frames)
 * since the last call; file names in output.c. Call after reading. */
void output_snapshots(struct output *o);

/* Tries once more to write the profiles held because they could not be
 * written (output.c), and gives up on those that still cannot be: their
 * samples are counted as lost against their processes, so that the
 * processes' last profiles, written next, say so. At exit, before the
 * connections are closed. */
void output_flush_held(struct output *o);

/* Every connection is closed: writes the last windows (held ones
 * included, or they are given up), the merged profiles, --output and
 * --summary. n_running: processes whose connection was still open when
 * the collector stopped (for the summary's running=N). */
void output_shutdown(struct output *o, uint64_t n_running);

/* Whether some output could not be built or written. */
int output_failed(const struct output *o);

#endif /* PYPROF_OUTPUT_H */
