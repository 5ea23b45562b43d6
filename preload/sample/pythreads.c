/*
 * pythreads.c - see pythreads.h. One guarded region per listing (the
 * thread states, one per OS thread: the one it runs), one guarded copy
 * per thread for its ident before 3.11.
 */
#include "pythreads.h"

#include "base/guard.h"
#include "pyprof/pyabi.h"
#include "base/sampler.h"
#include "base/tid.h"
#include "signal/sig_frames.h"

#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))

struct listing {
	struct pythread *out;
	int max, n;
};

/*
 * With subinterpreters, one OS thread has a thread state in each
 * interpreter it entered (3.12+: a concurrent.interpreters call, an
 * InterpreterPoolExecutor worker), all with its thread id: keep the one it
 * runs (frames_ts_rank_sigsafe; the first, the newest interpreter's, among
 * equals), so that a thread is sampled once, in the interpreter it runs.
 * Each thread state of a subinterpreter (main: the main interpreter, the
 * list's last) is looked for among all: a few times the threads, not
 * their square. Guard armed.
 */
static void one_per_thread(const struct pyabi *a, struct listing *l,
			   uintptr_t main)
{
	struct pythread *o = l->out;
	for (int i = 0; i < l->n; i++) {
		if (o[i].interp == main || !o[i].ts)
			continue;
		uintptr_t id = RD_PTR(o[i].ts + a->ts_thread_id);
		for (int j = 0; id && j < l->n; j++) {
			if (j == i || !o[j].ts ||
			    RD_PTR(o[j].ts + a->ts_thread_id) != id)
				continue;
			int ri = frames_ts_rank_sigsafe(o[i].ts, o[i].interp);
			int rj = frames_ts_rank_sigsafe(o[j].ts, o[j].interp);
			/* among equals the first listed stays */
			if (ri > rj || (ri == rj && i < j)) {
				o[j].ts = 0;
			} else {
				o[i].ts = 0;
				break;
			}
		}
	}
	int kept = 0;
	for (int i = 0; i < l->n; i++)
		if (o[i].ts)
			o[kept++] = o[i];
	l->n = kept;
}

/* The thread listing, a guarded region (guard_run_sigsafe). */
static void list_region(void *arg)
{
	const struct pyabi *a = sampler.abi;
	struct listing *l = arg;
	uintptr_t interp = (uintptr_t)sampler.interp_head();
	uintptr_t last = 0;
	int interps = 0;
	l->n = 0;
	for (int i = 0; interp && i < 64; i++, interps++) {
		last = interp;
		uintptr_t ts = RD_PTR(interp + a->interp_tstate_head);
		while (ts && l->n < l->max) {
			int tid = 0;
			if (a->ts_native_thread_id != PYABI_NONE)
				tid = (int)RD_I64(ts + a->ts_native_thread_id);
			l->out[l->n].ts = ts;
			l->out[l->n].interp = interp;
			l->out[l->n].tid = tid;
			l->n++;
			uintptr_t next = RD_PTR(ts + a->ts_next);
			if (next == ts)
				break;
			ts = next;
		}
		interp = RD_PTR(interp + a->interp_next);
	}
	if (interps > 1)
		one_per_thread(a, l, last);
}

int pythreads_list(struct pythread *out, int max)
{
	struct listing l = { out, max, 0 };
	if (guard_run_sigsafe(list_region, &l) < 0)
		return -1;
	for (int i = 0; i < l.n; i++) {
		uintptr_t ident;
		if (out[i].tid > 0)
			continue;
		if (guard_copy(&ident,
			       (void *)(out[i].ts + sampler.abi->ts_thread_id),
			       sizeof ident) == 0)
			out[i].tid = tid_of(ident);
	}
	return l.n;
}
