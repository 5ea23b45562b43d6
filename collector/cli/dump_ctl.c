/*
 * dump_ctl.c - `pyprof dump PID` for a process started with the library
 * (any CPython, 2.7-3.15): its stacks come through the collector it
 * reports to, not from outside.
 *
 * That collector's HTTP server (--http; SOCKET.http-addr) is asked for a
 * short window of the pid (/debug/pprof/profile?seconds=1&pid=PID) in
 * the process's own mode (the collector refuses mode=wall for a process
 * sampling cpu): with PYPROF_MODE=wall every thread, blocked ones too,
 * has tens of samples in 1 s; in cpu mode only threads that ran. Per
 * thread (thread_id, thread_name labels) the stack seen most often in
 * the window is printed, innermost first, in plain dump's format. A
 * dormant process wakes for the window and goes back to sleep.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/attach.h"
#include "cli/cmd.h"
#include "common/log.h"
#include "views/view_read.h"

#define DUMP_CTL_SECONDS "1" /* the endpoint takes whole seconds */

struct dump_thread {
	long long tid;
	size_t best;  /* sample index of the heaviest stack */
	size_t named; /* a sample with a thread_name label, or SIZE_MAX */
	int64_t best_n;
};

static int cmp_tid(const void *a, const void *b)
{
	const struct dump_thread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Whether pid's environment turns PYPROF_NATIVE on. */
static int samples_native(pid_t pid)
{
	char env[32768];
	long len = cmd_read_environ((int)pid, env, sizeof env);
	int on = 0;

	if (len <= 0)
		return 0;
	for (char *p = env; p < env + len; p += strlen(p) + 1)
		if (!strncmp(p, "PYPROF_NATIVE=", 14))
			on = p[14] && strcmp(p + 14, "0");
	return on;
}

static void print(const struct view_profile *p, struct dump_thread *th,
		  size_t n, pid_t pid, const char *sock)
{
	char buf[256];

	printf("Process %d: through its collector on %s (%s s of its "
	       "samples; each thread's most frequent stack)\n",
	       (int)pid, sock, DUMP_CTL_SECONDS);
	qsort(th, n, sizeof *th, cmp_tid);
	for (size_t i = 0; i < n; i++) {
		const struct view_sample *s = &p->samples[th[i].best];
		const char *name =
			th[i].named == SIZE_MAX
				? NULL
				: view_sample_label(&p->samples[th[i].named],
						    "thread_name", buf,
						    sizeof buf);
		printf("Thread %lld \"%s\"\n", th[i].tid, name ? name : "?");
		for (uint32_t k = 0; k < s->n_frames; k++) {
			const struct view_frame *fr = &p->frames[s->frames[k]];
			const struct view_func *fn = &p->funcs[fr->func];
			printf("    %s (%s:%lld)\n", fn->name, fn->file,
			       (long long)fr->line);
		}
		if (!s->n_frames)
			printf("    (no Python frame)\n");
	}
}

int dump_ctl(pid_t pid, const char *sock, int native)
{
	char buf[64];
	struct view_profile *p = NULL;
	struct dump_thread *th = NULL;
	size_t n = 0, type;
	int cnt, code = 1;

	if (native && !samples_native(pid)) {
		log_error("dump --native: process %d samples without native "
			  "frames; --native needs the ptrace path (CPython "
			  "3.14+, a process without the library) or a "
			  "process started with PYPROF_NATIVE=1",
			  (int)pid);
		return 1;
	}
	/* the collector refuses mode=wall for a process sampling in cpu
	 * mode: then the process's own mode (threads on the CPU only) */
	if (!(p = top_fetch_pid_window(sock, pid, NULL, DUMP_CTL_SECONDS)))
		goto out;
	cnt = view_count_type(p);
	type = cnt >= 0 ? (size_t)cnt : p->default_type;
	th = calloc(p->n_samples ? p->n_samples : 1, sizeof *th);
	if (!th) {
		log_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *s = &p->samples[i];
		long long tid;
		size_t j;

		if (!view_sample_label(s, "thread_id", buf, sizeof buf))
			continue;
		tid = strtoll(buf, NULL, 10);
		for (j = 0; j < n && th[j].tid != tid; j++)
			;
		if (j == n) {
			th[n].named = SIZE_MAX;
			th[n].tid = tid;
			th[n].best = i;
			th[n++].best_n = s->values[type];
		} else if (s->values[type] > th[j].best_n) {
			th[j].best = i;
			th[j].best_n = s->values[type];
		}
		/* the name comes with the samples after the thread set it */
		if (th[j].named == SIZE_MAX &&
		    view_sample_label(s, "thread_name", buf, sizeof buf))
			th[j].named = i;
	}
	if (!n) {
		log_error("process %d sent no sample in %s s to the collector "
			  "on %s",
			  (int)pid, DUMP_CTL_SECONDS, sock);
		goto out;
	}
	print(p, th, n, pid, sock);
	code = fflush(stdout) == 0 ? 0 : 1;
out:
	free(th);
	view_free(p);
	return code;
}
