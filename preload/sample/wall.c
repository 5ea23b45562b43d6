/*
 * wall.c - the wall-clock sampler thread; see wall.h.
 *
 * Reads of interpreter memory happen with this thread's fault guard armed
 * (one guarded region, guard_run_sigsafe, per list walk and per stack
 * walk), as in the signal handler: a fault drops that sample or that tick.
 */
#include "wall.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "asyncio.h"
#include "base/clock.h"
#include "base/guard.h"
#include "labels.h"
#include "ownthread.h"
#include "base/log.h"
#include "pyprof/defaults.h"
#include "pythreads.h"
#include "base/sampler.h"
#include "threads.h"
#include "base/tid.h"
#include "signal/sig_asyncio.h"
#include "signal/sig_frames.h"
#include "signal/sig_labels.h"
#include "pyprof/shortslice.h"
#include "pyprof/xorshift.h"

#define WALL_MAX_THREADS PYTHREADS_MAX

struct seen {
	int tid;	 /* 0 = free */
	uint64_t cpu_ns; /* thread CPU time at the previous tick */
	uint64_t gen;	 /* tick it was last seen at */
};

static pthread_t wall_thread;
static int wall_running;   /* thread exists                         */
static int wall_stop_flag; /* asks it to leave (atomic)             */
static struct seen seen[2 * WALL_MAX_THREADS];
static uint64_t gen;
static int gil_logged;

static struct pythread found[WALL_MAX_THREADS];

static struct seen *seen_slot(int tid)
{
	unsigned n = sizeof seen / sizeof seen[0];
	unsigned h = (unsigned)tid * 2654435761u % n;
	struct seen *free_slot = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct seen *s = &seen[(h + i) % n];
		if (s->tid == tid)
			return s;
		if (!s->tid || s->gen + 2 < gen) {
			if (!free_slot)
				free_slot = s;
			if (!s->tid)
				break;
		}
	}
	if (free_slot) {
		free_slot->tid = tid;
		free_slot->cpu_ns = 0;
		free_slot->gen = 0;
	}
	return free_slot;
}

/* A record of up to max_depth frames, room labels bytes and (asyncio on)
 * a task name; NULL, counted, when the ring is full. */
static struct raw_sample *reserve(size_t room, uint64_t *pos, size_t *cap)
{
	*cap = sizeof(struct raw_sample) +
	       (size_t)sampler.max_depth * sizeof(struct raw_frame) + room +
	       (asyncio_abi.kind ? ASYNCIO_NAME_MAX : 0);
	struct raw_sample *rec = ring_reserve_sigsafe(&sampler.ring, *cap, pos);
	if (!rec)
		__atomic_fetch_add(&sampler.n_lost_ring, 1, __ATOMIC_RELAXED);
	return rec;
}

static void fill(struct raw_sample *rec, uintptr_t ts, int tid, uint64_t now,
		 uint64_t value, uint16_t flags)
{
	rec->time_ns = now;
	rec->value_ns = value;
	rec->tstate = ts;
	rec->tid = (uint32_t)(tid > 0 ? tid : 0);
	rec->weight = 1;
	rec->n_frames = 0;
	rec->flags = flags;
	rec->opcode = 0;
	rec->n_native = 0; /* never in wall mode (native.h) */
	rec->n_labels = 0;
	rec->n_task = 0;
	rec->wait = 0;
	rec->cpu_kind = 0;
}

static void put_task(struct raw_sample *rec, const char *name, size_t n)
{
	memcpy((uint8_t *)(uintptr_t)raw_task(rec), name, n);
	rec->n_task = (uint16_t)n;
}

static void commit(struct raw_sample *rec, uint64_t pos, size_t cap)
{
	ring_commit_sigsafe(&sampler.ring, rec, pos, cap, raw_size(rec));
	__atomic_fetch_add(&sampler.n_samples, 1, __ATOMIC_RELAXED);
}

/*
 * Leaf i of a thread whose event loop waits (asyncio.h) into rec, whose
 * frames are the thread's own: the leaf's await chain and its waiters',
 * then the thread's frames from the loop's _run_once (index cut) down.
 */
static void build_leaf(struct raw_sample *rec, int i, int cut, size_t room)
{
	static struct raw_frame chain[PYPROF_MAX_MAX_DEPTH];
	struct raw_frame *out = (struct raw_frame *)(rec + 1);
	int max = sampler.max_depth;
	int keep = rec->n_frames - cut; /* _run_once and below */
	if (keep > max / 2) {
		keep = max / 2;
		rec->flags |= SAMPLE_TRUNCATED;
	}
	char name[ASYNCIO_NAME_MAX];
	size_t name_len;
	uintptr_t ctx;
	int c = asyncio_leaf_sigsafe(i, chain, max - keep, name, &name_len,
				     &ctx);
	if (c < 0)
		c = 0;
	if (c == max - keep)
		rec->flags |= SAMPLE_TRUNCATED;
	memmove(out + c, out + cut, (size_t)keep * sizeof *out);
	memcpy(out, chain, (size_t)c * sizeof *out);
	rec->n_frames = (uint16_t)(c + keep);
	if (room)
		rec->n_labels = (uint16_t)labels_capture_ctx_sigsafe(
			ctx, (uint8_t *)(uintptr_t)raw_labels(rec));
	put_task(rec, name, name_len);
}

/*
 * The waiting loop's first leaf goes in rec (the thread's walk); each
 * other one in a record of its own, with a copy of the thread's frames.
 * The tick's time is split among them.
 */
static void sample_waiting(struct raw_sample *rec, uint64_t pos, size_t cap,
			   int cut, int n_leaves, size_t room)
{
	static struct raw_frame own[PYPROF_MAX_MAX_DEPTH];
	int k = n_leaves < ASYNCIO_MAX_SAMPLED ? n_leaves : ASYNCIO_MAX_SAMPLED;
	uint64_t elapsed = rec->value_ns, share = elapsed / (uint64_t)k;
	int n = rec->n_frames;
	struct raw_sample head = *rec;
	memcpy(own, rec + 1, (size_t)n * sizeof *own);
	rec->value_ns = share + elapsed % (uint64_t)k;
	build_leaf(rec, 0, cut, room);
	commit(rec, pos, cap);
	for (int i = 1; i < k; i++) {
		struct raw_sample *volatile r = reserve(room, &pos, &cap);
		if (!r)
			return;
		*r = head;
		r->value_ns = share;
		memcpy((struct raw_frame *)(r + 1), own, (size_t)n * sizeof *own);
		build_leaf(r, i, cut, room);
		commit(r, pos, cap);
	}
}

static void sample_thread(uintptr_t ts, int tid, uint64_t now,
			  uint64_t elapsed, uint16_t flags)
{
	if (tid > 0) {
		struct seen *s = seen_slot(tid);
		uint64_t cpu = clock_ns(tid_cpu_clock(tid));
		if (s) {
			/* first sight: no interval to judge; call it off */
			if (!s->gen || cpu - s->cpu_ns < elapsed / 2)
				flags |= SAMPLE_OFF_CPU;
			s->cpu_ns = cpu;
			s->gen = gen;
		}
	}
	size_t room = sampler_labels_room_sigsafe();
	uint64_t pos;
	size_t cap;
	struct raw_sample *volatile rec = reserve(room, &pos, &cap);
	if (!rec)
		return;
	fill(rec, ts, tid, now, elapsed, flags);
	if (frames_sample_sigsafe(rec, ts, 0) == -EFAULT) {
		rec->flags |= SAMPLE_FAULT;
		commit(rec, pos, cap);
		return;
	}
	struct asyncio_view v = { 0 };
	if (gen % 16 == 0 && asyncio_hint_wanted()) {
		/* an event loop without the _asyncio extension */
		int selecting;
		if (asyncio_loop_frame_sigsafe(rec + 1, rec->n_frames,
					       &selecting) >= 0)
			__atomic_store_n(&asyncio_abi.loop_seen, 1,
					 __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&asyncio_abi.kind, __ATOMIC_ACQUIRE)) {
		int selecting;
		int cut = asyncio_loop_frame_sigsafe(rec + 1, rec->n_frames,
						     &selecting);
		if (asyncio_view_sigsafe(ts, cut >= 0 && selecting, &v) ==
		    ASYNCIO_WAITING) {
			sample_waiting(rec, pos, cap, cut, v.n_leaves, room);
			return;
		}
	}
	if (room)
		sampler_labels_sigsafe(rec, room);
	if (v.state == ASYNCIO_RUNNING)
		put_task(rec, v.name, v.name_len);
	commit(rec, pos, cap);
}

static uint64_t jitter(uint64_t period)
{
	static uint64_t x = 0x2545F4914F6CDD1Dull;
	return xorshift_jitter(&x, period);
}

static void *wall_main(void *arg)
{
	(void)arg;
	threads_internal_self();
	/* each tick when it comes, not when a thread sharing our CPU ends
	 * its burst: a late tick finds more threads in their waits than
	 * there are (shortslice.h) */
	int slice = pyprof_short_slice();
	if (slice < 0)
		plog_debug("wall sampler: its time slice stays the kernel's "
			   "default (%s)",
			   strerror(-slice));
	uint64_t last = clock_ns(CLOCK_MONOTONIC);
	while (!__atomic_load_n(&wall_stop_flag, __ATOMIC_ACQUIRE)) {
		uint64_t d = jitter(sampler.period_ns);
		struct timespec ts = { (time_t)(d / 1000000000u),
				       (long)(d % 1000000000u) };
		nanosleep(&ts, NULL);
		if (!__atomic_load_n(&sampler.active, __ATOMIC_ACQUIRE) ||
		    !sampler.is_initialized())
			continue;
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		uint64_t elapsed = now - last;
		last = now;
		gen++;
		asyncio_poll();
		int n = pythreads_list(found, WALL_MAX_THREADS);
		uintptr_t gil_interp = 0, holder = 0;
		int gil_known = 0;
		for (int i = 0; i < n; i++) {
			/* who holds the GIL: one answer per interpreter */
			if (!i || found[i].interp != gil_interp) {
				gil_interp = found[i].interp;
				int rc = pyabi_gil_holder(
					sampler.abi, sampler.runtime,
					gil_interp, sampler.cur_tstate_sym,
					guard_copy, &holder);
				gil_known = rc == 0;
				if (rc < 0 && !gil_logged) {
					gil_logged = 1;
					plog_debug("GIL state unknown: %s",
						   strerror(-rc));
				}
			}
			uint16_t flags = 0;
			if (gil_known)
				flags |= SAMPLE_GIL_KNOWN |
					 (holder == found[i].ts ? SAMPLE_GIL : 0);
			int tid = found[i].tid;
			/* a thread state whose thread has not started (or has
			 * ended): nothing runs there yet; or one of ours (the
			 * names thread holds one while it reads names) */
			if (tid <= 0 || threads_is_internal(tid))
				continue;
			sample_thread(found[i].ts, tid, now, elapsed, flags);
		}
	}
	threads_internal_leave();
	return NULL;
}

int wall_start(void)
{
	if (wall_running)
		return 0;
	__atomic_store_n(&wall_stop_flag, 0, __ATOMIC_RELEASE);
	/* every signal blocked but the faults, named by itself */
	int rc = ownthread_create(&wall_thread, wall_main, NULL, "pyprof-wall");
	if (rc)
		return -rc;
	wall_running = 1;
	return 0;
}

void wall_stop(void)
{
	if (!wall_running)
		return;
	__atomic_store_n(&wall_stop_flag, 1, __ATOMIC_RELEASE);
	pthread_join(wall_thread, NULL);
	wall_running = 0;
}

void wall_after_fork_child(void)
{
	wall_running = 0;
}
