/*
 * push_sink.c - a push as an output sink, and Pyroscope's grouping by
 * service (see push_sink.h).
 */
#include "push/push_sink.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "daemon/daemon_api.h"
#include "push/push.h"
#include "pyprof/wire.h"

struct push_sink {
	struct push *push;
	const struct collector_opts *opts;
	struct symtab *st;
	int by_service; /* --pyroscope's windows by service (push_sink.h) */
};

/* Hands the profile data[0..len) of list[0..n) to the push: a CPU or
 * wall window (its mode), a heap one, or a block or mutex one
 * (po->waits). The service is the processes'
 * name when they share one. */
static void push_profile(struct push_sink *s, const struct proc *const *list,
			 size_t n, const struct pprof_opts *po,
			 const void *data, size_t len, int heap)
{
	const struct proc_info *in;
	struct push_window w = { 0 };

	if (n == 0)
		return;
	in = proc_info(list[0]);
	w.kind = po->waits == PPROF_WAITS_BLOCK	  ? PUSH_BLOCK
		 : po->waits == PPROF_WAITS_MUTEX ? PUSH_MUTEX
		 : heap				  ? PUSH_HEAP
		 : in->mode == WIRE_MODE_WALL	  ? PUSH_WALL
						  : PUSH_CPU;
	w.comm = symtab_string(s->st, in->comm_sid);
	w.pid = n == 1 && !po->proc_labels ? in->pid : 0;
	w.from_ns = in->start_unix_ns;
	for (size_t i = 1; i < n; i++) {
		const struct proc_info *other = proc_info(list[i]);
		if (other->comm_sid != in->comm_sid)
			w.comm = NULL;
		if (other->start_unix_ns < w.from_ns)
			w.from_ns = other->start_unix_ns;
	}
	if (po->end_unix_ns) {
		w.from_ns = po->start_unix_ns;
		w.until_ns = po->end_unix_ns;
	} else {
		w.until_ns = now_unix_ns();
	}
	w.rate_hz = in->period_ns ? (unsigned)((1000000000u +
						in->period_ns / 2) /
					       in->period_ns)
				  : 0;
	push_window(s->push, &w, data, len);
}

/* output_sink.profile: every profile, but a per-process window skips
 * --pyroscope when it gets them by service. */
static void on_profile(void *ctx, const struct proc *const *list, size_t n,
		       const struct pprof_opts *po, const void *data,
		       size_t len, int heap)
{
	struct push_sink *s = ctx;

	if (s->by_service && n == 1 && !po->proc_labels)
		return;
	push_profile(s, list, n, po, data, len, heap);
}

/* Whether a and b are in one Pyroscope series: the same mode, and the
 * same process name unless --service-name names them all. */
static int same_series(const struct push_sink *s, const struct proc *a,
		       const struct proc *b)
{
	const struct proc_info *x = proc_info(a), *y = proc_info(b);
	return x->mode == y->mode &&
	       (s->opts->push->service_name || x->comm_sid == y->comm_sid);
}

/* The block and mutex profiles of group[0..n) built with po, each to
 * the push when some process has such records. 0, or the first error. */
static int push_waits(struct push_sink *s, const struct proc **group,
		      size_t n, struct pprof_opts po)
{
	static const int kinds[] = { PPROF_WAITS_BLOCK, PPROF_WAITS_MUTEX };
	int rc = 0;

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		void *data = NULL;
		size_t len = 0;
		int r;

		if (!pprof_has_waits(group, n, kinds[k]))
			continue;
		po.waits = kinds[k];
		r = pprof_build(s->st, group, n, &po, &data, &len, NULL);
		if (r == 0)
			push_profile(s, group, n, &po, data, len, 0);
		else if (!rc)
			rc = r;
		free(data);
	}
	return rc;
}

/* One service's window [start_ns, end_ns) to --pyroscope: its CPU or
 * wall profile, its heap profile if any process has heap data, and its
 * block and mutex profiles if any has waits. */
static void push_group(struct push_sink *s, const struct proc **group,
		       size_t n, uint64_t start_ns, uint64_t end_ns)
{
	struct pprof_opts po = { .proc_labels = 1 };
	void *data = NULL;
	size_t len = 0;
	int rc, heap = 0;

	po.start_unix_ns = start_ns;
	po.end_unix_ns = end_ns > start_ns ? end_ns : start_ns;
	rc = pprof_build(s->st, group, n, &po, &data, &len, NULL);
	if (rc == 0)
		push_profile(s, group, n, &po, data, len, 0);
	free(data);
	for (size_t i = 0; i < n; i++)
		heap |= heapagg_has_data(proc_heap(group[i]));
	if (rc == 0 && heap) {
		po.heap = 1;
		data = NULL;
		rc = pprof_build(s->st, group, n, &po, &data, &len, NULL);
		if (rc == 0)
			push_profile(s, group, n, &po, data, len, 1);
		free(data);
	}
	if (rc == 0) {
		po.heap = 0;
		rc = push_waits(s, group, n, po);
	}
	if (rc < 0)
		log_error("push: cannot build the window of %s: %s",
			  symtab_string(s->st, proc_info(group[0])->comm_sid),
			  strerror(-rc));
}

/* output_sink.window_end, by service: the window of every process with
 * data in it (list[0..n)), one push per series. */
static void on_window_end(void *ctx, const struct proc *const *list,
			  size_t n_all, uint64_t start_ns, uint64_t end_ns)
{
	struct push_sink *s = ctx;
	const struct proc **all = calloc(n_all + 1, sizeof(*all));
	const struct proc **group = calloc(n_all + 1, sizeof(*group));
	size_t n;

	if (!all || !group) {
		log_error("push: out of memory for the window's services");
		goto out;
	}
	memcpy(all, list, n_all * sizeof(*all));
	for (size_t i = 0; i < n_all; i++) {
		const struct proc *first = all[i];
		if (!first)
			continue;
		n = 0;
		for (size_t j = i; j < n_all; j++)
			if (all[j] && same_series(s, first, all[j])) {
				group[n++] = all[j];
				all[j] = NULL;
			}
		push_group(s, group, n, start_ns, end_ns);
	}
out:
	free(all);
	free(group);
}

struct push_sink *push_sink_new(struct push *push, enum push_dest dest,
				const struct collector_opts *opts,
				struct symtab *st)
{
	struct push_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->push = push;
	s->opts = opts;
	s->st = st;
	s->by_service = dest == PUSH_PYROSCOPE && !opts->merge &&
			opts->period_ns;
	return s;
}

void push_sink_free(struct push_sink *s)
{
	free(s);
}

void push_sink_as_output(struct push_sink *s, struct output_sink *out)
{
	memset(out, 0, sizeof(*out));
	out->profile = on_profile;
	out->window_end = s->by_service ? on_window_end : NULL;
	out->keeps_ended = s->by_service;
	out->ctx = s;
}
