/*
 * perfctr.c - one thread's task-clock counter: opened, probed, named and
 * closed; see perfctr.h. Which thread has which counter, and when, is
 * threads.c's.
 */
#include "perfctr.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "base/libc_next.h"
#include "signal/sig_handler.h"

int perfctr_open(int tid, uint64_t period, uint64_t first, int private_)
{
	struct perf_event_attr at;
	memset(&at, 0, sizeof at);
	at.type = PERF_TYPE_SOFTWARE;
	at.size = sizeof at;
	at.config = PERF_COUNT_SW_TASK_CLOCK;
	at.sample_period = first;
	at.disabled = 1;
	at.exclude_hv = 1;
	at.wakeup_events = 1;
	/* User time only. A counter that overflows while its thread runs in
	 * the kernel queues SIGPROF there: when another signal has just woken
	 * the thread from a blocking call, SIGPROF (thread-directed) is taken
	 * first, and its SA_RESTART restarts the call that the other signal,
	 * installed without SA_RESTART (siginterrupt), was to interrupt: the
	 * program then blocks for ever (CPython's test_signal did). An
	 * overflow in user mode is taken at once, never at a system call's
	 * end. The cost: time in the kernel is not sampled past the tick, as
	 * where perf_event_paranoid forbids counting it anyway. */
	at.exclude_kernel = 1;
	int fd = (int)syscall(SYS_perf_event_open, &at, tid, -1, -1,
			      PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* (the CPU-clock thread's own table needs no parking: no number
	 * there is the program's) */
	if (!private_)
		fd = fd_park(fd);
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	if (fd >= PERF_FD_MAX || fcntl(fd, F_SETFL, O_ASYNC) < 0 ||
	    fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0) {
		int e = fd >= PERF_FD_MAX ? EMFILE : errno;
		close(fd);
		return -e;
	}
	sig_handler_perf_fd_mark(fd);
	sig_handler_perf_private_mark(fd, private_);
	if (first != period)
		sig_handler_perf_phase_mark(fd);
	/* (a new counter counts from zero: no PERF_EVENT_IOC_RESET) */
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *,
				 void *(*)(void *), void *);

int perfctr_probe(void)
{
	struct perf_event_attr at;
	memset(&at, 0, sizeof at);
	at.type = PERF_TYPE_SOFTWARE;
	at.size = sizeof at;
	at.config = PERF_COUNT_SW_TASK_CLOCK;
	at.disabled = 1;
	at.exclude_kernel = 1;
	at.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &at, 0, -1, -1,
			      PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno ? errno : EPERM;
	close(fd);
	return 0;
}

/* perf_probe in a thread of its own with a descriptor table of its own
 * (fd_table_private): the probe's counter takes no number of the
 * program's, even for a moment (a program listing its descriptors as
 * it starts saw one: CPython's test_pass_fds). Returns what perf_probe
 * does, or -1 where no table of its own can be had. */
static void *probe_main(void *arg)
{
	int *e = arg;
	*e = fd_table_private() == 0 ? perfctr_probe() : -1;
	return NULL;
}

int perfctr_probe_private(void)
{
	pthread_create_fn real = LIBC_NEXT(pthread_create, "pthread_create");
	pthread_t t;
	int e = -1;

	if (!fd_table_private_possible() || !real ||
	    real(&t, NULL, probe_main, &e) != 0)
		return -1;
	pthread_join(t, NULL);
	return e;
}

/* The event id the kernel gave the counter: what tells ours from any
 * other counter at that number (all share one anonymous inode). */
uint64_t perfctr_id(int fd)
{
	uint64_t id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return 0;
	return id;
}

void perfctr_close_sigsafe(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	close(fd);
}
