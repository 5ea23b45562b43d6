/*
 * forkpause.c - see forkpause.h. The fork() wrapper runs on the program's
 * forking thread; resume_pending on the main thread, with the GIL.
 */
#include "forkpause.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "sample/cpuclock.h"
#include "sample/heap.h"
#include "base/libc_next.h"
#include "base/log.h"
#include "base/sampler.h"
#include "sample/threadnames.h"
#include "sample/threads.h"
#include "signal/sig_heap.h"

static int (*add_pending)(int (*)(void *), void *);
static int enabled; /* 3.12+ with Py_AddPendingCall: pause around fork */

void forkpause_init(const struct pyabi *abi)
{
	if (abi && abi->fork_warns_of_threads)
		add_pending = (int (*)(int (*)(void *), void *))dlsym(
			RTLD_DEFAULT, "Py_AddPendingCall");
	enabled = add_pending != NULL;
}

/* Whether a fork now would be counted against our threads: the sampling
 * process's main thread, alone (with threads of its own the program is
 * warned rightly, and the agent must go on draining their samples: the
 * main thread may not reach a bytecode boundary for long, blocked in
 * waitpid), and a running interpreter (it runs the pending call). */
static int worth_pausing(void)
{
	if (!enabled)
		return 0;
	int pid = getpid();
	return pid == sampler.owner_pid && (int)syscall(SYS_gettid) == pid &&
	       threads_armed() <= 1 && sampler.is_initialized();
}

/* A thread of ours that has returned, and whose join has returned, is
 * still counted in /proc/self/stat for a moment: the kernel wakes the
 * joiner as the thread exits, before it leaves the thread group. Waits
 * until it has (at most 20 ms). */
static void wait_gone(int tid)
{
	int pid = getpid();
	for (int i = 0; i < 400; i++) {
		if (syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH)
			return;
		struct timespec d = { 0, 50000 };
		nanosleep(&d, NULL);
	}
}

/* The main thread, at its next bytecode boundary after the fork. */
static int resume_pending(void *arg)
{
	(void)arg;
	heap_enter();
	/* the CPU-clock thread first, from here: its counters closed with
	 * it (each in its table), and the agent would start it only at its
	 * first tick, 20 ms of the program's CPU unsampled after each fork;
	 * this thread waits for its own counter (1 ms at most) */
	if (threads_clock_thread())
		cpuclock_start();
	threads_await_counter();
	agent_resume();
	heap_leave();
	return 0;
}

pid_t forkpause_fork(void)
{
	pid_t (*real)(void) = LIBC_NEXT(fork, "fork");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	int paused = 0;
	if (worth_pausing()) {
		int ours[16];
		int n = threads_internal_list(ours, 16);
		heap_enter();
		paused = agent_pause();
		/* the CPU-clock sampler too (the agent, which starts and
		 * stops it, is gone); the agent starts it again, where the
		 * threads' accounts were left */
		if (paused && threads_clock_thread())
			cpuclock_pause();
		int names = threadnames_pause();
		heap_leave();
		for (int i = 0; i < n; i++)
			if (!threads_is_internal(ours[i]))
				wait_gone(ours[i]);
		plog_debug("fork: agent %s, names thread %s",
			   paused ? "paused" : "not running or busy",
			   names ? "ended" : "not running or busy");
	}
	if (!paused && enabled)
		plog_debug("fork: not paused (%d threads armed)", threads_armed());
	pid_t pid = real();
	if (pid != 0 && paused && add_pending(resume_pending, NULL) != 0) {
		heap_enter();
		agent_resume(); /* the queue is full: now, warning or not */
		heap_leave();
	}
	return pid;
}
