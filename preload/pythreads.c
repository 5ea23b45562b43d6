/*
 * pythreads.c - see pythreads.h. One guarded region per listing (the
 * thread states), one guarded copy per thread for its ident before 3.11.
 */
#include "pythreads.h"

#include "guard.h"
#include "pyabi.h"
#include "sampler.h"
#include "tid.h"

#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))

struct listing {
	struct pythread *out;
	int max, n;
};

/* The thread listing, a guarded region (guard_run_sigsafe). */
static void list_region(void *arg)
{
	const struct pyabi *a = sampler.abi;
	struct listing *l = arg;
	uintptr_t interp = (uintptr_t)sampler.interp_head();
	l->n = 0;
	for (int i = 0; interp && i < 64; i++) {
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
}

int pythreads_list(struct pythread *out, int max)
{
	struct listing l = {out, max, 0};
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
