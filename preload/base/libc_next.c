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

#define RESOLVE(f, name)                                                       \
	__atomic_store_n(&libc_next.f,                                         \
			 (__typeof__(libc_next.f))dlsym(RTLD_NEXT, name),      \
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
}
