/*
 * libc_next.h - the libc functions pyprof interposes, as libc itself
 * defines them: every RTLD_NEXT symbol, resolved once by the constructor.
 *
 * The wrappers (interpose/) run where dlsym must not: in signal handlers
 * (a program's handler may call sigaction or _exit) and in fork and vfork
 * children (Python 3.10+'s subprocess execs from a vfork child, sharing
 * the parent's memory, so a loader lock taken there is the parent's).
 * They read libc_next.<name> only. Before the constructor has run (another
 * library's constructor calling sigaction), the field is still NULL and
 * LIBC_NEXT resolves it there and then with libc_next_early(): no program
 * code has run yet, so no signal handler or child of it exists.
 *
 * Contexts: libc_next_init in the constructor; the table is read-only
 * afterwards and may be read from any context.
 */
#ifndef PYPROF_LIBC_NEXT_H
#define PYPROF_LIBC_NEXT_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>

struct libc_next {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	sighandler_t (*signal)(int, sighandler_t);
	int (*execve)(const char *, char *const *, char *const *);
	int (*execvpe)(const char *, char *const *, char *const *);
	int (*execv)(const char *, char *const *);
	int (*execvp)(const char *, char *const *);
	void (*exit_)(int); /* _exit */
	void (*Exit_)(int); /* _Exit */
	int (*pthread_create)(pthread_t *, const pthread_attr_t *,
			      void *(*)(void *), void *);
	pid_t (*fork)(void);
	/* waits (interpose/waits.c); the condition variable functions at
	 * glibc's current version (GLIBC_2.3.2), not the LinuxThreads-era
	 * one a plain dlsym may give */
	int (*sem_wait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	int (*sem_post)(sem_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
};

extern struct libc_next libc_next;

/* Constructor: fills every field (NULL where libc lacks the symbol). */
void libc_next_init(void);

/* dlsym(RTLD_NEXT, name): only for a wrapper called before
 * libc_next_init, through LIBC_NEXT. Not async-signal-safe. */
void *libc_next_early(const char *name);

/* The same for a function glibc versions (the condition variables): its
 * GLIBC_2.3.2 definition, else the unversioned lookup. */
void *libc_next_early_cond(const char *name);

/* The next definition of libc's NAME, read from field F of the table. */
#define LIBC_NEXT(f, name)                                         \
	(__atomic_load_n(&libc_next.f, __ATOMIC_ACQUIRE)           \
		 ? __atomic_load_n(&libc_next.f, __ATOMIC_ACQUIRE) \
		 : (__typeof__(libc_next.f))libc_next_early(name))

/* The same for a condition variable function (libc_next_early_cond). */
#define LIBC_NEXT_COND(f, name)                                    \
	(__atomic_load_n(&libc_next.f, __ATOMIC_ACQUIRE)           \
		 ? __atomic_load_n(&libc_next.f, __ATOMIC_ACQUIRE) \
		 : (__typeof__(libc_next.f))libc_next_early_cond(name))

/* sigaction(2) itself, past pyprof's wrapper (interpose/signals.c): for
 * the guard and the toggle, which install their handlers with it. Any
 * context. */
static inline int libc_next_sigaction(int sig, const struct sigaction *act,
				      struct sigaction *old)
{
	int (*fn)(int, const struct sigaction *, struct sigaction *) =
		LIBC_NEXT(sigaction, "sigaction");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(sig, act, old);
}

#endif
