/*
 * remote_dump.c - every thread's Python stack of a running CPython
 * (2.7-3.15), read from outside (remote.h's remote_dump).
 *
 * No walker of its own: the stacks are walked by the library's
 * (preload/signal/sig_frames.c, compiled a second time into pyprof with
 * its loads from the target: pyprof/walk.h), and code objects are named
 * with the library's decoders (preload/cpython/pycode.c). The layout is
 * the generated row of the target's version (pyabi_find), and on 3.13+
 * the row built from the target's own _Py_DebugOffsets
 * (pyabi_from_debug_offsets), as the library builds it at start-up.
 *
 * What it reads besides the frames, each through the same row: the
 * interpreters, their thread states and each thread's OS id and name
 * (remote_threads.c, shared with the sampler from outside), and the
 * GIL's holder (pyabi_gil_holder).
 *
 * The target is not stopped: a thread that runs while its stack is read
 * may be read torn; the walker's checks stop such a walk (a read that
 * fails, a chain cut), which is tried again a few times from fresh reads.
 * Every loop is bounded: interpreters, threads, frames (DUMP_MAX_FRAMES),
 * strings and line tables (pycode.h's caps, TABLE_MAX here).
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyprof/pyabi.h"
#include "pyprof/walk.h"
#include "remote/remote.h"

#define DUMP_MAX_FRAMES 8192
#define MAX_THREADS 4096
#define WALK_TRIES 5

struct thread {
	struct remote_thread r;
	int gil;
	int n, rc;
	uint16_t flags;
	struct raw_frame *frames;
};

static pid_t sort_pid;

/* the main thread first, then by id */
static int cmp_thread(const void *pa, const void *pb)
{
	const struct thread *a = pa, *b = pb;
	int ma = a->r.tid != sort_pid, mb = b->r.tid != sort_pid;

	if (ma != mb)
		return ma - mb;
	return a->r.tid < b->r.tid ? -1 : a->r.tid > b->r.tid;
}

static void print_thread(FILE *out, const struct thread *t,
			 struct remote_target *tg)
{
	char name[64];

	remote_thread_name(tg, &t->r, name, sizeof name);
	if (t->r.tid > 0)
		fprintf(out, "Thread %lld \"%s\"%s\n", (long long)t->r.tid,
			name, t->gil ? " (holds the GIL)" : "");
	else
		fprintf(out, "Thread 0x%llx \"%s\"%s\n",
			(unsigned long long)t->r.pthread, name,
			t->gil ? " (holds the GIL)" : "");
	for (int k = 0; k < t->n; k++) {
		const struct raw_frame *f = &t->frames[k];
		const struct remote_named *e =
			remote_name_code(tg, raw_code(f), f->fp);

		if (!e) {
			fprintf(out, "    [unknown] (?:0)\n");
			continue;
		}
		fprintf(out, "    %s (%s:%d)\n", e->name, e->file,
			remote_code_line(tg, e, f->offset));
	}
	if (t->rc < 0)
		fprintf(out, "    (the rest of its stack could not be read: "
			     "%s)\n",
			strerror(-t->rc));
	else if (t->flags & WALK_TRUNCATED)
		fprintf(out, "    (cut: %s)\n",
			t->n >= DUMP_MAX_FRAMES
				? "more frames than pyprof reads, "
				  "8192, or a chain that loops"
				: "the chain ended at a frame that is not "
				  "the thread's first");
	else if (t->flags & WALK_INVALID)
		fprintf(out, "    (cut: the chain went on to something that "
			     "is not a frame)\n");
	else if (!t->n)
		fprintf(out, "    (no Python frame)\n");
}

int remote_dump(const struct remote_py *py, FILE *out, char *why,
		size_t why_len)
{
	struct remote_target tg;
	struct thread *th = calloc(MAX_THREADS, sizeof *th);
	struct remote_thread *list = calloc(MAX_THREADS, sizeof *list);
	int n = 0, rc = -1, failed = 0, opened = 0;
	pid_t pid = py->pid;

	if (!th || !list) {
		remote_say(why, why_len, "out of memory");
		goto out;
	}
	if (remote_target_open(&tg, py, why, why_len) < 0)
		goto out;
	opened = 1;
	n = remote_threads_list(&tg, list, MAX_THREADS, why, why_len);
	if (n < 0) {
		n = 0;
		goto out;
	}
	if (tg.env.abi->ts_native_thread_id == PYABI_NONE)
		remote_threads_tids(&tg, list, n);
	/* each stack, then the GIL as it is right after */
	for (int i = 0; i < n; i++) {
		struct thread *t = &th[i];
		uintptr_t holder = 0;

		t->r = list[i];
		t->frames = calloc(DUMP_MAX_FRAMES, sizeof *t->frames);
		if (!t->frames) {
			t->rc = -ENOMEM;
			continue;
		}
		for (int k = 0; k < WALK_TRIES; k++) {
			t->flags = 0;
			t->rc = frames_walk_remote(&tg.env, t->r.ts, t->frames,
						   DUMP_MAX_FRAMES, &t->flags);
			if (t->rc >= 0 && !(t->flags & WALK_INVALID))
				break;
			if (remote_mem_error() == ESRCH)
				break;
		}
		t->n = t->rc > 0 ? t->rc : 0;
		if (t->rc >= 0)
			t->rc = 0;
		if (pyabi_gil_holder(tg.env.abi, (uintptr_t)py->runtime,
				     (uintptr_t)t->r.interp,
				     (uintptr_t)tg.cur_sym, remote_mem_copy,
				     &holder) == 0)
			t->gil = holder == t->r.ts;
	}
	sort_pid = pid;
	qsort(th, (size_t)n, sizeof *th, cmp_thread);
	for (int i = 0; i < n; i++) {
		print_thread(out, &th[i], &tg);
		if (th[i].rc < 0)
			failed = th[i].rc;
	}
	rc = 0;
	if (failed) {
		if (remote_mem_error() == ESRCH || kill(pid, 0) < 0)
			remote_say(why, why_len,
				   "process %d exited while its stacks "
				   "were read: the stacks above are what "
				   "was read",
				   (int)pid);
		else
			remote_say(why, why_len,
				   "a stack of process %d could not be "
				   "read whole: %s (its memory changed "
				   "under the read, or is not a stack)",
				   (int)pid, strerror(-failed));
		rc = 1;
	}
out:
	if (th)
		for (int i = 0; i < n; i++)
			free(th[i].frames);
	free(th);
	free(list);
	if (opened)
		remote_target_close(&tg);
	return rc;
}
