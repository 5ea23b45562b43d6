/*
 * ownthread.c - see ownthread.h. Constructor, agent, fork child; never a
 * signal handler.
 */
#include "ownthread.h"

#include <errno.h>
#include <signal.h>

#include "base/libc_next.h"
#include "threads.h"
#include "base/tid.h"

int ownthread_create(pthread_t *th, void *(*fn)(void *), void *arg,
		     const char *name)
{
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* libc's own, past our wrapper (threads.c): a thread of ours is
	 * never the program's, not even armed for the moment before it
	 * says so (threads_internal_self) */
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
		      void *) = LIBC_NEXT(pthread_create, "pthread_create");
	int rc = create ? create(th, NULL, fn, arg) : EAGAIN;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0) {
		threads_internal_add(tid_of((uintptr_t)*th));
		pthread_setname_np(*th, name); /* ps -L, top -H, gdb */
	}
	return rc;
}
