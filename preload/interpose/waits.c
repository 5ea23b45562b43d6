/*
 * interpose/waits.c - sem_wait, sem_timedwait, sem_clockwait, sem_post,
 * pthread_cond_timedwait and pthread_cond_signal as the program sees them
 * (exports.map): with block and mutex profiles off (PYPROF_WAITS unset,
 * the default), each is one load and branch more than libc's function,
 * called through libc_next.h's table; on, the wait is timed and accounted
 * by signal/sig_waits.c. Only the GIL's condition variable is followed;
 * every other passes through.
 *
 * Contexts: every thread of the program, inside CPython's locks and GIL,
 * possibly in the program's signal handlers (sem_post is
 * async-signal-safe): what signal/ allows (tools/check-sigsafe).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

#include "base/libc_next.h"
#include "signal/sig_heap.h"
#include "signal/sig_waits.h"

#define EXPORT __attribute__((visibility("default")))

/* Not ours to follow: waits off, or this thread inside pyprof (the waits'
 * own code, or pyprof's own threads, which keep heap_busy raised). */
static inline int pass(void)
{
	return __builtin_expect(!waits_on, 1) || waits_busy || heap_busy;
}

EXPORT int sem_wait(sem_t *sem)
{
	if (pass())
		return LIBC_NEXT(sem_wait, "sem_wait")(sem);
	return waits_sem_wait_sigsafe(sem);
}

EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
	if (pass())
		return LIBC_NEXT(sem_timedwait, "sem_timedwait")(sem, abs);
	return waits_sem_timedwait_sigsafe(sem, abs);
}

EXPORT int sem_clockwait(sem_t *sem, clockid_t clock,
			 const struct timespec *abs)
{
	int (*fn)(sem_t *, clockid_t, const struct timespec *) =
		LIBC_NEXT(sem_clockwait, "sem_clockwait");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	if (pass())
		return fn(sem, clock, abs);
	return waits_sem_clockwait_sigsafe(sem, clock, abs);
}

EXPORT int sem_post(sem_t *sem)
{
	if (!pass())
		waits_sem_post_sigsafe(sem);
	return LIBC_NEXT(sem_post, "sem_post")(sem);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				  const struct timespec *abs)
{
	if (pass() || (uintptr_t)c != waits_gil_cond)
		return LIBC_NEXT_COND(cond_timedwait,
				      "pthread_cond_timedwait")(c, m, abs);
	return waits_gil_wait_sigsafe(c, m, abs);
}

EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	if (!pass() && (uintptr_t)c == waits_gil_cond)
		waits_gil_released_sigsafe(c);
	return LIBC_NEXT_COND(cond_signal, "pthread_cond_signal")(c);
}
