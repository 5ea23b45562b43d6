/*
 * ownthread.h - starting one of the library's own threads (the agent, the
 * thread-names thread, the wall-clock sampler).
 *
 * Such a thread starts with every signal blocked, so that no signal of the
 * program's is ever delivered to it and the program's signal routing does
 * not change, except the faults: with SIGSEGV or SIGBUS blocked, a fault
 * in a guarded read would kill the process instead of reaching the guard
 * (guard.h). The calling thread's mask is put back before this returns.
 *
 * Contexts: the constructor, the agent, a fork child's forking thread;
 * never a signal handler.
 */
#ifndef PYPROF_OWNTHREAD_H
#define PYPROF_OWNTHREAD_H

#include <pthread.h>

/* pthread_create(th, NULL, fn, arg) under that mask, the thread named
 * name (at most 15 bytes; "pyprof-..." for every thread of ours, so that
 * ps -L and a debugger tell them from the program's): 0 or an errno
 * number. */
int ownthread_create(pthread_t *th, void *(*fn)(void *), void *arg,
		     const char *name);

#endif /* PYPROF_OWNTHREAD_H */
