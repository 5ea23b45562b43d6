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

#include "latebind.h"
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

/* Each wrapper under a name of our own: in a library loaded by dlopen,
 * &sem_wait would be whatever the lookup scope binds it to (libc's). */
#define SHIM(f)                       \
	extern __typeof__(f) shim_##f \
		__attribute__((copy(f), alias(#f), visibility("hidden")))
SHIM(sem_wait);
SHIM(sem_timedwait);
SHIM(sem_clockwait);
SHIM(sem_post);
SHIM(pthread_cond_timedwait);
SHIM(pthread_cond_signal);
#undef SHIM

int waits_latebind_fns(struct latebind_fn *fns, int cap)
{
	const struct latebind_fn all[] = {
		{ "sem_wait", (void *)shim_sem_wait,
		  (void *)libc_next.sem_wait, NULL },
		{ "sem_timedwait", (void *)shim_sem_timedwait,
		  (void *)libc_next.sem_timedwait, NULL },
		{ "sem_clockwait", (void *)shim_sem_clockwait,
		  (void *)libc_next.sem_clockwait, NULL },
		{ "sem_post", (void *)shim_sem_post,
		  (void *)libc_next.sem_post, NULL },
		{ "pthread_cond_timedwait", (void *)shim_pthread_cond_timedwait,
		  (void *)libc_next.cond_timedwait, "GLIBC_2.3.2" },
		{ "pthread_cond_signal", (void *)shim_pthread_cond_signal,
		  (void *)libc_next.cond_signal, "GLIBC_2.3.2" },
	};
	int n = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && n < cap; i++)
		if (all[i].libc) /* sem_clockwait: glibc 2.30+ */
			fns[n++] = all[i];
	return n;
}
