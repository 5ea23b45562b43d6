/*
 * outside.h - profiles of a running CPython read from outside: `pyprof
 * record --pid` (cmd_record_pid.c) and `top --pid` on a process with
 * nothing loaded (cmd_top_pid.c).
 *
 * outside_prof.c turns the stacks the sampler from outside hands on
 * (remote.h's remote_sampler) into a profile through the collector's own
 * code: each process (daemon/proc.h) fed as a client's session is, with
 * the same definitions the library sends (a function per code object:
 * its qualified name, co_name, file and first line; a location per
 * line; threads with their ids and names), and written by pprof_build
 * (daemon/pprof.h). The same pprof, then, as a profile taken inside.
 *
 * Single-threaded, in the pyprof process.
 */
#ifndef PYPROF_OUTSIDE_H
#define PYPROF_OUTSIDE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "remote/remote.h"

struct outside_prof;
/* One process of an outside_prof: its session and the definitions it
 * has been given (the symbols and the registry are the profile's). */
struct outside_part;

/* A profile of py's process (py->pid, its version), in wall or CPU mode,
 * sampled every period_ns: its first part (outside_prof_first). NULL
 * (ENOMEM). */
struct outside_prof *outside_prof_new(const struct remote_py *py, int wall,
				      uint64_t period_ns, int max_depth);
void outside_prof_free(struct outside_prof *o);
/* Adds py's process as a process of its own in the profile (a
 * descendant, with --subprocesses). The part is o's. NULL (ENOMEM). */
struct outside_part *outside_prof_join(struct outside_prof *o,
				       const struct remote_py *py);
struct outside_part *outside_prof_first(struct outside_prof *o);
/* Labels every sample with its process's name and command line as well
 * as its pid, as `pyprof record` does a profile of several processes
 * (pprof_opts.proc_labels): for --subprocesses. */
void outside_prof_label_procs(struct outside_prof *o);
/* Its processes: 1 and those joined. */
size_t outside_prof_n_parts(const struct outside_prof *o);
/* The part's process was found gone: its end is now, not the write's. */
void outside_part_end(struct outside_part *pt);

/* Adds one stack (remote_sample_fn's shape; arg is the outside_part),
 * named through the sampler's target: set it first. */
void outside_part_set_target(struct outside_part *pt,
			     struct remote_target *tg);
void outside_prof_add(void *arg, const struct remote_sample *smp);

/* Writes what was added since the last write (or the start) to path as
 * gzipped pprof, and starts the next window. *n_samples: the samples in
 * it. 0 or a negative errno. */
int outside_prof_write(struct outside_prof *o, const char *path,
		       uint64_t *n_samples);
/* The same profile into memory: *out (gzipped pprof, len bytes; the
 * caller frees it). 0 or -errno. */
int outside_prof_build(struct outside_prof *o, void **out, size_t *len);

/* ---- outside_kids.c: --subprocesses ------------------------------- */

struct outside_kids;
/* The descendants of root, each CPython one sampled (wall, max_depth)
 * into a part of o of its own. NULL (ENOMEM). */
struct outside_kids *outside_kids_new(pid_t root, int wall, int max_depth,
				      struct outside_prof *o);
/* Frees the samplers; what they read stays in o. */
void outside_kids_free(struct outside_kids *k);
/* Reads /proc for the descendants, new ones tried at the next scan. */
void outside_kids_scan(struct outside_kids *k, uint64_t now_ns);
/* One tick of each descendant sampled (remote_mem_open switched to each
 * in turn: the caller opens its own process again before reading it). */
void outside_kids_tick(struct outside_kids *k, uint64_t now_ns);
/* Rescans every so often, not every tick: a scan reads every process's
 * /proc/PID/stat, a tick only the sampled ones' memory. */
#define OUTSIDE_KIDS_SCAN_NS 150000000ull

/* ---- cmd_record_pid.c: the sampling loop ------------------------- */

struct remote_sampler;

/* One run of the sampler over a process, and what came of it. */
struct outside_run {
	/* asked */
	struct remote_py py; /* outside_open's                          */
	int wall;
	unsigned long hz;
	int max_depth;
	double duration_s; /* 0: until a signal or the process's end  */
	double window_s;   /* with on_window: called every window_s  */
	void (*on_window)(void *arg, struct outside_prof *o);
	void *arg;
	int subprocesses; /* the descendants too (outside_kids)     */
	/* got */
	struct outside_prof *prof; /* the profile: outside_done    */
	struct remote_sampler *sampler;
	struct outside_kids *kids; /* with subprocesses               */
	int exited;		   /* the process ended meanwhile             */
	unsigned long long n_ticks;
	double seconds;	     /* how long it sampled                     */
	double reader_cpu_s; /* pyprof's own CPU meanwhile               */
	char why[256];
};

/* Checks pid as dump does (one line on a refusal) and finds its
 * interpreter into *py; the process's name into comm. 0 or -1. */
int outside_open(pid_t pid, struct remote_py *py, char *comm,
		 size_t comm_len);
/* Samples r->py's process until r->duration_s, a stop signal
 * (attach_stop_sig) or its end. 0 (r->prof holds the profile, even when
 * the process exited at once), or -1 with r->why when it could not start.
 * Then outside_done frees what it made. */
int outside_loop(struct outside_run *r);
void outside_done(struct outside_run *r);

/* `pyprof record`: cmd_record_pid when argv asks for --pid, else
 * cmd_record (the command table's entry, as cmd_top_any is top's). */
int cmd_record_any(int argc, char **argv);
/* Whether `pyprof record`'s argv asks for --pid (before COMMAND). */
int record_has_pid(int argc, char **argv);
int cmd_record_pid(int argc, char **argv);
void cmd_record_pid_usage(FILE *out);

#endif /* PYPROF_OUTSIDE_H */
