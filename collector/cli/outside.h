/*
 * outside.h - profiles of a running CPython read from outside: `pyprof
 * record --pid` (cmd_record_pid.c) and `top --pid` on a process with
 * nothing loaded (cmd_top_pid.c).
 *
 * outside_prof.c turns the stacks the sampler from outside hands on
 * (remote.h's remote_sampler) into a profile through the collector's own
 * code: one process (daemon/proc.h) fed as a client's session is, with
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

/* A profile of py's process (py->pid, its version), in wall or CPU mode,
 * sampled every period_ns. NULL (ENOMEM). */
struct outside_prof *outside_prof_new(const struct remote_py *py, int wall,
				      uint64_t period_ns, int max_depth);
void outside_prof_free(struct outside_prof *o);

/* Adds one stack (remote_sample_fn's shape; arg is the outside_prof),
 * named through the sampler's target: set it first. */
void outside_prof_set_target(struct outside_prof *o,
			     struct remote_target *tg);
void outside_prof_add(void *arg, const struct remote_sample *smp);

/* Writes what was added since the last write (or the start) to path as
 * gzipped pprof, and starts the next window. *n_samples: the samples in
 * it. 0 or a negative errno. */
int outside_prof_write(struct outside_prof *o, const char *path,
		       uint64_t *n_samples);

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
	/* got */
	struct outside_prof *prof; /* the profile: outside_done    */
	struct remote_sampler *sampler;
	int exited; /* the process ended meanwhile             */
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
