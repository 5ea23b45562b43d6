/*
 * interpose/fork.c - fork() as the program sees it (exports.map): the
 * same call, with pyprof's own threads paused around it where the
 * interpreter would warn about them (agent/forkpause.c).
 *
 * Contexts: the program's forking thread. Not in signal context: the
 * pause takes the agent's lock and logs (which is why tools/check-sigsafe
 * leaves this file out, see the Makefile); a program that forks in a
 * signal handler gets what it got before this file existed.
 */
#include <sys/types.h>
#include <unistd.h>

#include "agent/forkpause.h"

__attribute__((visibility("default"))) pid_t fork(void)
{
	return forkpause_fork();
}
