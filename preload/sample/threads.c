/*
 * threads.c - per-thread CPU timers and counters, and the pthread_create
 * wrapper; see threads.h for the table and who may touch a slot (a
 * counter's own opening and closing: perfctr.c).
 */
#include "base/fdutil.h"
#include "threads.h"
#include "heap.h"
#include "perfctr.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/libc_next.h"
#include "native/native.h"
#include "signal/sig_handler.h"
#include "base/sampler.h"
#include "base/tid.h"
#include "base/zero.h"
#include "pyprof/wire.h"
#include "signal/sig_heap.h"

enum { SLOT_FREE = 0,
       SLOT_CLAIMED = 1,
       SLOT_ARMED = 2,
       SLOT_DYING = 3 };

struct slot {
	int tid;	    /* 0 when free; CAS to claim                     */
	int state;	    /* enum above, atomic                            */
	timer_t timer;	    /* valid in ARMED, written before the release    */
	int perf_fd;	    /* perf_event fd instead of the timer, or -1     */
	uint64_t perf_id;   /* the counter's event id (its identity)      */
	uint64_t cpu_ok_ns; /* agent: the thread's CPU time when the
			       counter was last seen open               */
	int counted;	    /* clock source: no timer, no fd (cpuclock.h)     */
	/* perf_fd is in the CPU-clock thread's own descriptor table (a
	 * counter opened again after the program closed ours): only that
	 * thread may use or close it (threads_reopen_private) */
	int perf_private;
	int reopen; /* CLAIMED: the CPU-clock thread opens it again  */
	int seen;   /* agent scratch: present in the last scan       */
};

static struct slot slots[THREADS_MAX];

/* perf_event mode (rates past the kernel tick): decided at start. The
 * bitmap marks our perf fds, so the handler can tell our signals from
 * another fasync user's (only fds below 65536 are used for this). */
static int use_perf;
static int perf_failed_logged;
static int closed_logged;
/* the clock source (cpuclock.h): slots list the threads, nothing armed;
 * table_gen counts the changes of the table, for its reader */
static int use_clock;
static unsigned table_gen;
static int started; /* threads_start ran (threads_source) */
static uint64_t rand_below(uint64_t n);

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *,
				 void *(*)(void *), void *);

/* perf counters sample user time; the CPU-clock sampler thread charges
 * the system time (cpuclock.h's system mode) */
static int use_sysclock;
/* perf asked for and refused: the clocks, charging where found running */
static int use_oncpu;
/* every counter opened by the CPU-clock thread in its own descriptor
 * table (none in the program's): with system mode, where close_range
 * can give that thread a table of its own */
static int use_private;
static int running; /* timers may be armed (atomic)                */
static pthread_key_t exit_key;
static int key_ok;

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

static uint64_t rand_below(uint64_t n)
{
	static uint64_t state;
	uint64_t x = __atomic_add_fetch(&state, 0x9E3779B97F4A7C15ull,
					__ATOMIC_RELAXED);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	x ^= (uint64_t)ts.tv_nsec * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 31;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 29;
	return n ? x % n : 0;
}

static int arm_timer(int tid, timer_t *out)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_value.sival_ptr = &sampler;
	sev._sigev_un._tid = tid;
	if (timer_create(tid_cpu_clock(tid), &sev, out) < 0)
		return -errno;
	uint64_t period = sampler.period_ns;
	uint64_t first = 1 + rand_below(period);
	struct itimerspec its = {
		.it_interval = { (time_t)(period / 1000000000u),
				 (long)(period % 1000000000u) },
		.it_value = { (time_t)(first / 1000000000u),
			      (long)(first % 1000000000u) },
	};
	if (timer_settime(*out, 0, &its, NULL) < 0) {
		int e = errno;
		timer_delete(*out);
		return -e;
	}
	return 0;
}

/* pyprof's own threads (agent, wall sampler, names): never sampled. */
#define INTERNAL_MAX 8
static int internal[INTERNAL_MAX];

int threads_is_internal(int tid)
{
	for (int i = 0; i < INTERNAL_MAX; i++)
		if (__atomic_load_n(&internal[i], __ATOMIC_ACQUIRE) == tid)
			return 1;
	return 0;
}

static struct slot *find(int tid);
static void retire(struct slot *s);

void threads_internal_add(int tid)
{
	if (tid <= 0 || threads_is_internal(tid))
		return;
	for (int i = 0; i < INTERNAL_MAX; i++) {
		int z = 0;
		if (__atomic_compare_exchange_n(&internal[i], &z, tid, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
}

void threads_internal_self(void)
{
	int tid = gettid_();
	heap_enter(); /* for life: a thread of ours allocates for pyprof */
	threads_internal_add(tid);
	struct slot *s = find(tid);
	if (s)
		retire(s);
}

int threads_internal_list(int *tids, int max)
{
	int n = 0;
	for (int i = 0; i < INTERNAL_MAX && n < max; i++) {
		int t = __atomic_load_n(&internal[i], __ATOMIC_ACQUIRE);
		if (t > 0)
			tids[n++] = t;
	}
	return n;
}

void threads_internal_leave(void)
{
	int tid = gettid_();
	for (int i = 0; i < INTERNAL_MAX; i++) {
		int t = tid;
		if (__atomic_compare_exchange_n(&internal[i], &t, 0, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}
}

static struct slot *find(int tid)
{
	unsigned h = (unsigned)tid * 2654435761u;
	for (unsigned i = 0; i < THREADS_MAX; i++) {
		struct slot *s = &slots[(h + i) % THREADS_MAX];
		int t = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		if (t == tid)
			return s;
		if (t == 0)
			return NULL;
	}
	return NULL;
}

/* Claims a slot for tid; NULL if tid has one already or the table is
 * full. Slots are never removed from the middle of a probe chain: a freed
 * slot keeps tid = -1 (a tombstone) until threads_stop_sigsafe. */
static struct slot *claim(int tid)
{
	unsigned h = (unsigned)tid * 2654435761u;
	if (find(tid))
		return NULL;
	for (unsigned i = 0; i < THREADS_MAX; i++) {
		struct slot *s = &slots[(h + i) % THREADS_MAX];
		int t = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		if (t == tid)
			return NULL;
		if (t == 0 || t == -1) {
			if (__atomic_compare_exchange_n(&s->tid, &t, tid, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				__atomic_store_n(&s->state, SLOT_CLAIMED,
						 __ATOMIC_RELEASE);
				return s;
			}
			if (t == tid)
				return NULL;
		}
	}
	return NULL;
}

/* Gives the slot back: free, with tid -1, the tombstone claim() reuses. */
static void free_slot(struct slot *s)
{
	__atomic_store_n(&s->state, SLOT_FREE, __ATOMIC_RELEASE);
	__atomic_store_n(&s->tid, -1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&table_gen, 1, __ATOMIC_RELEASE);
}

/* Stops the slot's interrupts (its perf_event or its timer) and frees it;
 * by whoever moved it out of CLAIMED or ARMED. */
/* Counters in the CPU-clock thread's own table whose slots were freed
 * elsewhere: that thread closes them (threads_reopen_private). */
#define PRIVATE_CLOSE_MAX 256
static int private_close[PRIVATE_CLOSE_MAX]; /* fd + 1, 0: empty */
static int private_close_n;		     /* entries queued */

/* Slots whose counter the CPU-clock thread is to open: new threads in a
 * queue (a scan of every slot at each wake cost more than the opening),
 * and a flag for a scan of all (a counter to open again, a full queue) */
#define OPEN_Q_MAX 512
static struct slot *open_q[OPEN_Q_MAX];
static int open_q_n;
static int open_scan;
/* the CPU-clock thread runs (between threads_private_lost and
 * threads_clock_ended): a new thread waits for its counter only then */
static int clock_alive;

/* Asks the CPU-clock thread for slot s's counter (it is woken by the
 * caller). */
static void want_open(struct slot *s, int queue)
{
	__atomic_store_n(&s->reopen, 1, __ATOMIC_RELEASE);
	for (int i = 0; queue && i < OPEN_Q_MAX; i++) {
		struct slot *z = NULL;
		if (__atomic_compare_exchange_n(&open_q[i], &z, s, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&open_q_n, 1, __ATOMIC_ACQ_REL);
			return;
		}
	}
	__atomic_store_n(&open_scan, 1, __ATOMIC_RELEASE);
}

static void disarm_slot(struct slot *s)
{
	if (s->perf_fd >= 0 && s->perf_private) {
		/* not a number of this table: queued for its own thread
		 * (a full queue leaves it open until that thread ends) */
		for (int i = 0; i < PRIVATE_CLOSE_MAX; i++) {
			int z = 0;
			if (__atomic_compare_exchange_n(&private_close[i], &z,
							s->perf_fd + 1, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				/* closed at that thread's next tick; woken
				 * when the queue fills */
				if (__atomic_add_fetch(&private_close_n, 1,
						       __ATOMIC_ACQ_REL) >
				    PRIVATE_CLOSE_MAX / 2)
					threads_wake_clock();
				break;
			}
		}
	} else if (s->perf_fd >= 0) {
		perfctr_close_sigsafe(s->perf_fd);
	} else if (!s->counted) {
		timer_delete(s->timer);
	}
	s->perf_private = 0;
	free_slot(s);
}

/* Thread tid's CPU clock (user + system), 0 if it cannot be read: the
 * kernel's per-thread clock id for a tid (CPUCLOCK_SCHED, per thread). */
static uint64_t thread_cpu_ns(int tid)
{
	struct timespec ts;
	clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6);
	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of threads whose counter the program closed, before it was
 * opened again (WIRE_LOST_FD_CLOSED). */
static uint64_t lost_closed_ns;

/* Arms a claimed slot; undoes the claim on failure or if the owner went
 * away meanwhile. how: ARM_ANY, or ARM_SELF from the thread itself (which
 * waits for its counter to be opened), or ARM_OWN_TABLE (a fork child's
 * first thread, before the child has a CPU-clock thread: its counter in
 * its own table). */
enum { ARM_ANY,
       ARM_SELF,
       ARM_OWN_TABLE };

/* A claimed slot whose timer or counter is set: armed, unless its thread
 * exited meanwhile (then retired here). */
static void arm_commit(struct slot *s)
{
	int expect = SLOT_CLAIMED;
	if (!__atomic_compare_exchange_n(&s->state, &expect, SLOT_ARMED, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		disarm_slot(s);
		return;
	}
	__atomic_fetch_add(&table_gen, 1, __ATOMIC_RELEASE);
}

static void arm_slot_how(struct slot *s, int tid, int how)
{
	timer_t t;
	s->perf_fd = -1;
	s->perf_private = 0;
	s->counted = use_clock;
	if (use_clock)
		goto armed;
	if (use_perf && use_private && how != ARM_OWN_TABLE) {
		/* the CPU-clock thread opens it in its own table, woken now:
		 * no number of the program's is taken, even for a moment. A
		 * new thread waits for it (at most 1 ms, giving that thread
		 * its CPU on a busy one), so that a thread that lives a
		 * millisecond is counted from its start */
		want_open(s, 1);
		threads_wake_clock();
		if (how == ARM_SELF &&
		    __atomic_load_n(&clock_alive, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 1000000 };
			uint64_t t0 = mono_ns();
			while (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) ==
				       SLOT_CLAIMED &&
			       __atomic_load_n(&s->reopen, __ATOMIC_ACQUIRE) &&
			       mono_ns() - t0 < 1000000u)
				syscall(SYS_futex, &s->reopen,
					FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
		}
		return;
	}
	if (use_perf) {
		int fd = perfctr_open(tid, sampler.period_ns,
				      1 + rand_below(sampler.period_ns), 0);
		if (fd >= 0) {
			s->perf_fd = fd;
			s->perf_id = perfctr_id(fd);
			s->cpu_ok_ns = thread_cpu_ns(tid);
			goto armed;
		}
		if (fd == -ESRCH) {
			/* the thread ended before we armed it (a short thread
			 * the agent's scan found): nothing refused, nothing to
			 * sample; the whole process must not fall back to the
			 * CPU timers for it (a thread per job did, on 3.15) */
			free_slot(s);
			return;
		}
		if (!__atomic_exchange_n(&perf_failed_logged, 1,
					 __ATOMIC_RELAXED))
			plog_info("perf_event_open refused (%s): using CPU "
				  "timers, at most one sample per kernel tick",
				  strerror(-fd));
	}
	if (arm_timer(tid, &t) < 0) {
		free_slot(s);
		return;
	}
	s->timer = t;
armed:
	arm_commit(s);
}

static void arm_slot(struct slot *s, int tid)
{
	arm_slot_how(s, tid, ARM_ANY);
}

/* Deletes the slot's timer if we win it. */
static void retire(struct slot *s)
{
	int expect = SLOT_ARMED;
	if (__atomic_compare_exchange_n(&s->state, &expect, SLOT_DYING, 0,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		disarm_slot(s);
	} else if (expect == SLOT_CLAIMED) {
		/* arm_slot will see DYING and clean up */
		__atomic_compare_exchange_n(&s->state, &expect, SLOT_DYING, 0,
					    __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
	}
}

static void on_thread_exit(void *arg)
{
	(void)arg;
	struct slot *s = find(gettid_());
	if (s)
		retire(s);
}

static void register_self(void)
{
	if (!__atomic_load_n(&running, __ATOMIC_SEQ_CST))
		return;
	int tid = gettid_();
	struct slot *s = claim(tid);
	if (s)
		arm_slot_how(s, tid, ARM_SELF);
	/* Sampling can be switched off while we arm (control.h): either
	 * threads_stop_sigsafe's sweep saw our slot and retired it, or its store
	 * to running came first and we see it here (both seq_cst). */
	if (s && !__atomic_load_n(&running, __ATOMIC_SEQ_CST))
		retire(s);
	if (key_ok)
		pthread_setspecific(exit_key, (void *)1);
}

int threads_init(void)
{
	if (pthread_key_create(&exit_key, on_thread_exit) == 0)
		key_ok = 1;
	return 0;
}

/* /proc/self/task, opened once per process and kept high (fdutil.h), read
 * again with rewinddir at every scan: an opendir every 200 ms would take
 * the lowest free descriptor for a moment under a program that is
 * rearranging its own. Agent thread only. */
static DIR *task_dir;
static struct fd_id task_dir_id;
static int task_dir_pid;

static DIR *task_dir_get(void)
{
	int pid = getpid();
	if (task_dir && (task_dir_pid != pid ||
			 !fd_is(dirfd(task_dir), &task_dir_id))) {
		if (task_dir_pid != pid &&
		    fd_is(dirfd(task_dir), &task_dir_id))
			closedir(task_dir); /* the parent's copy */
		/* else the program closed it: its number may be the
		 * program's now; the DIR's memory is left behind */
		task_dir = NULL;
	}
	if (!task_dir) {
		int fd = fd_park(open("/proc/self/task",
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (fd < 0)
			return NULL;
		DIR *d = fd_id_get(fd, &task_dir_id) == 0 ? fdopendir(fd)
							  : NULL;
		if (!d) {
			close(fd);
			return NULL;
		}
		task_dir = d;
		task_dir_pid = pid;
	} else {
		rewinddir(task_dir);
	}
	return task_dir;
}

/* Every agent tick, with perf counters: a counter the program closed (a
 * daemon's closerange, a dup2 over it) would leave its thread unsampled,
 * silently. Its number may be the program's now, so it is neither closed
 * nor disabled: the slot is taken back (ARMED to CLAIMED, as a new
 * thread's), a new counter is opened, and the thread's CPU time since the
 * counter was last seen open is counted as lost. Agent thread. */
void threads_check_counters(void)
{
	if (!use_perf || !__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < THREADS_MAX; i++) {
		struct slot *s = &slots[i];
		int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		if (tid <= 0 || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_ARMED || s->perf_fd < 0 ||
		    s->perf_private)
			continue; /* (a private one is not a number of ours) */
		uint64_t now = thread_cpu_ns(tid);
		if (perfctr_id(s->perf_fd) == s->perf_id && s->perf_id) {
			if (now)
				s->cpu_ok_ns = now;
			continue;
		}
		int expect = SLOT_ARMED;
		if (!__atomic_compare_exchange_n(&s->state, &expect,
						 SLOT_CLAIMED, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue; /* retiring: its thread has ended */
		if (now > s->cpu_ok_ns && s->cpu_ok_ns)
			__atomic_fetch_add(&lost_closed_ns, now - s->cpu_ok_ns,
					   __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&closed_logged, 1, __ATOMIC_RELAXED))
			plog_info("the program closed the perf counter of "
				  "thread %d: opened again, the time between "
				  "counted as lost",
				  tid);
		/* opened again by the CPU-clock thread, in its own table: a
		 * counter opened here would take the lowest free number of the
		 * program's for a moment, which a program that has just closed
		 * its descriptors may be about to use or test (CPython's
		 * TestInvalidFD read ENOSPC from one) */
		s->perf_fd = -1;
		if (__atomic_load_n(&sampler.sysclock, __ATOMIC_ACQUIRE)) {
			want_open(s, 0);
			continue;
		}
		arm_slot(s, tid);
	}
}

void threads_private_lost(void)
{
	for (int i = 0; i < PRIVATE_CLOSE_MAX; i++)
		__atomic_store_n(&private_close[i], 0, __ATOMIC_RELEASE);
	__atomic_store_n(&private_close_n, 0, __ATOMIC_RELEASE);
	/* and the slots still waiting for theirs */
	__atomic_store_n(&open_scan, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&clock_alive, 1, __ATOMIC_RELEASE);
}

void threads_await_counter(void)
{
	if (!use_private)
		return;
	struct slot *s = find(gettid_());
	uint64_t t0 = mono_ns();
	if (!s)
		return;
	/* until the CPU-clock thread has started (clock_alive) and opened
	 * this thread's counter again (reopen back to 0), 1 ms at most */
	while (mono_ns() - t0 < 1000000u) {
		struct timespec ts = { 0, 50000 };
		if (!__atomic_load_n(&clock_alive, __ATOMIC_ACQUIRE)) {
			nanosleep(&ts, NULL);
			continue;
		}
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_CLAIMED ||
		    !__atomic_load_n(&s->reopen, __ATOMIC_ACQUIRE))
			return;
		ts.tv_nsec = 200000;
		syscall(SYS_futex, &s->reopen, FUTEX_WAIT_PRIVATE, 1, &ts, NULL,
			0);
	}
}

void threads_await_opened(void)
{
	if (!use_private)
		return;
	/* every thread listed when sampling started armed before the start
	 * is answered (ctl status says armed=N): 50 ms at most */
	uint64_t t0 = mono_ns();
	while (mono_ns() - t0 < 50000000u) {
		struct timespec ts = { 0, 200000 };
		int pending = 0;
		if (!__atomic_load_n(&clock_alive, __ATOMIC_ACQUIRE)) {
			nanosleep(&ts, NULL); /* (that thread is starting) */
			continue;
		}
		for (int i = 0; i < THREADS_MAX && !pending; i++)
			pending = slots[i].tid > 0 &&
				  __atomic_load_n(&slots[i].reopen,
						  __ATOMIC_ACQUIRE) &&
				  __atomic_load_n(&slots[i].state,
						  __ATOMIC_ACQUIRE) ==
					  SLOT_CLAIMED;
		if (!pending)
			return;
		nanosleep(&ts, NULL);
	}
}

void threads_clock_ended(void)
{
	__atomic_store_n(&clock_alive, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < THREADS_MAX; i++) {
		struct slot *s = &slots[i];
		int expect = SLOT_ARMED;
		if (!s->perf_private ||
		    !__atomic_compare_exchange_n(&s->state, &expect,
						 SLOT_CLAIMED, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		s->perf_fd = -1;
		s->perf_private = 0;
		want_open(s, 0);
	}
}

/* Opens slot s's counter if it waits for one (CPU-clock thread). */
static void open_one(struct slot *s)
{
	int tid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
	if (tid <= 0 || !__atomic_load_n(&s->reopen, __ATOMIC_ACQUIRE))
		return;
	int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (st == SLOT_DYING) {
		/* it ended before its counter was opened: the slot is this
		 * thread's to give back (retire left it) */
		if (__atomic_exchange_n(&s->reopen, 0, __ATOMIC_ACQ_REL))
			free_slot(s);
		return;
	}
	if (st != SLOT_CLAIMED)
		return;
	int fd = perfctr_open(tid, sampler.period_ns,
			      1 + rand_below(sampler.period_ns), 1);
	/* the thread may be waiting for it (arm_slot_how) */
	__atomic_store_n(&s->reopen, 0, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->reopen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (fd < 0) {
		/* ESRCH: the thread is gone; else the next scan arms it its
		 * own way */
		free_slot(s);
		return;
	}
	/* (no id, no clock: threads_check_counters looks only at counters
	 * of the program's table) */
	s->perf_fd = fd;
	s->perf_private = 1;
	arm_commit(s);
}

void threads_reopen_private(void)
{
	if (__atomic_load_n(&private_close_n, __ATOMIC_ACQUIRE)) {
		for (int i = 0; i < PRIVATE_CLOSE_MAX; i++) {
			int fd = __atomic_exchange_n(&private_close[i], 0,
						     __ATOMIC_ACQ_REL);
			if (fd > 0) {
				__atomic_fetch_sub(&private_close_n, 1,
						   __ATOMIC_ACQ_REL);
				close(fd - 1); /* (no one else holds it) */
			}
		}
	}
	if (!use_perf || !__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return;
	/* the new threads, from their queue; every slot when a counter
	 * must be opened again for another reason (or the queue was full) */
	if (__atomic_exchange_n(&open_scan, 0, __ATOMIC_ACQ_REL)) {
		for (int i = 0; i < THREADS_MAX; i++)
			open_one(&slots[i]);
	}
	if (!__atomic_load_n(&open_q_n, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < OPEN_Q_MAX; i++) {
		struct slot *q = __atomic_exchange_n(&open_q[i], NULL,
						     __ATOMIC_ACQ_REL);
		if (q) {
			__atomic_fetch_sub(&open_q_n, 1, __ATOMIC_ACQ_REL);
			open_one(q);
		}
	}
}

void threads_period_due(void)
{
	uint64_t period = sampler.period_ns;
	int from = 0, fd;

	while ((fd = sig_handler_perf_period_due(&from)) >= 0)
		ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
}

void threads_wake_clock(void)
{
	sig_handler_wake_clock();
}

uint64_t threads_lost_closed_ns(void)
{
	return __atomic_load_n(&lost_closed_ns, __ATOMIC_RELAXED);
}

void threads_prepare_scan(void)
{
	(void)task_dir_get();
}

void threads_scan(void)
{
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return;
	DIR *d = task_dir_get();
	if (!d)
		return;
	for (int i = 0; i < THREADS_MAX; i++)
		slots[i].seen = 0;
	int self = gettid_();
	(void)self;
	struct dirent *e;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || threads_is_internal(tid))
			continue; /* pyprof's own threads are never sampled */
		struct slot *s = find(tid);
		if (!s) {
			s = claim(tid);
			if (s)
				arm_slot(s, tid);
			s = find(tid);
		}
		if (s)
			s->seen = 1;
	}
	for (int i = 0; i < THREADS_MAX; i++) {
		struct slot *s = &slots[i];
		if (s->tid > 0 && !s->seen &&
		    __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_ARMED)
			retire(s);
	}
}

void threads_start(int source)
{
	/* CPU timers are not used unless asked for: the kernel checks them
	 * only at its tick, and on a busy CPU it lets a thread's timer go
	 * unchecked for tens of milliseconds of the thread's CPU time, then
	 * delivers one signal whose overrun charges all of it to wherever the
	 * thread is at that moment (docs/design.md, "Why not CPU timers").
	 * The default (auto): the threads' CPU clocks read from our own
	 * thread (cpuclock.h: user and system time, no signal, no descriptor
	 * in the program's table). perf counters when asked
	 * (PYPROF_CPU_SOURCE=perf): a perf_event task-clock counter per
	 * thread counts the thread's own CPU time and signals the thread
	 * where it runs, so a burst shorter than a period between waits is
	 * charged where it ran, and the kernel's part is placed by the
	 * CPU-clock thread (system mode). Not the default: each counter is a
	 * descriptor in the program's table, opened by the thread itself at
	 * a low number before it is moved high, and CPython's own tests of
	 * descriptors (test_subprocess's test_failed_child_execute_fd_leak
	 * in make check's regression matrix, 3.14 and 3.15) saw both. Asked
	 * for but refused (a container's seccomp profile,
	 * perf_event_paranoid 3 or 4): the clocks, each thread charged only
	 * where it is found running. With native stacks, which need the
	 * thread's own registers: perf counters, the CPU timers where perf
	 * is refused (docs/design.md, "Where the CPU time was spent"). */
	use_clock = source == CONFIG_SOURCE_CLOCK;
	use_oncpu = 0;
	use_perf = !use_clock && source != CONFIG_SOURCE_TIMER;
	use_private = 0;
	if (use_perf && !sampler.native) {
		/* the default opens every counter in the CPU-clock thread's
		 * own table (close_range's CLOSE_RANGE_UNSHARE, Linux 5.9):
		 * without one, the clocks rather than counters in the
		 * program's table; asked for (perf), counters all the same */
		int e = perfctr_probe_private(), priv = e >= 0;
		if (e < 0)
			e = source == CONFIG_SOURCE_AUTO ? ENOSYS : perfctr_probe();
		if (e) {
			plog_info("perf_event_open %s (%s): CPU time from "
				  "the threads' CPU clocks, each thread charged "
				  "where it is found running",
				  priv || e != ENOSYS ? "refused"
						      : "without close_range",
				  strerror(e));
			use_perf = 0;
			use_clock = 1;
			use_oncpu = 1;
		}
		use_private = priv;
	}
	use_sysclock = use_perf && !sampler.native;
	use_private = use_private && use_sysclock;
	__atomic_store_n(&sampler.sysclock, use_sysclock, __ATOMIC_RELEASE);
	__atomic_fetch_add(&sampler.cpu_gen, 1, __ATOMIC_RELAXED);
	started = 1;
	__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
	threads_scan();
}

void threads_stop_sigsafe(void)
{
	__atomic_store_n(&running, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < THREADS_MAX; i++)
		if (slots[i].tid > 0)
			retire(&slots[i]);
}

void threads_resume_sigsafe(void)
{
	__atomic_store_n(&running, 1, __ATOMIC_SEQ_CST);
}

void threads_after_fork_child(int follow)
{
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
	memset(internal, 0, sizeof internal);
	/* The parent's counters: close our copies of the fds, and only that.
	 * The event is shared with the parent: disabling it here would stop
	 * the parent's sampling. */
	for (int i = 0; i < THREADS_MAX; i++)
		if (slots[i].tid > 0 && slots[i].state == SLOT_ARMED &&
		    slots[i].perf_fd >= 0 && !slots[i].perf_private)
			close(slots[i].perf_fd);
	zero_pages(slots, sizeof slots);
	/* the queues name the parent's slots and its CPU-clock thread's
	 * numbers */
	memset(open_q, 0, sizeof open_q);
	open_q_n = open_scan = clock_alive = 0;
	memset(private_close, 0, sizeof private_close);
	private_close_n = 0;
	lost_closed_ns = 0;
	__atomic_fetch_add(&sampler.cpu_gen, 1, __ATOMIC_RELAXED);
	if (follow) {
		__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
		int tid = gettid_();
		struct slot *s = claim(tid);
		if (s)
			arm_slot_how(s, tid, ARM_OWN_TABLE);
	}
}

int threads_perf_armed(int tid)
{
	struct slot *s = find(tid);
	return s && __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SLOT_ARMED &&
	       (s->perf_fd >= 0 || s->perf_private);
}

int threads_using_perf(void)
{
	return use_perf && !perf_failed_logged;
}

int threads_using_clock(void)
{
	return use_clock;
}

int threads_clock_thread(void)
{
	return use_clock || (use_sysclock && threads_using_perf());
}

int threads_clock_system_only(void)
{
	return !use_clock;
}

int threads_clock_oncpu(void)
{
	return use_oncpu;
}

int threads_source(void)
{
	if (!started)
		return 0;
	if (use_clock)
		return use_oncpu ? WIRE_CPU_ONCPU : WIRE_CPU_CLOCKS;
	return use_perf && !perf_failed_logged ? WIRE_CPU_PERF_CLOCK
					       : WIRE_CPU_TIMERS;
}

int threads_running(void)
{
	return __atomic_load_n(&running, __ATOMIC_ACQUIRE);
}

int threads_running_sigsafe(void)
{
	return threads_running();
}

unsigned threads_table_gen(void)
{
	return __atomic_load_n(&table_gen, __ATOMIC_ACQUIRE);
}

int threads_list(int *tids, int max)
{
	int n = 0;
	for (int i = 0; i < THREADS_MAX && n < max; i++) {
		int t = __atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE);
		if (t > 0 && __atomic_load_n(&slots[i].state,
					     __ATOMIC_ACQUIRE) == SLOT_ARMED)
			tids[n++] = t;
	}
	return n;
}

int threads_armed(void)
{
	int n = 0;
	for (int i = 0; i < THREADS_MAX; i++)
		if (__atomic_load_n(&slots[i].state, __ATOMIC_RELAXED) ==
		    SLOT_ARMED)
			n++;
	return n;
}

/* ---- pthread_create wrapper ------------------------------------------ */

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *trampoline(void *p)
{
	struct start st = *(struct start *)p;
	heap_enter(); /* what we allocate here is not the program's */
	free(p);
	native_prepare_thread(); /* before the first signal can come */
	register_self();
	heap_leave();
	return st.fn(st.arg);
}


int threads_pthread_create(pthread_t *th, const pthread_attr_t *attr,
			   void *(*fn)(void *), void *arg)
{
	pthread_create_fn real = LIBC_NEXT(pthread_create, "pthread_create");
	if (!real)
		return EAGAIN;
	/* With native stacks on, every thread goes through the trampoline,
	 * even before sampling starts: it must prepare libunwind for itself
	 * before its first signal (native.h). */
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE) && !sampler.native)
		return real(th, attr, fn, arg);
	heap_enter();
	struct start *st = malloc(sizeof *st);
	heap_leave();
	if (!st)
		return real(th, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	int rc = real(th, attr, trampoline, st);
	if (rc)
		free(st);
	return rc;
}
