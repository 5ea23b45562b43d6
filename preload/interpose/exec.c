/*
 * interpose/exec.c - execve() and friends, and _exit()/_Exit(), interposed.
 *
 * exec: before a thread replaces the program, pyprof disarms its timers
 * and counters and discards any SIGPROF already pending for that thread.
 * A pending signal survives execve, where SIGPROF is back to its default
 * action (terminate): a forked child that execs (subprocess with
 * user=/group=, or fork+exec on older Pythons) was killed by it.
 *
 * _exit: os._exit() and multiprocessing's children end with _exit(), which
 * runs no destructor: the owner process flushes first, as at a normal exit
 * (init_flush_before_exit; nothing in a vfork child, whose pid differs).
 *
 * Contexts: any thread, fork and vfork children (Python 3.10+'s subprocess
 * execs from a vfork child, and _exits there if the exec fails), signal
 * handlers (_exit is async-signal-safe for the program): async-signal-safe
 * calls only, no dlsym (libc_next.h).
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/control.h"
#include "agent/init.h"
#include "base/libc_next.h"
#include "base/sampler.h"
#include "sample/threads.h"

/* What quiet_sigprof switched off, for resume_sigprof. */
struct quieted {
	int active;  /* sampler.active was set  */
	int running; /* threads' timers were on */
};

static struct quieted quiet_sigprof(void)
{
	struct quieted q = { 0, 0 };
	sigset_t prof, old;
	struct timespec zero = { 0, 0 };
	/* A vfork child (Python 3.10+'s subprocess uses vfork) shares the
	 * parent's memory: switching sampling off here would switch it off
	 * in the parent, whose timers stay armed. Its own thread has no
	 * timer anyway: only the drain below is for it. */
	int ours = getpid() == sampler.owner_pid;
	if (ours) {
		q.active = __atomic_exchange_n(&sampler.active, 0,
					       __ATOMIC_ACQ_REL);
		q.running = threads_running_sigsafe();
		init_note_exec_sigsafe();
	}
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, &old);
	if (ours)
		threads_stop_sigsafe();
	while (sigtimedwait(&prof, NULL, &zero) == SIGPROF)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return q;
}

/* The exec failed and the program goes on: sampling as before, if the
 * agent did not stop it meanwhile (sampling_stop clears both again). */
static void resume_sigprof(struct quieted q)
{
	int saved = errno;
	if (q.active && sampling_is_on_sigsafe()) {
		if (q.running)
			threads_resume_sigsafe();
		__atomic_store_n(&sampler.active, 1, __ATOMIC_RELEASE);
	}
	errno = saved;
}

__attribute__((visibility("default"))) int
execve(const char *path, char *const argv[], char *const envp[])
{
	int (*fn)(const char *, char *const *, char *const *) =
		LIBC_NEXT(execve, "execve");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct quieted q = quiet_sigprof();
	int rc = fn(path, argv, envp);
	resume_sigprof(q);
	return rc;
}

__attribute__((visibility("default"))) int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	int (*fn)(const char *, char *const *, char *const *) =
		LIBC_NEXT(execvpe, "execvpe");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct quieted q = quiet_sigprof();
	int rc = fn(file, argv, envp);
	resume_sigprof(q);
	return rc;
}

__attribute__((visibility("default"))) int execv(const char *path,
						 char *const argv[])
{
	int (*fn)(const char *, char *const *) = LIBC_NEXT(execv, "execv");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct quieted q = quiet_sigprof();
	int rc = fn(path, argv);
	resume_sigprof(q);
	return rc;
}

__attribute__((visibility("default"))) int execvp(const char *file,
						  char *const argv[])
{
	int (*fn)(const char *, char *const *) = LIBC_NEXT(execvp, "execvp");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	struct quieted q = quiet_sigprof();
	int rc = fn(file, argv);
	resume_sigprof(q);
	return rc;
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	init_flush_before_exit();
	void (*fn)(int) = LIBC_NEXT(exit_, "_exit");
	if (fn)
		fn(status);
	syscall(SYS_exit_group, status);
	for (;;)
		;
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	init_flush_before_exit();
	void (*fn)(int) = LIBC_NEXT(Exit_, "_Exit");
	if (fn)
		fn(status);
	syscall(SYS_exit_group, status);
	for (;;)
		;
}
