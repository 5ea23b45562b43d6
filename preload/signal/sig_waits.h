/*
 * sig_waits.h - block and mutex profiles (PYPROF_WAITS): where Python threads
 * wait for a lock or the GIL, and whose code held what they waited for.
 *
 * How waits are seen. Every blocking wait of CPython 3.8+ on Linux passes
 * through libc, which interpose/waits.c wraps:
 *   3.8-3.12  a lock (threading.Lock and all built on it) is a sem_t: a
 *             waiter blocks in sem_wait / sem_timedwait / sem_clockwait
 *             on it, and every release is a sem_post on the same sem_t;
 *   3.13+     a lock is a PyMutex (or PyEvent): a waiter parks on the
 *             semaphore of its own parking-lot wait entry, on its stack,
 *             whose addr field (just before the semaphore since 3.13)
 *             is the lock's address; a release with waiters posts it;
 *   all       the GIL is a pthread mutex and condition variable: a thread
 *             waiting for it sleeps in pthread_cond_timedwait on the
 *             GIL's cond (5 ms at a time, until it finds the GIL free),
 *             and drop_gil signals that cond at every release.
 * The GIL's cond is found through struct pyabi (gil_cond, generated).
 *
 * What is recorded. Block: the waiting thread's Python stack (taken once
 * the wait ended: the thread ran no Python code meanwhile, so it is the
 * stack it blocked with), with count 1 and the delay in ns; GIL waits get
 * a "[GIL]" leaf (agent). Mutex: at each release that others waited
 * through, the releasing thread's stack, charged with the time each
 * waiter spent waiting during this hold (a wait that spans several holds
 * is split among their holders by overlap). Both sampled as Go's block
 * profile rate: an event of at least rate ns is kept, a shorter one with
 * probability delay/rate and then stands for rate ns.
 *
 * Contexts: waits_init in the constructor, waits_python_started on the
 * agent thread; the wrappers on any thread, possibly in a signal handler
 * (async-signal-safe rules, like signal/).
 */
#ifndef PYPROF_SIG_WAITS_H
#define PYPROF_SIG_WAITS_H

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

/* Kinds in raw_sample.wait (sampler.h). */
enum waits_kind {
	WAITS_BLOCK = 1, /* a thread's wait                        */
	WAITS_MUTEX = 2, /* a holder's charge at release           */
	WAITS_GIL = 4	 /* with either: the lock was the GIL      */
};

/* Counters, relaxed atomics (reported at exit with PYPROF_LOG=info). */
struct waits_stats {
	unsigned long n_waits; /* waits seen                          */
	unsigned long n_block; /* block records written               */
	unsigned long n_mutex; /* mutex records written               */
	unsigned long n_lost;  /* a table or the ring was full        */
};
extern struct waits_stats waits_stats;

/* 1 while waits are followed: the wrappers' one branch. hidden, read
 * directly (not through the GOT). */
extern int waits_on __attribute__((visibility("hidden")));

/* Constructor: the interpreter's row (waits need its waits_profiled,
 * 3.8+: before, the caller says so in one line, and waits_set does
 * nothing; locks_park says how a lock waits). Waits start off. */
struct pyabi;
void waits_init(const struct pyabi *abi);
/* 1 if this interpreter's waits can be followed (3.8+). Any thread. */
int waits_supported(void);

/* The agent saw the interpreter up: finds the GIL (runtime or main
 * interpreter). Agent thread. */
void waits_python_started(void);

/* Switches waits on at rate_ns (ns; a change of rate while on takes
 * effect at once) or off (0). Sampling switches them (control.c):
 * PYPROF_WAITS's rate while the process samples by itself, a CTL_START's
 * for its request. From off to on the tables start empty: waits that
 * began while off (or in an earlier period) are not counted. Agent
 * thread (or a fork child's one thread). */
void waits_set(uint64_t rate_ns);
/* The rate now, 0 while off. Any thread. */
uint64_t waits_rate_now(void);

/* Exit: waits off. */
void waits_stop(void);

/* Fork child (its one thread): the parent's waiters are not its own; the
 * tables start empty. */
void waits_after_fork_child(void);

/* ---- for the shims of interpose/waits.c -------------------------------- */

/* 1 while this thread is inside the waits' own code (a signal handler
 * that interrupts it passes through). Initial-exec TLS. */
extern __thread int waits_busy;

/* The GIL's pthread_cond_t (0 until the interpreter is up). */
extern uintptr_t waits_gil_cond __attribute__((visibility("hidden")));

/* The waits themselves, with waits on and the thread not busy: the libc
 * call, timed and accounted. Errno as the call left it. */
int waits_sem_wait_sigsafe(sem_t *sem);
int waits_sem_timedwait_sigsafe(sem_t *sem, const struct timespec *abs);
int waits_sem_clockwait_sigsafe(sem_t *sem, clockid_t clock,
				const struct timespec *abs);
int waits_gil_wait_sigsafe(pthread_cond_t *c, pthread_mutex_t *m,
			   const struct timespec *abs);
/* Before a release: sem about to be posted, the GIL's cond about to be
 * signalled (drop_gil). Errno preserved. */
void waits_sem_post_sigsafe(sem_t *sem);
void waits_gil_released_sigsafe(pthread_cond_t *c);

#endif /* PYPROF_SIG_WAITS_H */
