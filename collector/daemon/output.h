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
struct pprof_opts;
struct procs;
struct proc;
struct symtab;

struct output;

/*
 * A destination for profiles besides the files: --pyroscope and --otlp
 * (push/push_sink.h), plugged in by main_collector.c. The output knows
 * no destination by name; it calls every sink, in the order they were
 * added, on the loop thread:
 *   profile     for each profile it builds to write or push: data[0..len)
 *               (gzipped pprof, the sink copies what it keeps) of
 *               list[0..n), built with po (po->end_unix_ns 0: the
 *               processes' own times; po->proc_labels: a merged
 *               profile), heap or not. Not for --output.
 *   window_end  with --period, at each boundary and at exit, after the
 *               merged window: the processes with data in the window
 *               [start_ns, end_ns), those that ended in it included
 *               (kept for it when keeps_ended is set). May be NULL.
 * keeps_ended: ended processes stay in the registry until the window
 * they ended in is over (the output removes them then).
 */
struct output_sink {
	void (*profile)(void *ctx, const struct proc *const *list, size_t n,
			const struct pprof_opts *po, const void *data,
			size_t len, int heap);
	void (*window_end)(void *ctx, const struct proc *const *list,
			   size_t n, uint64_t start_ns, uint64_t end_ns);
	int keeps_ended;
	void *ctx;
};

/* An output for opts (which, like loop, st and reg, must outlive it), or
 * NULL (ENOMEM). Nothing is scheduled before output_start. */
struct output *output_new(const struct collector_opts *opts, struct loop *loop,
			  struct symtab *st, struct procs *reg);
/* Cancels its timers. NULL is fine. */
void output_free(struct output *o);

#define OUTPUT_MAX_SINKS 4

/* Every profile built from now on (and its heap profile) is also given
 * to sink (copied; its ctx must outlive the output or be removed first
 * with output_clear_sinks). Without --output-dir the windows go to the
 * sinks only. 0, or -ENOSPC past OUTPUT_MAX_SINKS. */
int output_add_sink(struct output *o, const struct output_sink *sink);
/* Forgets every sink (before they are freed). */
void output_clear_sinks(struct output *o);

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
