/*
 * execwrap.c - execve() and friends, interposed: before a thread replaces
 * the program, pyprof disarms its timers and counters and discards any
 * SIGPROF already pending for that thread. A pending signal survives
 * execve, where SIGPROF is back to its default action (terminate): a
 * forked child that execs (subprocess with user=/group=, or fork+exec on
 * older Pythons) was killed by it.
 *
 * Runs in a fork child before exec, so only async-signal-safe calls:
 * timer_delete/close (threads_stop), sigprocmask, sigtimedwait.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "sampler.h"
#include "threads.h"

void execwrap_init(void);

static void quiet_sigprof(void)
{
	sigset_t prof, old;
	struct timespec zero = {0, 0};
	/* A vfork child (Python 3.10+'s subprocess uses vfork) shares the
	 * parent's memory: switching sampling off here would switch it off
	 * in the parent, whose timers stay armed. Its own thread has no
	 * timer anyway: only the drain below is for it. */
	int ours = getpid() == sampler.owner_pid;
	if (ours)
		__atomic_store_n(&sampler.active, 0, __ATOMIC_RELEASE);
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, &old);
	if (ours)
		threads_stop();
	while (sigtimedwait(&prof, NULL, &zero) == SIGPROF)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

typedef int (*execve_fn)(const char *, char *const *, char *const *);
typedef int (*execv_fn)(const char *, char *const *);
static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;

/* Resolved by the constructor: dlsym is not safe in a fork child. */
void execwrap_init(void)
{
	real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
	real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
	real_execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
	real_execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
}

__attribute__((visibility("default"))) int
execve(const char *path, char *const argv[], char *const envp[])
{
	if (!real_execve) {
		errno = ENOSYS;
		return -1;
	}
	quiet_sigprof();
	return real_execve(path, argv, envp);
}

__attribute__((visibility("default"))) int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!real_execvpe) {
		errno = ENOSYS;
		return -1;
	}
	quiet_sigprof();
	return real_execvpe(file, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char *path,
						 char *const argv[])
{
	if (!real_execv) {
		errno = ENOSYS;
		return -1;
	}
	quiet_sigprof();
	return real_execv(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char *file,
						  char *const argv[])
{
	if (!real_execvp) {
		errno = ENOSYS;
		return -1;
	}
	quiet_sigprof();
	return real_execvp(file, argv);
}
