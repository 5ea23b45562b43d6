/*
 * interpose/pthread.c - pthread_create() as the program sees it
 * (exports.map): sample/threads.c arms the new thread's timer from a
 * trampoline (and prepares native stacks for it) once sampling runs.
 *
 * Contexts: the program's threads; allocates (not in signal context:
 * pthread_create is not async-signal-safe either), so tools/check-sigsafe
 * leaves this file out (see the Makefile).
 */
#include <pthread.h>

#include "sample/threads.h"

__attribute__((visibility("default"))) int
pthread_create(pthread_t *th, const pthread_attr_t *attr,
	       void *(*fn)(void *), void *arg)
{
	return threads_pthread_create(th, attr, fn, arg);
}
