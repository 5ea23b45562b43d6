/*
 * thread_files.h - the per-thread profiles written beside a profile
 * (--per-thread): one file per OS thread with samples.
 *
 * Collector loop thread only (output.c).
 */
#ifndef PYPROF_THREAD_FILES_H
#define PYPROF_THREAD_FILES_H

#include "daemon/pprof.h"

struct proc;
struct symtab;

/* One profile per thread of p with samples, beside the profile written
 * as <base>.pb.gz (po its options): <base>[.pid<PID>].tid<TID>[.<thread>]
 * .pb.gz, with .pid<PID> when with_pid (a profile of several processes).
 * how is FILEIO_NOREPLACE or FILEIO_REPLACE, as for the whole profile.
 * Failures are logged; the other threads are still written. Returns 0,
 * or -1 when one or more could not be written. */
int thread_files_write(const struct symtab *st, const char *base,
		       const struct proc *p, const struct pprof_opts *po,
		       int with_pid, int how);

#endif /* PYPROF_THREAD_FILES_H */
