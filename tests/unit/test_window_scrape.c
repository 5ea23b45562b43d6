/*
 * test_window_scrape.c - scrape chains and name filters of profile windows
 * (collector/daemon/window.h) against a model.
 *
 * Two processes, "billing" (python -m app) and "python3" (search.py), are
 * fed samples every 20 ms, stamped every 5 ms up to the present (as the
 * library's agent sends them), for 3 s. A window keyed "k" is opened for
 * 1 s; half a second after it ends, the key's next request (1 s) must
 * continue it: its profile starts exactly where the first one ended,
 * ends 1 s after the request, and the two hold exactly the model's
 * samples of their intervals, none twice. Meanwhile one-off windows with
 * service= and command= filters hold only their process's samples, a
 * cancelled keyed window takes its standby with it, and
 * window_names_match reads names and joined command lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/loop.h"
#include "daemon/proc.h"
#include "proc_fixture.h"
#include "daemon/symtab.h"
#include "daemon/window.h"
#include "pyprof/wire.h"
#include "views/view_read.h"

#define MS 1000000ull
#define N_WIN 4 /* k first, k second, service=, command= */

struct result {
	int done, status;
	void *data;
	size_t len;
};

struct stamp {
	uint64_t pid, t, count;
};

static struct result res[N_WIN];
static struct proc_session *sessions[2];
static const uint64_t proc_pids[2] = { 301, 302 };
static uint64_t fed_to; /* samples are stamped up to here */
static struct stamp sent[4000];
static size_t n_sent;
static struct loop *the_loop;
static struct windows *the_ws;
static int n_done;

/* pid named comm with args, one function "work" on thread 1. */
static struct proc_session *open_proc(struct procs *reg, uint64_t pid,
				      const char *comm, const char **argv,
				      size_t argc)
{
	struct proc_bytes args[4];
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed, rc = 0;

	const char *names[1] = { "work" };

	for (size_t i = 0; i < argc; i++)
		args[i] = fx_bytes(argv[i]);
	struct proc_hello h = fx_hello(pid, WIRE_MODE_CPU, comm, args, argc);
	if (proc_session_open(reg, &h, &s, &resumed, err) < 0)
		return NULL;
	rc = fx_functions(s, pid, "x.py", names, 1);
	return rc ? NULL : s;
}

/* n samples of pid from..to, counts 1..3, noted in sent[]. */
static int feed(struct proc_session *s, uint64_t pid, uint64_t from,
		uint64_t to, size_t n)
{
	char err[ERR_LEN];
	for (size_t i = 0; i < n; i++) {
		uint64_t t = from + (to - from) / n * i, clock = t;
		uint64_t count = 1 + i % 3;
		if (n_sent == sizeof(sent) / sizeof(sent[0]))
			return -1;
		struct proc_sample r = { 1, 1, 0, count, count * 10 * MS,
					 0, 0, 0 };
		if (proc_check_samples(s, &r, 1, 0, err) < 0 ||
		    proc_add_samples(s, &clock, &r, 1, err) < 0)
			return -1;
		sent[n_sent++] = (struct stamp){ pid, t, count };
	}
	return 0;
}

/* Every 20 ms: the samples of the last 20 ms, both processes, one every
 * 5 ms (pid 302 half a period later). */
static void feed_tick(struct loop *loop, struct loop_timer *t, void *arg)
{
	uint64_t now = loop_now_ns();
	(void)loop;
	(void)t;
	(void)arg;
	for (; fed_to + 5 * MS <= now; fed_to += 5 * MS)
		for (int i = 0; i < 2; i++)
			if (feed(sessions[i], proc_pids[i],
				 fed_to + 5 * MS + (uint64_t)i * 2500000u,
				 fed_to + 10 * MS, 1) < 0)
				CHECK(0, "feeding");
}

static void on_done(void *arg, int status, void *data, size_t len,
		    const struct window_filter *f)
{
	struct result *r = arg;
	(void)f;
	r->done++;
	r->status = status;
	r->data = data;
	r->len = len;
	if (++n_done == N_WIN)
		loop_stop(the_loop);
}

/* The key's next request, half a second after its first window ended. */
static void second_request(struct loop *loop, struct loop_timer *t,
			   void *arg)
{
	const struct window_filter *f = arg;
	(void)loop;
	(void)t;
	CHECK(res[0].done == 1, "2.1 the first window answered before");
	CHECK(window_open(the_ws, f, 1, "k", on_done, &res[1]) != NULL,
	      "2.2 the key's next request opens");
}

/* Samples of pid (0: any) in a profile, and its interval. */
static uint64_t sum_of(const struct result *r, uint64_t pid, int64_t *start,
		       int64_t *dur)
{
	struct view_profile *vp;
	char err[ERR_LEN];
	uint64_t n = 0;
	if (r->status != 0 || view_read_mem(r->data, r->len, &vp, err) < 0)
		return UINT64_MAX;
	*start = vp->time_nanos;
	*dur = vp->duration_nanos;
	for (size_t i = 0; i < vp->n_samples; i++) {
		const struct view_sample *s = &vp->samples[i];
		for (uint32_t j = 0; j < s->n_labels; j++)
			if (!strcmp(s->labels[j].key, "pid") &&
			    (!pid || (uint64_t)s->labels[j].num == pid))
				n += (uint64_t)s->values[0];
	}
	view_free(vp);
	return n;
}

static uint64_t model(uint64_t pid, uint64_t from, uint64_t to)
{
	uint64_t n = 0;
	for (size_t i = 0; i < n_sent; i++)
		if ((!pid || sent[i].pid == pid) && sent[i].t >= from &&
		    sent[i].t < to)
			n += sent[i].count;
	return n;
}

/* Whether got is pid's model for a 1 s window started somewhere in
 * [at[0], at[1]] (the instants around its window_open; see 3.4). */
static int one_of(uint64_t got, uint64_t pid, const uint64_t at[2])
{
	for (uint64_t a = at[0]; a <= at[1] + 100000u; a += 100000u)
		if (got == model(pid, a, a + 1000 * MS))
			return 1;
	return 0;
}

static void check_names(struct symtab *st, const struct proc *billing,
			const struct proc *search)
{
	struct window_filter f = { .mode = WIRE_MODE_CPU };
	snprintf(f.service, sizeof(f.service), "python3");
	CHECK(window_names_match(st, &f, search) &&
		      !window_names_match(st, &f, billing),
	      "4.1 service= is the process name, exactly");
	f.service[0] = 0;
	snprintf(f.command, sizeof(f.command), "-m app");
	CHECK(window_names_match(st, &f, billing) &&
		      !window_names_match(st, &f, search),
	      "4.2 command= is found across the arguments joined by spaces");
	snprintf(f.service, sizeof(f.service), "billing");
	snprintf(f.command, sizeof(f.command), "search");
	CHECK(!window_names_match(st, &f, billing),
	      "4.3 service= and command= both apply");
}

int main(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = st ? procs_new(st) : NULL;
	const char *bargv[] = { "billing", "-m", "app" };
	const char *sargv[] = { "python3", "search.py" };
	static struct window_filter all = { .mode = WIRE_MODE_CPU };
	struct window_filter by_service = { .mode = WIRE_MODE_CPU };
	struct window_filter by_command = { .mode = WIRE_MODE_CPU };
	struct proc_session *b, *s;

	the_loop = loop_new();
	CHECK_OR_RETURN(st && reg && the_loop, "0.1 setup", 1);
	the_ws = windows_new(the_loop, st, reg, NULL);
	b = open_proc(reg, 301, "billing", bargv, 3);
	s = open_proc(reg, 302, "python3", sargv, 2);
	CHECK_OR_RETURN(the_ws && b && s, "0.2 windows and processes", 1);
	snprintf(by_service.service, sizeof(by_service.service), "billing");
	snprintf(by_command.command, sizeof(by_command.command), "search.py");

	uint64_t t0 = loop_now_ns();
	struct window *k1 = window_open(the_ws, &all, 1, "k", on_done, &res[0]);
	uint64_t t_after = loop_now_ns(); /* k1 started in [t0, t_after] */
	uint64_t named_at[2][2];	  /* each one-off started in [0], [1] */
	named_at[0][0] = loop_now_ns();
	struct window *w2 = window_open(the_ws, &by_service, 1, NULL, on_done,
					&res[2]);
	named_at[0][1] = named_at[1][0] = loop_now_ns();
	struct window *w3 = window_open(the_ws, &by_command, 1, NULL, on_done,
					&res[3]);
	named_at[1][1] = loop_now_ns();
	CHECK(w2 && w3, "1.1 one-off windows with names open");
	CHECK_OR_RETURN(k1 != NULL, "1.2 keyed window opens", 1);
	CHECK(windows_standbys(the_ws) == 1, "1.3 it leaves one standby");
	struct window *c = window_open(the_ws, &all, 1, "c", on_done, NULL);
	window_cancel(c);
	CHECK(windows_standbys(the_ws) == 1,
	      "1.4 a cancelled window takes its standby with it");
	uint64_t k1_start, k1_end;
	window_span(k1, &k1_start, &k1_end);
	CHECK(k1_end - k1_start == 1000 * MS, "1.5 a first window lasts 1 s");
	sessions[0] = b;
	sessions[1] = s;
	CHECK(feed(b, 301, t0 - 200 * MS, t0 - 1 * MS, 40) == 0 &&
		      feed(s, 302, t0 - 200 * MS, t0 - 1 * MS, 41) == 0,
	      "1.6 fed (before)");
	fed_to = t0 - 1 * MS;
	loop_add_timer(the_loop, 1500 * MS, 0, second_request, &all);
	struct loop_timer *ft = loop_add_timer(the_loop, 20 * MS, 20 * MS,
					       feed_tick, NULL);
	CHECK_OR_RETURN(ft != NULL, "1.7 feeding timer", 1);

	CHECK(loop_run(the_loop) == 0 && n_done == N_WIN,
	      "3.1 every window answered");
	loop_del_timer(the_loop, ft);
	int64_t s0, d0, s1, d1, s2, d2, s3, d3;
	uint64_t g0 = sum_of(&res[0], 0, &s0, &d0);
	uint64_t g1 = sum_of(&res[1], 0, &s1, &d1);
	CHECK(s1 == s0 + d0, "3.2 the next scrape starts where the last "
			     "one ended, exactly");
	CHECK(d1 >= 1400 * (int64_t)MS && d1 <= 1700 * (int64_t)MS,
	      "3.3 and ends 1 s after it was asked (about 1.5 s in all)");
	/* k1 started somewhere in [t0, t_after] (microseconds; more under
	 * valgrind): the model is taken at every 0.1 ms of that range
	 * (samples are 2.5 ms apart, so no start that matters is skipped),
	 * and one of them must be exactly right for both windows. */
	int same = 0;
	for (uint64_t a = t0; !same && a <= t_after + 100000u; a += 100000u) {
		uint64_t e0 = a + (uint64_t)d0, e1 = e0 + (uint64_t)d1;
		same = g0 == model(0, a, e0) && g1 == model(0, e0, e1);
	}
	if (!same)
		fprintf(stderr, "k: got %llu + %llu, model from t0 %llu + "
				"%llu\n",
			(unsigned long long)g0,
			(unsigned long long)g1,
			(unsigned long long)model(0, t0, t0 + (uint64_t)d0),
			(unsigned long long)model(0, t0 + (uint64_t)d0,
						  t0 + (uint64_t)(d0 + d1)));
	CHECK(same, "3.4 each holds exactly the model's samples of its "
		    "interval: none lost in the gap, none twice");
	CHECK(sum_of(&res[2], 302, &s2, &d2) == 0 &&
		      one_of(sum_of(&res[2], 301, &s2, &d2), 301, named_at[0]),
	      "3.5 service=billing holds billing only, all of it");
	CHECK(sum_of(&res[3], 301, &s3, &d3) == 0 &&
		      one_of(sum_of(&res[3], 302, &s3, &d3), 302, named_at[1]),
	      "3.6 command=search.py holds search.py only, all of it");
	CHECK(windows_len(the_ws) == 0 && windows_standbys(the_ws) == 1,
	      "3.7 no window open; the chain's standby waits");
	check_names(st, proc_session_proc(b), proc_session_proc(s));

	for (int i = 0; i < N_WIN; i++)
		free(res[i].data);
	windows_free(the_ws);
	struct proc *p;
	if ((p = proc_session_close(b)))
		procs_remove(reg, p);
	if ((p = proc_session_close(s)))
		procs_remove(reg, p);
	procs_free(reg);
	symtab_free(st);
	loop_free(the_loop);
	return check_summary();
}
