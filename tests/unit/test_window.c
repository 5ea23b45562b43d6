/*
 * test_window.c - profile windows (collector/daemon/window.h) against a model.
 *
 * Three processes (two in CPU mode, one in wall mode) are fed random
 * samples stamped from half a second before to a second after several
 * overlapping windows (all CPU processes for 1 s and for 2 s, one pid for
 * 1 s, wall mode for 1 s). Each window's profile, read back with the
 * views' pprof reader, must hold exactly the samples the model (a plain
 * filter over the list of samples sent) says: per pid, per function.
 * Meanwhile the symbol tables are compacted, and every process ends and
 * is freed before the windows close (a new one takes its place), so the
 * windows must keep their own copies and ids that stay valid. Also: lost
 * counts, cancelling, and the limit on open windows. Then block and mutex
 * windows (window_filter.waits): exactly the wait records of their kind,
 * from processes of either mode.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/loop.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "proc_fixture.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"
#include "views/view_read.h"
#include "daemon/window.h"

#define N_PROCS 4
#define N_WINDOWS 4
#define N_SAMPLES 3000
#define MS 1000000ull

struct sent {
	uint64_t pid, t;
	unsigned mode;
	int func; /* 1..3 */
	uint64_t count;
};

struct result {
	int done, status;
	void *data;
	size_t len;
};

static struct sent sent[N_PROCS * N_SAMPLES];
static size_t n_sent;
static struct result results[N_WINDOWS + 1];
static int n_done;
static struct loop *the_loop;

/* A session for pid with functions <prefix>1, 2, 3 (node i: the stack
 * of depth 1 at function i) on thread 1. */
static struct proc_session *open_proc(struct procs *reg, uint64_t pid,
				      unsigned mode, const char *prefix)
{
	struct proc_bytes args[2] = { fx_bytes("python3"), fx_bytes("w.py") };
	struct proc_hello h = fx_hello(pid, mode, "python3", args, 2);
	char f[3][16];
	const char *names[3] = { f[0], f[1], f[2] };
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed;

	for (int i = 0; i < 3; i++)
		snprintf(f[i], sizeof(f[i]), "%s%d", prefix, i + 1);
	if (proc_session_open(reg, &h, &s, &resumed, err) < 0)
		return NULL;
	if (fx_functions(s, pid, "w.py", names, 3) < 0) {
		proc_session_close(s);
		return NULL;
	}
	return s;
}

static unsigned seed = 12345;

static int feed(struct proc_session *s, uint64_t pid, unsigned mode,
		uint64_t from, uint64_t to, size_t n)
{
	char err[ERR_LEN];
	for (size_t i = 0; i < n; i++) {
		uint64_t t = from + (to - from) / n * i;
		int func = 1 + (int)(rand_r(&seed) % 3);
		uint64_t count = 1 + (uint64_t)(rand_r(&seed) % 3);
		struct proc_sample r = { (uint64_t)func, 1, 0, count,
					 count * 10 * MS, 0, 0, 0 };
		uint64_t clock = t;
		if (proc_check_samples(s, &r, 1, 0, err) < 0 ||
		    proc_add_samples(s, &clock, &r, 1, err) < 0)
			return -1;
		sent[n_sent++] = (struct sent){ pid, t, mode, func, count };
	}
	return 0;
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
	if (++n_done == N_WINDOWS)
		loop_stop(the_loop);
}

static void on_never(void *arg, int status, void *data, size_t len,
		     const struct window_filter *f)
{
	(void)arg;
	(void)status;
	(void)f;
	(void)len;
	free(data);
	CHECK(0, "a cancelled window's callback never runs");
}

/* Sums of a profile: per (pid, func) sample counts, and lost. */
struct sums {
	uint64_t by[N_PROCS + 1][4];
	uint64_t lost;
	uint64_t other;
	int64_t duration;
};

static int read_sums(const struct result *r, const uint64_t *pids,
		     struct sums *out)
{
	struct view_profile *vp;
	char err[ERR_LEN];
	memset(out, 0, sizeof(*out));
	if (view_read_mem(r->data, r->len, &vp, err) < 0) {
		fprintf(stderr, "read: %s\n", err);
		return -1;
	}
	out->duration = vp->duration_nanos;
	for (size_t i = 0; i < vp->n_samples; i++) {
		const struct view_sample *s = &vp->samples[i];
		const char *name = vp->funcs[vp->frames[s->frames[0]].func].name;
		int64_t pid = -1;
		for (uint32_t j = 0; j < s->n_labels; j++)
			if (!strcmp(s->labels[j].key, "pid"))
				pid = s->labels[j].num;
		int pi = -1;
		for (int k = 0; k < N_PROCS; k++)
			if ((int64_t)pids[k] == pid)
				pi = k;
		if (!strncmp(name, "[lost", 5))
			out->lost += (uint64_t)s->values[0];
		else if (pi >= 0 && name[0] == 'f' && name[1] >= '1' &&
			 name[1] <= '3' && !name[2])
			out->by[pi][name[1] - '0'] += (uint64_t)s->values[0];
		else
			out->other += (uint64_t)s->values[0];
	}
	view_free(vp);
	return 0;
}

/* The windows (filter, seconds) and the processes (pid, mode). */
static const struct window_filter fs[N_WINDOWS] = {
	{ .pid = 0, .mode = WIRE_MODE_CPU },   /* all CPU processes, 1 s */
	{ .pid = 101, .mode = WIRE_MODE_CPU }, /* one pid, 1 s */
	{ .pid = 0, .mode = WIRE_MODE_WALL },  /* the wall process, 1 s */
	{ .pid = 0, .mode = WIRE_MODE_CPU },   /* all CPU processes, 2 s */
};
static const unsigned secs[N_WINDOWS] = { 1, 1, 1, 2 };
static const uint64_t pids[N_PROCS] = { 101, 102, 103, 104 };
static const unsigned modes[N_PROCS] = { WIRE_MODE_CPU, WIRE_MODE_CPU,
					 WIRE_MODE_WALL, WIRE_MODE_CPU };

/* What the steps share. */
struct run {
	struct procs *reg;
	struct windows *ws;
	struct proc_session *s[N_PROCS];
	uint64_t before, after; /* the windows opened between these */
	uint64_t slack;		/* what opening them took, and 1 ms */
};

/* 1. Open the windows; they start between before and after. Then the
 * samples: [before - 500 ms, before) is outside every window; then up to
 * after + 2.5 s, leaving out the two instants where windows end (end +-
 * what opening them took). */
static int open_windows(struct run *r)
{
	struct window *w[N_WINDOWS + 1];
	r->before = loop_now_ns();
	for (int i = 0; i < N_WINDOWS; i++)
		w[i] = window_open(r->ws, &fs[i], secs[i], NULL, on_done, &results[i]);
	r->after = loop_now_ns();
	CHECK_OR_RETURN(w[0] && w[1] && w[2] && w[3], "1.1 windows open", -1);
	w[N_WINDOWS] = window_open(r->ws, &fs[0], 1, NULL, on_never, NULL);
	CHECK(w[N_WINDOWS] != NULL, "1.2 a fifth window opens");
	window_cancel(w[N_WINDOWS]);
	CHECK(windows_len(r->ws) == N_WINDOWS, "1.3 cancelled one is gone");

	r->slack = r->after - r->before + 1 * MS;
	for (int i = 0; i < 3; i++) {
		CHECK(feed(r->s[i], pids[i], modes[i], r->before - 500 * MS,
			   r->before - r->slack, 200) == 0,
		      "1.4 fed (before)");
		CHECK(feed(r->s[i], pids[i], modes[i], r->after + 1 * MS,
			   r->before + 1000 * MS - r->slack, 600) == 0,
		      "1.5 fed (first second)");
	}
	return 0;
}

/* 2. Compaction while windows hold ids (renumbered: pid 99's symbols,
 * gs's, are gone). Lost samples arrive while the windows are open. */
static void compact_while_open(struct run *r, struct proc_session *gs)
{
	char err[ERR_LEN];
	struct proc *gp = gs ? proc_session_proc(gs) : NULL;
	if (gs && proc_session_close(gs))
		procs_remove(r->reg, gp);
	CHECK(procs_compact(r->reg) == 0, "2.1 compaction");
	CHECK(proc_add_lost(r->s[0], WIRE_LOST_RING_FULL, 5, 50 * MS, err) ==
		      0,
	      "2.2 lost");
	for (int i = 0; i < 3; i++)
		CHECK(feed(r->s[i], pids[i], modes[i],
			   r->after + 1000 * MS + r->slack,
			   r->before + 2000 * MS - r->slack, 500) == 0,
		      "2.3 fed (second second)");
}

/* 3. Every process ends and is freed; the registry is empty (the symtab
 * would be cleared if nothing held it). A new process follows, probably
 * at the same address. */
static int replace_processes(struct run *r)
{
	for (int i = 0; i < 3; i++) {
		struct proc *p = proc_session_close(r->s[i]);
		CHECK(p != NULL, "3.1 last session closed");
		procs_remove(r->reg, p);
	}
	CHECK(procs_len(r->reg) == 0, "3.2 registry empty");
	r->s[3] = open_proc(r->reg, pids[3], modes[3], "f");
	CHECK_OR_RETURN(r->s[3] != NULL, "3.3 a new process", -1);
	CHECK(feed(r->s[3], pids[3], modes[3], r->after + 1500 * MS,
		   r->before + 2000 * MS - r->slack, 100) == 0,
	      "3.4 fed (new)");
	CHECK(feed(r->s[3], pids[3], modes[3], r->after + 2000 * MS + r->slack,
		   r->after + 2500 * MS, 50) == 0,
	      "3.5 fed (after all)");
	CHECK(procs_compact(r->reg) == 0, "3.6 compaction again");
	return 0;
}

/* The model: the samples sent that window i, from start, takes. */
static void model_window(int i, uint64_t start,
			 uint64_t want[N_PROCS + 1][4])
{
	for (size_t k = 0; k < n_sent; k++) {
		const struct sent *x = &sent[k];
		if (x->t < start ||
		    x->t >= start + (uint64_t)secs[i] * 1000 * MS)
			continue;
		if (x->mode != fs[i].mode ||
		    (fs[i].pid && x->pid != fs[i].pid))
			continue;
		for (int pi = 0; pi < N_PROCS; pi++)
			if (pids[pi] == x->pid)
				want[pi][x->func] += x->count;
	}
}

/* 4.x for window i: its profile against the model. */
static int check_window(int i, const struct run *r)
{
	char what[128];
	struct sums got;
	uint64_t want[N_PROCS + 1][4] = { { 0 } };
	uint64_t start = r->before; /* see slack */
	snprintf(what, sizeof(what), "4.2 window %d built", i);
	CHECK_OR_RETURN(results[i].done == 1 && results[i].status == 0,
			what, -1);
	CHECK_OR_RETURN(read_sums(&results[i], pids, &got) == 0,
			"4.3 readable", -1);
	model_window(i, start, want);
	int same = 1;
	for (int pi = 0; pi < N_PROCS; pi++)
		for (int f = 1; f <= 3; f++) {
			if (got.by[pi][f] != want[pi][f]) {
				fprintf(stderr, "window %d pid %d f%d: "
						"got %llu want %llu\n",
					i,
					(int)pids[pi], f,
					(unsigned long long)got.by[pi][f],
					(unsigned long long)want[pi][f]);
				same = 0;
			}
		}
	snprintf(what, sizeof(what), "4.4 window %d holds exactly the "
				     "model's samples per pid and function",
		 i);
	CHECK(same, what);
	snprintf(what, sizeof(what), "4.5 window %d: nothing else", i);
	CHECK(got.other == 0, what);
	snprintf(what, sizeof(what), "4.6 window %d: lost counted where "
				     "pid 101 matches",
		 i);
	CHECK(got.lost == (fs[i].mode == WIRE_MODE_CPU ? 5u : 0u), what);
	snprintf(what, sizeof(what), "4.7 window %d lasts %u s", i, secs[i]);
	CHECK(got.duration == (int64_t)secs[i] * 1000000000, what);
	free(results[i].data);
	return 0;
}

/* 5. The limit on open windows. */
static void check_window_limit(struct windows *ws)
{
	struct window *many[WINDOW_MAX + 1];
	int n_open = 0;
	for (int i = 0; i <= WINDOW_MAX; i++) {
		many[i] = window_open(ws, &fs[0], 1, NULL, on_never, NULL);
		n_open += many[i] != NULL;
	}
	CHECK(n_open == WINDOW_MAX && many[WINDOW_MAX] == NULL &&
		      errno == EBUSY,
	      "5.1 at most WINDOW_MAX windows, then EBUSY");
}

/* 6. Block and mutex windows: processes in CPU and in wall mode each
 * send CPU samples in f1, block records in f2 and mutex charges in f3
 * (SAMPLES flags WIRE_SF_WAIT_BLOCK / _MUTEX); the block window holds
 * exactly the f2 records of both, the mutex window the f3 ones, with
 * Go's sample types. */
#define WAITS_PIDS 2
static struct result wres[2];
static int n_wdone;

static void on_wdone(void *arg, int status, void *data, size_t len,
		     const struct window_filter *f)
{
	struct result *r = arg;
	(void)f;
	r->done++;
	r->status = status;
	r->data = data;
	r->len = len;
	if (++n_wdone == 2)
		loop_stop(the_loop);
}

static int feed_one(struct proc_session *s, uint64_t t, int func,
		    uint64_t flags, uint64_t count, uint64_t value)
{
	char err[ERR_LEN];
	struct proc_sample x = { (uint64_t)func, 1, 0, count, value, flags,
				 0, 0 };
	uint64_t clock = t;
	if (proc_check_samples(s, &x, 1, 0, err) < 0 ||
	    proc_add_samples(s, &clock, &x, 1, err) < 0)
		return -1;
	return 0;
}

/* The sums of window result r: per pid index and function, count and
 * delay; 0, or -1 if unreadable or not Go's block/mutex types. */
static int read_waits(const struct result *r, const uint64_t *wpids,
		      uint64_t count[WAITS_PIDS][4],
		      uint64_t delay[WAITS_PIDS][4])
{
	struct view_profile *vp;
	char err[ERR_LEN];
	int rc = 0;
	if (view_read_mem(r->data, r->len, &vp, err) < 0)
		return -1;
	if (vp->n_types != 2 || strcmp(vp->types[0].type, "contentions") ||
	    strcmp(vp->types[1].type, "delay"))
		rc = -1;
	for (size_t i = 0; i < vp->n_samples && !rc; i++) {
		const struct view_sample *x = &vp->samples[i];
		const char *name =
			vp->funcs[vp->frames[x->frames[0]].func].name;
		int64_t pid = -1;
		for (uint32_t j = 0; j < x->n_labels; j++)
			if (!strcmp(x->labels[j].key, "pid"))
				pid = x->labels[j].num;
		for (int k = 0; k < WAITS_PIDS; k++)
			if ((int64_t)wpids[k] == pid && name[0] == 'f' &&
			    name[1] >= '1' && name[1] <= '3') {
				count[k][name[1] - '0'] +=
					(uint64_t)x->values[0];
				delay[k][name[1] - '0'] +=
					(uint64_t)x->values[1];
			}
	}
	view_free(vp);
	return rc;
}

static void check_waits_windows(struct symtab *st)
{
	static const uint64_t wpids[WAITS_PIDS] = { 201, 202 };
	static const unsigned wmodes[WAITS_PIDS] = { WIRE_MODE_CPU,
						     WIRE_MODE_WALL };
	const struct window_filter fb = { .waits = PPROF_WAITS_BLOCK },
				   fm = { .waits = PPROF_WAITS_MUTEX };
	struct procs *reg = procs_new(st);
	struct windows *ws = reg ? windows_new(the_loop, st, reg, NULL)
				 : NULL;
	struct proc_session *s[WAITS_PIDS] = { NULL, NULL };
	uint64_t bc[WAITS_PIDS][4] = { { 0 } }, bd[WAITS_PIDS][4] = { { 0 } };
	uint64_t mc[WAITS_PIDS][4] = { { 0 } }, md[WAITS_PIDS][4] = { { 0 } };
	uint64_t want_bd = 0;
	int fed = 0;

	CHECK(ws != NULL, "6.1 set-up");
	if (!ws)
		goto out;
	for (int k = 0; k < WAITS_PIDS; k++)
		s[k] = open_proc(reg, wpids[k], wmodes[k], "f");
	CHECK(window_open(ws, &fb, 1, NULL, on_wdone, &wres[0]) &&
		      window_open(ws, &fm, 1, NULL, on_wdone, &wres[1]),
	      "6.2 a block and a mutex window open");
	uint64_t t = loop_now_ns() + 10 * MS;
	for (int i = 0; i < 50; i++)
		for (int k = 0; k < WAITS_PIDS; k++)
			fed |= !s[k] ||
			       feed_one(s[k], t + (uint64_t)i * MS, 1, 0, 1,
					10 * MS) < 0 ||
			       feed_one(s[k], t + (uint64_t)i * MS, 2,
					WIRE_SF_WAIT_BLOCK, 1,
					1000 * (uint64_t)(i + 1)) < 0 ||
			       feed_one(s[k], t + (uint64_t)i * MS, 3,
					WIRE_SF_WAIT_MUTEX, 2, 500) < 0;
	for (int i = 0; i < 50; i++)
		want_bd += 1000 * (uint64_t)(i + 1);
	CHECK(!fed, "6.3 fed CPU, block and mutex records to both");
	n_wdone = 0;
	CHECK(loop_run(the_loop) == 0 && n_wdone == 2,
	      "6.4 both windows answered");
	CHECK(wres[0].status == 0 &&
		      read_waits(&wres[0], wpids, bc, bd) == 0 &&
		      wres[1].status == 0 &&
		      read_waits(&wres[1], wpids, mc, md) == 0,
	      "6.5 both read, as contentions and delay");
	int ok = 1;
	for (int k = 0; k < WAITS_PIDS; k++)
		ok &= bc[k][2] == 50 && bd[k][2] == want_bd && !bc[k][1] &&
		      !bc[k][3] && mc[k][3] == 100 && md[k][3] == 50 * 500 &&
		      !mc[k][1] && !mc[k][2];
	CHECK(ok, "6.6 each holds exactly its kind's records, from the CPU "
		  "and the wall process alike");
	free(wres[0].data);
	free(wres[1].data);
out:
	for (int k = 0; k < WAITS_PIDS; k++) {
		struct proc *p = s[k] ? proc_session_close(s[k]) : NULL;
		if (p)
			procs_remove(reg, p);
	}
	windows_free(ws);
	procs_free(reg);
}

int main(void)
{
	struct symtab *st = symtab_new();
	struct run r = { .reg = procs_new(st) };

	the_loop = loop_new();
	CHECK_OR_RETURN(st && r.reg && the_loop, "0.1 setup", 1);
	r.ws = windows_new(the_loop, st, r.reg, NULL);
	CHECK_OR_RETURN(r.ws != NULL, "0.2 windows_new", 1);
	/* A process whose symbols become garbage, defined first so that
	 * compacting them away renumbers everything the windows hold. */
	struct proc_session *gs = open_proc(r.reg, 99, WIRE_MODE_CPU, "g");
	for (int i = 0; i < 3; i++)
		r.s[i] = open_proc(r.reg, pids[i], modes[i], "f");
	CHECK_OR_RETURN(r.s[0] && r.s[1] && r.s[2], "0.3 processes", 1);

	if (open_windows(&r) < 0)
		return 1;
	compact_while_open(&r, gs);
	if (replace_processes(&r) < 0)
		return 1;

	/* 4. Run until all four closed. */
	int rc = loop_run(the_loop);
	CHECK(rc == 0 && n_done == N_WINDOWS, "4.1 every window answered");
	for (int i = 0; i < N_WINDOWS; i++)
		if (check_window(i, &r) < 0)
			return 1;
	CHECK(windows_len(r.ws) == 0, "4.8 no window left open");

	check_window_limit(r.ws);
	windows_free(r.ws); /* cancels them: no callback */
	check_waits_windows(st);

	struct proc *p = proc_session_close(r.s[3]);
	if (p)
		procs_remove(r.reg, p);
	procs_free(r.reg);
	symtab_free(st);
	loop_free(the_loop);
	return check_summary();
}
