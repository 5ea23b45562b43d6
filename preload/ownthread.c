/*
 * ownthread.c - see ownthread.h. Constructor, agent, fork child; never a
 * signal handler.
 */
#include "ownthread.h"

#include <signal.h>

int ownthread_create(pthread_t *th, void *(*fn)(void *), void *arg,
		     const char *name)
{
	sigset_t all, old;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		pthread_setname_np(*th, name); /* ps -L, top -H, gdb */
	return rc;
}
