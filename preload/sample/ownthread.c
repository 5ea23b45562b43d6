/*
 * ownthread.c - see ownthread.h. Constructor, agent, fork child; never a
 * signal handler.
 */
#include "ownthread.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "base/libc_next.h"
#include "threads.h"
#include "base/tid.h"

struct start {
	void *(*fn)(void *);
	void *arg;
	char name[16];
};

/* The thread names itself (ps -L, top -H, gdb) before it runs fn: named
 * from outside, glibc opens /proc/self/task/TID/comm, a descriptor at the
 * lowest free number for a moment while the program runs, where a program
 * listing its descriptors could see it (environment.md). */
static void *start(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	prctl(PR_SET_NAME, s.name, 0, 0, 0);
	return s.fn(s.arg);
}

int ownthread_create(pthread_t *th, void *(*fn)(void *), void *arg,
		     const char *name)
{
	struct start *st = malloc(sizeof *st);
	if (!st)
		return ENOMEM;
	st->fn = fn;
	st->arg = arg;
	strncpy(st->name, name, sizeof st->name - 1);
	st->name[sizeof st->name - 1] = 0;
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
	int rc = create ? create(th, NULL, start, st) : EAGAIN;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		threads_internal_add(tid_of((uintptr_t)*th));
	else
		free(st);
	return rc;
}
