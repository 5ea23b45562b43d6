/*
 * cpuclock.c - the CPU-clock sampler thread; see cpuclock.h.
 *
 * Per tick: one clock_gettime per program thread (a system call: about
 * 0.5 us here), and for each thread whose account holds a period, one
 * listing of the Python threads (shared by all of them) and one guarded
 * stack walk. Tuned for a few busy threads among possibly many idle ones:
 * an idle thread costs its clock read only.
 */
#include "cpuclock.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "base/clock.h"
#include "base/fdutil.h"
#include "base/guard.h"
#include "labels.h"
#include "pyprof/defaults.h"
#include "base/log.h"
#include "ownthread.h"
#include "pythreads.h"
#include "base/sampler.h"
#include "taskstate.h"
#include "threads.h"
#include "ticklabel.h"
#include "base/tid.h"
#include "signal/sig_frames.h"
#include "signal/sig_handler.h"
#include "signal/sig_labels.h"
#include "pyprof/shortslice.h"
#include "pyprof/xorshift.h"

#define CC_MAX_THREADS 4096
#define CC_MAX_WEIGHT 100000
#define CC_HOLD_PERIODS 8
/* System mode's tick (cc_period): half a sampling period, from 1 to
 * 5 ms */
#define CC_SYS_MIN_NS 1000000u
#define CC_SYS_MAX_NS 5000000u

/* One program thread's account; a table addressed by tid (open
 * addressing), entries of threads no longer listed are reused. Sampler
 * thread only. */
struct acct {
	int tid;		 /* 0 = free                                   */
	unsigned epoch;		 /* the listing it was last listed in          */
	uint64_t cpu_ns;	 /* its CPU clock when last read               */
	int64_t acc_ns;		 /* CPU time not yet charged (charge: down to
	                    a period below zero)                        */
	int64_t due_ns;		 /* acc_ns before this tick's reading: what
	                    thins a running tick (charge)              */
	uint64_t base_ns;	 /* system mode: its clock when first listed  */
	uint64_t charged;	 /* ... the kernel's periods charged so far   */
	unsigned idle;		 /* reads in a row that found the clock still   */
	unsigned long next_read; /* the tick its clock is read at next  */
};

static struct acct accts[2 * CC_MAX_THREADS];
static struct acct *listed[CC_MAX_THREADS]; /* the threads of the table */
static int n_listed;
static unsigned epoch;	   /* listings made                             */
static unsigned table_gen; /* threads_table_gen() at the last listing  */
static struct pythread py[PYTHREADS_MAX];

static pthread_t cc_thread;
static int cc_tid;	      /* its OS id while it runs (atomic)     */
static uint64_t cc_cpu_ended; /* CPU of the sampler threads that ended */
static int cc_running;	      /* thread exists (agent)                     */
static int cc_stop_flag;      /* asks it to leave (atomic)                 */
/* stopped by cpuclock_pause: the accounts are kept for the next start */
static int cc_paused;
/* system mode (threads_clock_system_only: perf counters sample the user
 * time): an account holds the CPU time those samples did not cover, and
 * a running tick charges it as system time; set at start */
static int cc_system;
/* on-CPU mode (threads_clock_oncpu: perf asked for and refused): a
 * thread charged only where it is found running (charge_oncpu); else the
 * accounts' rule (charge_held) */
static int cc_oncpu;
/* every mode but system mode: the kernel's part from its ticks
 * (ticklabel.h) */
static int cc_ticks;
/* the sampler's own period (the sampling period; in system mode, 1 to
 * 2 ms) and a record's weight in sampling periods (on-CPU mode: 1) */
static uint64_t cc_period;
static uint32_t cc_unit;
/* the log's counts */
static unsigned long n_ticks, n_invalid, n_held, n_preempted, n_futex;
static unsigned long n_tick_ns;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
	return xorshift_next(&rng);
}

/* tid's account, made for this listing if it had none: its clock read
 * now, a random part of a period already in it. NULL if the table is
 * full. */
static struct acct *acct_get(int tid, uint64_t period)
{
	unsigned n = sizeof accts / sizeof accts[0];
	unsigned h = (unsigned)tid * 2654435761u % n;
	struct acct *free_a = NULL;
	for (unsigned i = 0; i < n; i++) {
		struct acct *a = &accts[(h + i) % n];
		if (a->tid == tid && a->epoch + 1 >= epoch) {
			a->epoch = epoch;
			return a;
		}
		if (!free_a && (!a->tid || a->epoch + 1 < epoch))
			free_a = a; /* a stale entry of tid's own included */
		if (!a->tid)
			break;
	}
	if (free_a) {
		free_a->tid = tid;
		free_a->epoch = epoch;
		/* a thread new since the last listing (under two periods of
		 * CPU: a short one) from its start, so that all its time is
		 * counted; one that ran long before sampling started (the
		 * main thread at a ctl start) from now */
		uint64_t c = clock_ns(tid_cpu_clock(tid));
		free_a->cpu_ns = c < 2 * period && !cc_system ? 0 : c;
		free_a->base_ns = c;
		free_a->charged = 0;
		free_a->acc_ns = 0;
		free_a->due_ns = 0;
		free_a->idle = 0;
		free_a->next_read = 0;
	}
	return free_a;
}

/* Lists the program's threads again when threads.c's table changed. An
 * account not in the previous listing nor in this one is free again (a
 * thread that came back with the same tid starts afresh). */
static void relist(uint64_t period)
{
	static int tids[CC_MAX_THREADS];
	unsigned g = threads_table_gen();
	if (epoch && g == table_gen)
		return;
	table_gen = g;
	epoch++;
	int n = threads_list(tids, CC_MAX_THREADS);
	n_listed = 0;
	for (int i = 0; i < n; i++) {
		struct acct *a = acct_get(tids[i], period);
		if (a)
			listed[n_listed++] = a;
	}
}

/* The Python thread state of OS thread tid, or 0. */
static uintptr_t ts_of(int tid, int n_py)
{
	for (int i = 0; i < n_py; i++)
		if (py[i].tid == tid)
			return py[i].ts;
	return 0;
}

/* The record being built: a stack is read here first, and copied into
 * the ring only if it is kept (see tick). */
static union {
	struct raw_sample rec;
	uint8_t bytes[sizeof(struct raw_sample) +
		      PYPROF_MAX_MAX_DEPTH * sizeof(struct raw_frame) +
		      LABELS_MAX_BYTES];
} scratch;

/* Reads thread tid's stack (state ts, or 0: no Python state) into
 * scratch. */
static void read_stack(uintptr_t ts, int tid, uint64_t now)
{
	struct raw_sample *rec = &scratch.rec;
	size_t room = ts ? sampler_labels_room_sigsafe() : 0;
	memset(rec, 0, sizeof *rec);
	rec->time_ns = now;
	rec->tid = (uint32_t)tid;
	if (!ts)
		rec->flags = SAMPLE_NO_TSTATE;
	else if (frames_sample_sigsafe(rec, ts, 1) == -EFAULT)
		rec->flags |= SAMPLE_FAULT;
	else if (room)
		sampler_labels_sigsafe(rec, room);
	/* python or native by the leaf's instruction (a call: inside C);
	 * the kernel's part cannot be told from here (docs/reading.md) */
	if (rec->n_frames)
		rec->cpu_kind = rec->opcode && pyabi_calls(sampler.abi,
							   rec->opcode - 1)
					? SAMPLE_CPU_NATIVE
					: SAMPLE_CPU_PYTHON;
	if (!sampler.opcodes)
		rec->opcode = 0;
}

/* Record rec into the ring. */
static void ring_put(struct raw_sample *rec)
{
	uint32_t weight = rec->weight;
	size_t len = raw_size(rec);
	uint64_t pos;
	void *dst = ring_reserve_sigsafe(&sampler.ring, len, &pos);
	if (!dst) {
		__atomic_fetch_add(&sampler.n_lost_ring, weight,
				   __ATOMIC_RELAXED);
		return;
	}
	memcpy(dst, rec, len);
	ring_commit_sigsafe(&sampler.ring, dst, pos, len, len);
	__atomic_fetch_add(&sampler.n_samples, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sampler.n_periods, weight, __ATOMIC_RELAXED);
}

/* scratch into the ring, standing for weight periods of CPU time; in the
 * clocks' own modes (not system mode) held first, until thread a's kernel
 * ticks around cpu (its CPU time at the sample) say whether it was in the
 * kernel (ticklabel.h). */
static void put_sample(uint32_t weight, struct acct *a, uint64_t cpu)
{
	struct raw_sample *rec = &scratch.rec;
	rec->weight = weight;
	rec->value_ns = weight * sampler.period_ns;
	if (cc_system)
		rec->cpu_kind = SAMPLE_CPU_SYSTEM;
	if (rec->flags & SAMPLE_INVALID)
		n_invalid++;
	if (cc_ticks && rec->n_frames &&
	    tl_hold(a->tid, rec, raw_size(rec), cpu) == 0)
		return;
	ring_put(rec);
}

/* Grid points a signal may still be on its way for (ns of the thread's
 * CPU time): not counted as ended in the kernel yet. The thread's clock
 * and its counter's time drift apart by a percent or two, and a signal
 * takes tens of us to arrive in this VM: with 100 us, 2% of a pure
 * Python loop's samples at 1 kHz were charged to the kernel, 1% with
 * 500 us (docs/design.md). */
#define CC_SIGNAL_SLACK_NS 300000u

/*
 * System mode: charges the grid points of thread a's clock that ended
 * in the kernel since its last perf sample and that no one charged yet
 * (sampler.h, struct sampler_kslot), up to its clock cpu; a thread with
 * no sample yet, those since it was first listed. Returns how many this
 * tick charges (0 if a sample came meanwhile: its handler charges them).
 */
static uint64_t kernel_periods_at(struct acct *a, uint64_t cpu, int take)
{
	struct sampler_kslot *k = &sampler.kslots[a->tid % SAMPLER_TID_SLOTS];
	uint64_t p = sampler.period_ns, mark, ahead, n;
	unsigned seq, gen = __atomic_load_n(&sampler.cpu_gen, __ATOMIC_RELAXED);
	int tid, tries = 0;

	if (!p)
		return 0;
	do {
		seq = __atomic_load_n(&k->seq, __ATOMIC_ACQUIRE);
		tid = k->tid;
		mark = k->mark_ns;
		ahead = __atomic_load_n(&k->ahead, __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((seq & 1 || seq != __atomic_load_n(&k->seq, __ATOMIC_RELAXED) ||
		  k->gen != gen) &&
		 ++tries < 100 && tid == a->tid);
	if (tid != a->tid || k->gen != gen || tries >= 100) {
		/* no sample of it yet: from its first listing, on our own */
		if (cpu <= a->base_ns + CC_SIGNAL_SLACK_NS)
			return 0;
		n = (cpu - a->base_ns - CC_SIGNAL_SLACK_NS) / p;
		if (n <= a->charged)
			return 0;
		n -= a->charged;
		if (take)
			a->charged += n;
		return n;
	}
	if (cpu <= mark + CC_SIGNAL_SLACK_NS)
		return 0;
	n = (cpu - mark - CC_SIGNAL_SLACK_NS) / p;
	if (n <= (ahead & 0xffffffffu))
		return 0;
	n -= ahead & 0xffffffffu;
	if (!take)
		return n;
	/* only if no sample moved the mark since it was read */
	if (!__atomic_compare_exchange_n(&k->ahead, &ahead, ahead + n, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	return n;
}

static uint64_t kernel_periods(struct acct *a, uint64_t cpu)
{
	return kernel_periods_at(a, cpu, 1);
}

/* Whether thread a has grid points in the kernel to charge at clock cpu,
 * taking none: a tick reads the stack and state only of such threads
 * (each read of another thread's state costs tens of us; most ticks of
 * a thread that runs Python have nothing to charge). */
static int kernel_pending(struct acct *a, uint64_t cpu)
{
	/* a thread on a CPU timer (its counter refused) has no grid: its
	 * samples count its kernel time already, and charging its clock
	 * here as well counted a thread's whole time twice, once as
	 * system */
	return kernel_periods_at(a, cpu, 0) != 0 && threads_perf_armed(a->tid);
}

/* Whether a uniform draw in [0, 1) falls below num/den: never for a num
 * of zero or less (an account a period or more below zero: cast to
 * unsigned, its chance once read as a certainty, and a thread found
 * running often with little CPU was charged 80 to 110 ms more than it
 * used in 3 s). */
static int draw_below(int64_t num, uint64_t den)
{
	return num > 0 && den && (next_rand() >> 11) % den < (uint64_t)num;
}

/* Whether thread a, whose clock stands still, is runnable (preempted:
 * charged) rather than waiting (a futex: the GIL or a lock; or blocked
 * elsewhere: not charged), as the kernel says; counted for the log. */
static int runnable(struct acct *a)
{
	enum taskstate st = taskstate_get(a->tid);
	if (st == TASKSTATE_RUNNABLE) {
		n_preempted++;
		return 1;
	}
	if (st == TASKSTATE_FUTEX)
		n_futex++;
	else
		n_held++;
	return 0;
}

/*
 * On-CPU sampling (docs/design.md, "Where the CPU time was spent"): the
 * thread is charged where it is now only if it is running now, so that
 * the stacks charged are uniform over the moments it ran, whatever the
 * shape of its work (a burst that ended before the tick is not charged
 * to the wait it went back to). Running: its clock moved while its stack
 * was read (on a CPU), it holds the GIL (it runs Python code, or waits
 * for a CPU to), or the kernel says it is runnable (preempted, by this
 * thread of ours too on one CPU). A thread waiting on a futex (the GIL,
 * a lock) or blocked elsewhere is not running: nothing is charged.
 *
 * How much: one period per running tick, thinned by the account so that
 * a thread's total is its CPU time. The account holds the CPU time not
 * yet charged, from one period below zero (a thread charged ahead of its
 * clock) up; a running tick writes a sample of one period with the
 * probability (account + period) / period, capped at 1 (the account as
 * it stood before this tick), and takes the period from the account. A thread that runs all the time on a CPU it
 * shares (runnable half the time) is charged at half its ticks; a thread
 * shorter than a period is charged at the ticks that find it running,
 * which is the probability of its CPU time. Time that no running tick
 * found (bursts between ticks) waits in the account; past
 * CC_HOLD_PERIODS it is charged with the next running tick's sample (a
 * weight above 1), so that no time is ever dropped.
 */
/*
 * The accounts' rule (the default source): a thread whose account holds a
 * period is charged where its stack is read if it was running, holds the
 * GIL, is runnable (preempted) or waits on a futex (the GIL, at the call
 * that released it); a thread blocked in another call keeps its account
 * for its next running tick, up to CC_HOLD_PERIODS periods
 * (docs/design.md, "Past the tick").
 */
static void charge_held(struct acct *a, uintptr_t ts, uintptr_t holder,
			uint64_t now, uint64_t period)
{
	read_stack(ts, a->tid, now);
	uint64_t cpu = clock_ns(tid_cpu_clock(a->tid));
	int running = cpu > a->cpu_ns || (ts && ts == holder);
	if (cpu > a->cpu_ns) { /* 0 if it has just ended */
		a->acc_ns += (int64_t)(cpu - a->cpu_ns);
		a->cpu_ns = cpu;
	}
	if (!running && ts && a->acc_ns < (int64_t)(CC_HOLD_PERIODS * period)) {
		enum taskstate st = taskstate_get(a->tid);
		if (st == TASKSTATE_RUNNABLE) {
			n_preempted++;
		} else if (st == TASKSTATE_FUTEX) {
			n_futex++;
		} else {
			n_held++;
			return;
		}
	}
	if (a->acc_ns < (int64_t)period)
		return;
	uint64_t w = (uint64_t)a->acc_ns / period;
	a->acc_ns -= (int64_t)(w * period);
	put_sample((uint32_t)(w > CC_MAX_WEIGHT ? CC_MAX_WEIGHT : w), a, cpu);
}

static void charge(struct acct *a, uintptr_t ts, uintptr_t holder,
		   uint64_t now, uint64_t period)
{
	/* On-CPU mode, in order of cost: the account's draw (nothing read),
	 * whether the clock moved since this tick's read (one clock read),
	 * the kernel's word on a thread it did not (a file read), and only
	 * for a tick that will be charged the stack. Each test
	 * is independent of the others, so that their order changes what a
	 * tick costs, not what it charges: a tick that finds a bursty thread
	 * back in its wait reads no stack. The draw
	 * thins by the account as it stood before this tick: what the thread
	 * used since the last one (the burst it is in now) must not weigh on
	 * whether it is charged, or a long burst would be charged more often
	 * than its length says. */
	if (!cc_system && a->due_ns < 0 &&
	    !draw_below(a->due_ns + (int64_t)period, period))
		return;
	uint64_t before = clock_ns(tid_cpu_clock(a->tid));
	int moving = before > a->cpu_ns || (ts && ts == holder);
	if (!moving && !runnable(a))
		return;
	/* running while its stack was read: a stack read just after a short
	 * burst ended is the wait's, and must not be charged for it */
	read_stack(ts, a->tid, now);
	uint64_t cpu = clock_ns(tid_cpu_clock(a->tid));
	int running = cpu > before || (ts && ts == holder);
	if (cpu > a->cpu_ns) { /* 0 if it has just ended */
		a->acc_ns += (int64_t)(cpu - a->cpu_ns);
		a->cpu_ns = cpu;
	}
	/* stopped during the read: charged only if preempted (a thread
	 * found runnable before the read is charged as found) */
	if (!running && moving && !runnable(a))
		return;
	if (cc_system) {
		uint64_t n = kernel_periods(a, cpu);
		if (n)
			put_sample((uint32_t)(n > CC_MAX_WEIGHT ? CC_MAX_WEIGHT
								: n),
				   a, cpu);
		return;
	}
	uint64_t w = 1;
	if (a->acc_ns > (int64_t)(CC_HOLD_PERIODS * period))
		w += ((uint64_t)a->acc_ns - CC_HOLD_PERIODS * period) / period;
	a->acc_ns -= (int64_t)(w * period);
	w *= cc_unit;
	put_sample((uint32_t)(w > CC_MAX_WEIGHT ? CC_MAX_WEIGHT : w), a,
		   before + (cpu - before) / 2);
}

/* One tick: every listed thread's clock read (idle ones less often)
 * into its account; those whose clock moved since the last read may be
 * running (charge says). */
static void tick(uint64_t now, uint64_t period)
{
	static int due[CC_MAX_THREADS];
	int n_due = 0, n_py = -1;
	if (cc_system)
		threads_reopen_private();
	relist(period);
	for (int i = 0; i < n_listed; i++) {
		struct acct *a = listed[i];
		if (a->next_read > n_ticks)
			continue; /* idle: read later */
		uint64_t cpu = clock_ns(tid_cpu_clock(a->tid));
		if (!cpu)
			continue;      /* gone: the table will say so */
		if (cpu < a->cpu_ns) { /* another thread with that tid */
			a->cpu_ns = cpu;
			continue;
		}
		/* read at every tick, idle or not: a thread read less often
		 * would have its short bursts missed more often than its
		 * long ones (they end before the read) */
		a->idle = cpu == a->cpu_ns ? a->idle + 1 : 0;
		if (cc_ticks && !a->idle)
			tl_observe(a->tid, cpu);
		a->next_read = n_ticks + 1;
		a->due_ns = a->acc_ns;
		a->acc_ns += (int64_t)(cpu - a->cpu_ns);
		a->cpu_ns = cpu;
		/* a thread whose clock stood still since the last tick is not
		 * running now (it may be runnable, preempted for the whole
		 * period: then its clock stood still and it used nothing) */
		if (!a->idle && (cc_system ? kernel_pending(a, cpu)
					   : cc_oncpu ||
						     a->acc_ns >= (int64_t)period))
			due[n_due++] = i;
	}
	uintptr_t holder = 0;
	for (int k = 0; k < n_due; k++) {
		struct acct *a = listed[due[k]];
		if (n_py < 0) {
			n_py = pythreads_list(py, PYTHREADS_MAX);
			if (n_py > 0 &&
			    pyabi_gil_holder(sampler.abi, sampler.runtime,
					     py[0].interp,
					     sampler.cur_tstate_sym, guard_copy,
					     &holder) < 0)
				holder = 0;
		}
		if (cc_system || cc_oncpu)
			charge(a, n_py > 0 ? ts_of(a->tid, n_py) : 0, holder,
			       now, period);
		else
			charge_held(a, n_py > 0 ? ts_of(a->tid, n_py) : 0,
				    holder, now, period);
	}
	if (cc_ticks)
		tl_release(0);
}

/* The next deadline: a period later on average, uniform in [0.5, 1.5]
 * periods; from now if the thread fell more than a period behind (a
 * busy machine), so that it does not catch up in a burst. */
static void advance(struct timespec *next, uint64_t period)
{
	uint64_t d = xorshift_jitter(&rng, period);
	uint64_t t = (uint64_t)next->tv_sec * 1000000000u +
		     (uint64_t)next->tv_nsec;
	uint64_t now = mono_ns();
	if (t + period < now)
		t = now;
	t += d;
	next->tv_sec = (time_t)(t / 1000000000u);
	next->tv_nsec = (long)(t % 1000000000u);
}

static int cc_private_fds; /* cc_main's table is its own */

/* Sleeps until the deadline; in system mode, woken meanwhile by a new
 * thread whose counter is to be opened or a counter whose period is to
 * be set (threads_wake_clock), does that at once: a thread that runs a
 * millisecond has its counter within tens of microseconds, not at the
 * next tick. */
static void cc_wait(const struct timespec *until)
{
	if (!cc_system) {
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, until, NULL);
		return;
	}
	uint64_t end = (uint64_t)until->tv_sec * 1000000000u +
		       (uint64_t)until->tv_nsec;
	while (!__atomic_load_n(&cc_stop_flag, __ATOMIC_ACQUIRE)) {
		unsigned w = __atomic_load_n(&sig_handler_due_word,
					     __ATOMIC_ACQUIRE);
		if (threads_running()) {
			threads_period_due();
			threads_reopen_private();
		}
		if (mono_ns() >= end)
			return;
		syscall(SYS_futex, &sig_handler_due_word,
			FUTEX_WAIT_BITSET_PRIVATE, w, until, NULL,
			FUTEX_BITSET_MATCH_ANY);
	}
}

static void *cc_main(void *arg)
{
	(void)arg;
	threads_internal_self();
	/* The files this thread opens (taskstate.h) in a table of its own:
	 * no number of the program's taken, even while one opens. */
	cc_private_fds = fd_table_private() == 0;
	threads_private_lost();
	__atomic_store_n(&cc_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	/* at each tick at once, not once a program thread sharing its CPU
	 * has ended its burst (shortslice.h): it charges only threads it
	 * finds running */
	int slice = pyprof_short_slice();
	if (slice < 0)
		plog_debug("CPU clock sampler: its time slice stays the "
			   "kernel's default (%s)",
			   strerror(-slice));
	uint64_t period = cc_period;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	rng ^= (uint64_t)next.tv_nsec * 0xBF58476D1CE4E5B9ull;
	while (!__atomic_load_n(&cc_stop_flag, __ATOMIC_ACQUIRE)) {
		advance(&next, period);
		cc_wait(&next);
		if (!__atomic_load_n(&sampler.active, __ATOMIC_ACQUIRE) ||
		    !threads_running() || !sampler.is_initialized())
			continue;
		uint64_t t0 = mono_ns();
		tick(t0, period);
		n_tick_ns += mono_ns() - t0;
		n_ticks++;
	}
	threads_clock_ended();
	taskstate_close_all(); /* in this thread's table, private or not */
	uint64_t own = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	__atomic_store_n(&cc_tid, 0, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cc_cpu_ended, own, __ATOMIC_RELEASE);
	threads_internal_leave();
	return NULL;
}

int cpuclock_start(void)
{
	if (cc_running)
		return 0;
	__atomic_store_n(&cc_stop_flag, 0, __ATOMIC_RELEASE);
	if (!cc_paused) {
		memset(accts, 0, sizeof accts);
		n_listed = 0;
		epoch = 0;
		n_ticks = n_invalid = n_held = n_preempted = n_futex = 0;
		n_tick_ns = 0;
	}
	cc_system = threads_clock_system_only();
	cc_oncpu = !cc_system && threads_clock_oncpu();
	cc_ticks = !cc_system;
	/* its tables touched only where they are used */
	if (cc_ticks && !cc_paused)
		tl_reset(sampler.period_ns, ring_put);
	/* system mode: its ticks place the kernel's time, within one tick
	 * of where it was spent (a function's kernel time leaks into what
	 * follows it by about half a tick): at half the sampling period,
	 * from 1 to 5 ms (2 ms at 250 Hz; 5 ms at 100 Hz, where a sample
	 * weighs 10 ms and a tick costs about 20 us of a CPU in this VM) */
	cc_unit = 1;
	cc_period = sampler.period_ns;
	if (cc_system)
		cc_period /= 2;
	if (cc_system && cc_period > CC_SYS_MAX_NS)
		cc_period = cc_period / ((cc_period + CC_SYS_MAX_NS - 1) /
					 CC_SYS_MAX_NS);
	if (cc_system && cc_period < CC_SYS_MIN_NS)
		cc_period = CC_SYS_MIN_NS;
	int rc = ownthread_create(&cc_thread, cc_main, NULL,
				  "pyprof-cpuclock");
	if (rc)
		return -rc;
	cc_running = 1;
	cc_paused = 0;
	return 0;
}

static void cc_end(void)
{
	__atomic_store_n(&cc_stop_flag, 1, __ATOMIC_RELEASE);
	pthread_join(cc_thread, NULL);
	cc_running = 0;
	tl_release(1); /* the held records, labelled with what is known */
}

void cpuclock_pause(void)
{
	if (!cc_running)
		return;
	cc_end();
	cc_paused = 1;
}

void cpuclock_stop(void)
{
	if (!cc_running && !cc_paused)
		return;
	if (cc_running)
		cc_end();
	cc_paused = 0;
	plog_info("CPU clock sampler: %lu ticks, %lu ns mean per tick; %lu "
		  "stacks failed validation, %lu read from threads blocked "
		  "(time held for the next), %lu from threads preempted, %lu "
		  "from threads waiting on a futex (the GIL); %lu labelled "
		  "system by the kernel's ticks; %s",
		  n_ticks, n_ticks ? n_tick_ns / n_ticks : 0, n_invalid, n_held,
		  n_preempted, n_futex, tl_system_count(),
		  cc_private_fds ? "its files in a descriptor table of its own"
				 : "its files in the program's descriptor "
				   "table (close_range refused)");
}

void cpuclock_after_fork_child(void)
{
	cc_running = 0;
	cc_paused = 0;
	cc_tid = 0;
	cc_cpu_ended = 0;
	taskstate_after_fork_child();
}

uint64_t cpuclock_cpu_ns(void)
{
	int tid = __atomic_load_n(&cc_tid, __ATOMIC_ACQUIRE);
	uint64_t ended = __atomic_load_n(&cc_cpu_ended, __ATOMIC_ACQUIRE);
	return ended + (tid ? clock_ns(tid_cpu_clock(tid)) : 0);
}
