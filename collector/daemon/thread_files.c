/*
 * thread_files.c - one profile per thread (--per-thread; see
 * thread_files.h): the threads of a process are those of its aggregate
 * with samples, each OS thread once whatever names it had, and its file
 * takes the last name it got. Each is a pprof_build of its own
 * (pprof_opts.one_thread), so a process with many threads costs as many
 * walks of its aggregate: a price only --per-thread pays.
 *
 * Runs on the collector's loop thread (output.c calls it).
 */
#include "daemon/thread_files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon/agg.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"

#define OUTPUT_MAX_THREAD_NAME 64

/* A thread's name reduced to [A-Za-z0-9_-] (a dot too becomes '_', so
 * that the file name's fields stay apart), at most
 * OUTPUT_MAX_THREAD_NAME bytes; "" if nothing but '_' is left. */
static void thread_stem(const char *name, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *s = name; *s && n + 1 < cap &&
				   n < OUTPUT_MAX_THREAD_NAME;
	     s++) {
		char ch = *s;
		int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
		out[n++] = ok ? ch : '_';
	}
	out[n] = 0;
	if (strspn(out, "_") == n)
		out[0] = 0;
}

struct thread_ref {
	uint64_t tid;
	uint32_t idx; /* the process's thread number (proc.h) */
	int named;    /* that number has a name */
};

/* By tid; then unnamed numbers first, each part in order of arrival. */
static int thread_ref_cmp(const void *a, const void *b)
{
	const struct thread_ref *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->named != y->named)
		return x->named - y->named;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The OS threads of p with samples in its aggregate, each once, by tid,
 * with the thread number of the last name it got (a rename adds a
 * number; so does a thread that the library sends unnamed again, as when
 * it ends: such a number does not hide its name). Returns how many (*out
 * malloc'd, the caller frees it), or -ENOMEM. */
static long proc_threads_with_samples(const struct proc *p,
				      struct thread_ref **out)
{
	uint32_t n_threads = proc_n_threads(p);
	uint8_t *has = calloc((size_t)n_threads + 1, 1);
	struct thread_ref *v = calloc((size_t)n_threads + 1, sizeof(*v));
	const struct agg_entry *e;
	size_t pos = 0, n = 0, k = 0;

	if (!has || !v) {
		free(has);
		free(v);
		return -ENOMEM;
	}
	while ((e = agg_next(proc_agg(p), &pos)))
		if (e->count && e->thread >= 1 && e->thread <= n_threads)
			has[e->thread] = 1;
	for (uint32_t i = 1; i <= n_threads; i++) {
		uint32_t name;
		if (!has[i])
			continue;
		proc_thread(p, i, &v[n].tid, &name);
		v[n].named = name != 0;
		v[n++].idx = i;
	}
	free(has);
	qsort(v, n, sizeof(*v), thread_ref_cmp);
	/* keep the last of each tid: its last named number, if any */
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || v[i + 1].tid != v[i].tid)
			v[k++] = v[i];
	*out = v;
	return (long)k;
}

int thread_files_write(const struct symtab *st, const char *base,
		       const struct proc *p, const struct pprof_opts *po,
		       int with_pid, int how)
{
	int failed = 0;
	const struct proc_info *in = proc_info(p);
	const struct proc *one[1] = { p };
	struct thread_ref *v = NULL;
	long n = proc_threads_with_samples(p, &v);

	if (n < 0) {
		log_error("pid %" PRIu64 ": per-thread profiles: out of memory",
			  in->pid);
		return -1;
	}
	for (long i = 0; i < n; i++) {
		struct pprof_opts tpo = *po;
		struct pprof_stats stats;
		char pidpart[32] = "", tname[OUTPUT_MAX_THREAD_NAME + 2] = "";
		char path[4096];
		uint64_t tid;
		uint32_t name;
		int rc;

		proc_thread(p, v[i].idx, &tid, &name);
		if (name) {
			tname[0] = '.';
			thread_stem(symtab_string(st, name), tname + 1,
				    sizeof(tname) - 1);
			if (!tname[1])
				tname[0] = 0;
		}
		if (with_pid)
			snprintf(pidpart, sizeof(pidpart), ".pid%" PRIu64,
				 in->pid);
		if ((size_t)snprintf(path, sizeof(path),
				     "%s%s.tid%" PRIu64 "%s.pb.gz", base,
				     pidpart, tid, tname) >= sizeof(path)) {
			rc = -ENAMETOOLONG;
		} else {
			tpo.one_thread = 1;
			tpo.tid = tid;
			tpo.want_loc_map = 0;
			rc = pprof_write(st, one, 1, &tpo, path, how,
					 &stats);
		}
		if (rc < 0) {
			log_error("pid %" PRIu64 " thread %" PRIu64 ": cannot "
				  "write its profile beside %s.pb.gz: %s",
				  in->pid, tid, base, strerror(-rc));
			failed = 1;
			continue;
		}
		log_info("wrote %s: %" PRIu64 " samples (pid %" PRIu64
			 ", thread %" PRIu64 ")",
			 path, stats.samples, in->pid,
			 tid);
	}
	free(v);
	return failed ? -1 : 0;
}
