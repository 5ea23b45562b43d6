/*
 * libc_next.c - resolves the libc functions pyprof interposes (see
 * libc_next.h). Constructor only, and libc_next_early for a wrapper called
 * before the constructor: both call dlsym, so nothing here may run in a
 * signal handler or a (v)fork child once the program runs.
 */
#include <dlfcn.h>

#include "libc_next.h"

struct libc_next libc_next;

void *libc_next_early(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* glibc keeps the pre-2.3.2 condition variables under the same names:
 * dlsym(RTLD_NEXT) can return those, whose layout differs from the
 * pthread_cond_t CPython initialized. */
void *libc_next_early_cond(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
	return p ? p : dlsym(RTLD_NEXT, name);
}

#define RESOLVE(f, name)                                                  \
	__atomic_store_n(&libc_next.f,                                    \
			 (__typeof__(libc_next.f))dlsym(RTLD_NEXT, name), \
			 __ATOMIC_RELEASE)

void libc_next_init(void)
{
	RESOLVE(sigaction, "sigaction");
	RESOLVE(signal, "signal");
	RESOLVE(execve, "execve");
	RESOLVE(execvpe, "execvpe");
	RESOLVE(execv, "execv");
	RESOLVE(execvp, "execvp");
	RESOLVE(exit_, "_exit");
	RESOLVE(Exit_, "_Exit");
	RESOLVE(pthread_create, "pthread_create");
	RESOLVE(fork, "fork");
	RESOLVE(sem_wait, "sem_wait");
	RESOLVE(sem_timedwait, "sem_timedwait");
	RESOLVE(sem_clockwait, "sem_clockwait");
	RESOLVE(sem_post, "sem_post");
#define RESOLVE_COND(f, name)                                                 \
	__atomic_store_n(&libc_next.f,                                        \
			 (__typeof__(libc_next.f))libc_next_early_cond(name), \
			 __ATOMIC_RELEASE)
	RESOLVE_COND(cond_wait, "pthread_cond_wait");
	RESOLVE_COND(cond_timedwait, "pthread_cond_timedwait");
	RESOLVE_COND(cond_signal, "pthread_cond_signal");
	RESOLVE_COND(cond_broadcast, "pthread_cond_broadcast");
#undef RESOLVE_COND
}
