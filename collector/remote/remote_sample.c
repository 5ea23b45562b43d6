/*
 * remote_sample.c - a running CPython's threads sampled from outside
 * (remote.h's remote_sampler), for `pyprof record --pid` and `top --pid`
 * on every version: nothing loaded into the target, no signal, no stop.
 *
 * Each tick lists the thread states (remote_threads.c), asks the kernel
 * what each thread is doing, and walks the stacks with the library's
 * own walker (pyprof/walk.h) as dump does. Which stacks a tick hands on:
 *
 *   cpu   a thread found running at that moment: its state in
 *         /proc/PID/task/TID/stat is R (on a CPU, or runnable and
 *         preempted), or its CPU clock (schedstat's run time, in ns)
 *         moved across that read. Never the time a thread ran while
 *         unseen: a thread pool's worker that ran a burst between two
 *         ticks and waits at the next would have that burst charged to
 *         its wait (the queue's get) if its clock's growth were charged
 *         to the stack found then (the rule the library's clock sampler
 *         dropped for this reason: "Past the tick" in design.md). Each stack is
 *         worth the tick's interval, so a thread running all the time
 *         gets its CPU time, and one running a fraction f of it gets f
 *         of the ticks on average. Not the CPU its clock says it used
 *         in the interval: that weighs a burst by how long it had run
 *         when seen, and charged a pool's 5:3:2 bursts 66:24:10. A
 *         runnable thread waiting for a CPU (a loaded host) counts as
 *         running, as in the library (design.md: it is charged where it
 *         stopped, a point uniform in its CPU time), until its clock has
 *         stood still for SAMPLER_STILL_NS; dropping those whose clock
 *         had not moved since the last tick kept 56 samples of about
 *         800 at load 12 on 2 CPUs (the clock moves at the kernel's
 *         tick, every fourth of ours at 1 kHz).
 *   wall  every thread every tick, worth the interval; on CPU when found
 *         running or its clock grew by half the interval since the last
 *         tick (wall.c's rule), and whether it holds the GIL.
 *
 * The thread's own files in /proc are kept open (two a thread, in this
 * process) and read again with pread: a read is one system call.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyprof/pyabi.h"
#include "pyprof/walk.h"
#include "remote/remote.h"

#define SAMPLER_MAX_THREADS 4096
#define WALK_TRIES 3
#define NAME_LEN 64
/* A thread's threading name is read when it is first listed, and again
 * at 1, 2, 4... ticks after, this many times, until threading knows it */
#define NAME_TRIES 12
/* How long a running thread's clock may stand still: schedstat's run
 * time is brought up to date at each scheduler tick (4 ms at Debian's
 * HZ 250, 10 ms at HZ 100) and at each switch. Longer, a runnable
 * thread is waiting for a CPU (see thread_running). 50 ms let one
 * wait on a host at load 15 charge 12 samples at 250 Hz to one place,
 * and three functions' shares came within 2.9 points, not 1.5. */
#define SAMPLER_STILL_NS 15000000ull

/* What the sampler keeps of a thread between ticks. */
struct seen {
	uint64_t ts, pthread; /* the thread state it was found as */
	int64_t tid;
	int stat_fd, sched_fd; /* /proc/PID/task/TID/{stat,schedstat} */
	uint64_t run_ns;       /* its run time at the last tick */
	int has_run;
	uint64_t moved_ns; /* when run_ns was last seen to change */
	uint64_t gen;	   /* the last tick that listed it */
	uint64_t born;	   /* the tick that first listed it */
	int py_named;	   /* name is threading's (remote_thread_name) */
	int name_tries;	   /* names read again since (seen_rename) */
	char name[NAME_LEN];
};

struct remote_sampler {
	struct remote_py py; /* a copy: the target outlives its finder */
	struct remote_target tg;
	int wall, max_depth;
	uint64_t gen;
	struct remote_thread *list;
	struct raw_frame *frames;
	struct seen *seen;
	int n_seen;
};

static void seen_close(struct seen *s)
{
	if (s->stat_fd >= 0)
		close(s->stat_fd);
	if (s->sched_fd >= 0)
		close(s->sched_fd);
	s->stat_fd = s->sched_fd = -1;
}

struct remote_sampler *remote_sampler_new(const struct remote_py *py,
					  int wall, int max_depth, char *why,
					  size_t why_len)
{
	struct remote_sampler *s = calloc(1, sizeof *s);

	if (!s) {
		remote_say(why, why_len, "out of memory");
		return NULL;
	}
	s->py = *py;
	s->wall = wall;
	s->max_depth = max_depth;
	s->list = calloc(SAMPLER_MAX_THREADS, sizeof *s->list);
	s->seen = calloc(SAMPLER_MAX_THREADS, sizeof *s->seen);
	s->frames = calloc((size_t)max_depth, sizeof *s->frames);
	if (!s->list || !s->seen || !s->frames) {
		remote_say(why, why_len, "out of memory");
		goto fail;
	}
	if (remote_target_open(&s->tg, &s->py, why, why_len) < 0)
		goto fail;
	return s;
fail:
	free(s->list);
	free(s->seen);
	free(s->frames);
	free(s);
	return NULL;
}

void remote_sampler_free(struct remote_sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n_seen; i++)
		seen_close(&s->seen[i]);
	remote_target_close(&s->tg);
	free(s->list);
	free(s->seen);
	free(s->frames);
	free(s);
}

struct remote_target *remote_sampler_target(struct remote_sampler *s)
{
	return &s->tg;
}

static struct seen *seen_find(struct remote_sampler *s, uint64_t ts,
			      uint64_t pthread)
{
	for (int i = 0; i < s->n_seen; i++)
		if (s->seen[i].ts == ts && s->seen[i].pthread == pthread)
			return &s->seen[i];
	return NULL;
}

static int open_task_file(pid_t pid, int64_t tid, const char *what)
{
	char path[96];

	snprintf(path, sizeof path, "/proc/%d/task/%lld/%s", (int)pid,
		 (long long)tid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* A new thread's entry (an old one's slot reused when it is gone). */
static struct seen *seen_add(struct remote_sampler *s,
			     const struct remote_thread *r)
{
	struct seen *e = NULL;

	for (int i = 0; i < s->n_seen && !e; i++)
		if (s->seen[i].gen + 1 < s->gen)
			e = &s->seen[i];
	if (!e) {
		if (s->n_seen == SAMPLER_MAX_THREADS)
			return NULL;
		e = &s->seen[s->n_seen++];
	} else {
		seen_close(e);
	}
	memset(e, 0, sizeof *e);
	e->ts = r->ts;
	e->pthread = r->pthread;
	e->tid = r->tid;
	e->stat_fd = e->sched_fd = -1;
	if (e->tid > 0) {
		e->stat_fd = open_task_file(s->py.pid, e->tid, "stat");
		e->sched_fd = open_task_file(s->py.pid, e->tid, "schedstat");
	}
	e->born = s->gen;
	e->py_named = remote_thread_name(&s->tg, r, e->name, sizeof e->name);
	return e;
}

/* Thread e's name read again while threading does not know it: a thread
 * runs (and is listed) a moment before its Thread enters
 * threading._active, and a thread of C's may never. */
static void seen_rename(struct remote_sampler *s, struct seen *e,
			const struct remote_thread *r)
{
	if (e->py_named || e->name_tries >= NAME_TRIES ||
	    s->gen - e->born != 1ull << e->name_tries)
		return;
	e->name_tries++;
	e->py_named = remote_thread_name(&s->tg, r, e->name, sizeof e->name);
}

/* The thread's state letter (R, S, D...), or 0 when it cannot be read
 * (the thread ended). */
static char task_state(int fd)
{
	char buf[512], *p;
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "TID (comm) S ...": the name may hold spaces and parentheses */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Its run time in ns (schedstat's first field); 0 with *ok unset when
 * it cannot be read. */
static uint64_t task_run_ns(int fd, int *ok)
{
	char buf[128];
	ssize_t n;

	*ok = 0;
	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	*ok = 1;
	return strtoull(buf, NULL, 10);
}

/* One stack of thread state ts into s->frames: the frames read, *flags;
 * -EFAULT when no walk could be read whole. */
static int walk(struct remote_sampler *s, uint64_t ts, uint16_t *flags)
{
	int rc = -EFAULT;

	for (int k = 0; k < WALK_TRIES; k++) {
		*flags = 0;
		rc = frames_walk_remote(&s->tg.env, ts, s->frames,
					s->max_depth, flags);
		if (rc >= 0 && !(*flags & WALK_INVALID))
			break;
		if (remote_mem_error() == ESRCH)
			break;
	}
	return rc;
}

/* OS ids: known threads keep theirs; new ones (before 3.11) are found
 * in their struct pthread, all at once. n: the threads in s->list. */
static void tick_tids(struct remote_sampler *s, int n)
{
	int n_new = 0;

	for (int i = 0; i < n; i++) {
		struct seen *e = seen_find(s, s->list[i].ts,
					   s->list[i].pthread);
		if (e && e->tid > 0 && s->list[i].tid <= 0)
			s->list[i].tid = e->tid;
		n_new += s->list[i].tid <= 0;
	}
	if (n_new && s->tg.env.abi->ts_native_thread_id == PYABI_NONE)
		remote_threads_tids(&s->tg, s->list, n);
}

/* Thread r's entry, found or made, marked as listed by this tick; NULL
 * when there is no room for a new one. */
static struct seen *seen_get(struct remote_sampler *s,
			     const struct remote_thread *r)
{
	struct seen *e = seen_find(s, r->ts, r->pthread);

	if (e && e->tid != r->tid) {
		seen_close(e); /* another thread in that state */
		e->gen = 0;
		e = NULL;
	}
	if (!e && !(e = seen_add(s, r)))
		return NULL;
	e->gen = s->gen;
	seen_rename(s, e, r);
	return e;
}

/* Whether thread e is running at now (the cpu rule above), 0 or 1; -1
 * when it ended. *run0 and *ok0: its run time as first read (*ok0 unset
 * when it could not be). */
static int thread_running(const struct remote_sampler *s, struct seen *e,
			  uint64_t now, uint64_t *run0, int *ok0)
{
	uint64_t run1;
	int ok1, running;
	char state;

	*run0 = task_run_ns(e->sched_fd, ok0);
	state = task_state(e->stat_fd);
	if (!state) {
		/* the thread ended; before 3.11 its id came from a struct
		 * pthread that glibc may give the next thread: found again
		 * then */
		seen_close(e);
		e->tid = 0;
		return -1;
	}
	running = state == 'R';
	if (!running) {
		run1 = task_run_ns(e->sched_fd, &ok1);
		running = *ok0 && ok1 && run1 != *run0;
	}
	/* runnable, but its clock has not moved for longer than the
	 * kernel's tick lets a running thread's clock stand still
	 * (SAMPLER_STILL_NS): it is waiting for a CPU (a loaded host),
	 * where it was charged already; so a long wait is not charged tick
	 * after tick to the one place it stopped, which alone is no error
	 * on average but a large one in a short profile */
	if (*ok0 && (!e->has_run || *run0 != e->run_ns))
		e->moved_ns = now;
	if (!s->wall && running && e->has_run &&
	    now - e->moved_ns > SAMPLER_STILL_NS)
		running = 0;
	return running;
}

/* The GIL's holder in wall mode, as last read in this tick: read again
 * for the tick's first thread and when the interpreter changes from one
 * thread to the next. */
struct gil_seen {
	uint64_t interp;
	uintptr_t holder;
	int known;
};

/* smp's GIL fields for thread r (first: the first of the tick's list). */
static void gil_mark(const struct remote_sampler *s,
		     const struct remote_thread *r, int first,
		     struct gil_seen *g, struct remote_sample *smp)
{
	if (r->interp != g->interp || first) {
		g->interp = r->interp;
		g->known = pyabi_gil_holder(s->tg.env.abi,
					    (uintptr_t)s->py.runtime,
					    (uintptr_t)g->interp,
					    (uintptr_t)s->tg.cur_sym,
					    remote_mem_copy, &g->holder) == 0;
	}
	smp->gil_known = g->known;
	smp->gil = g->known && g->holder == r->ts;
}

int remote_sampler_tick(struct remote_sampler *s, uint64_t now_mono_ns,
			uint64_t elapsed_ns, remote_sample_fn *fn, void *arg,
			char *why, size_t why_len)
{
	struct gil_seen gil = { 0, 0, 0 };
	int n;

	s->gen++;
	walk_remote_afresh();
	n = remote_threads_list(&s->tg, s->list, SAMPLER_MAX_THREADS, why,
				why_len);
	if (n < 0)
		return remote_mem_error() == ESRCH || kill(s->py.pid, 0) < 0
			       ? -ESRCH
			       : -EIO;
	tick_tids(s, n);
	for (int i = 0; i < n; i++) {
		const struct remote_thread *r = &s->list[i];
		struct seen *e = seen_get(s, r);
		struct remote_sample smp;
		uint64_t run0;
		int ok0, running, rc;

		if (!e || r->tid <= 0)
			continue; /* no room; or not started, or ended */
		running = thread_running(s, e, now_mono_ns, &run0, &ok0);
		if (running < 0)
			continue;
		memset(&smp, 0, sizeof smp);
		smp.tid = r->tid;
		smp.thread_name = e->name;
		smp.t_mono_ns = now_mono_ns;
		smp.value_ns = elapsed_ns;
		if (s->wall) {
			smp.on_cpu = running ||
				     (e->has_run && ok0 &&
				      run0 - e->run_ns >= elapsed_ns / 2);
			gil_mark(s, r, !i, &gil, &smp);
		} else {
			smp.on_cpu = running;
		}
		if (ok0) {
			e->run_ns = run0;
			e->has_run = 1;
		}
		if (!s->wall && !running)
			continue;
		rc = walk(s, r->ts, &smp.walk_flags);
		if (rc < 0) {
			if (remote_mem_error() == ESRCH)
				return -ESRCH;
			smp.fault = 1;
		} else {
			smp.frames = s->frames;
			smp.n_frames = rc;
		}
		fn(arg, &smp);
	}
	return n;
}
