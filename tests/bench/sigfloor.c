/*
 * sigfloor.c - the floor under any signal-per-sample profiler on this
 * machine: a fixed busy loop, unsampled or with SIGPROF delivered to an
 * empty handler at a rate, and the CPU time the loop took.
 *
 * Usage: sigfloor none|perf|timer|wake HZ ITERATIONS
 *   perf:  a perf_event task-clock counter on the thread (user and kernel
 *          time, enabled once, an overflow signal per period: what the
 *          library's signal sources past the tick cost at the least);
 *   timer: a POSIX timer on the thread's CPU clock (SIGEV_THREAD_ID; at
 *          most one signal per kernel tick);
 *   wake:  no signal: a second thread that only wakes HZ times a second
 *          (clock_nanosleep to absolute times) and goes back to sleep,
 *          the least a sampler thread of ours costs at that rate (the
 *          library's past-the-tick source, which also reads clocks and
 *          stacks at each wake-up).
 * Prints "CPU_SECONDS SIGNALS": the process's user + system CPU for the
 * loop (getrusage: every thread, the waking one included), and the
 * signals the handler counted (wake-ups, in wake mode). Run by
 * tests/bench/run (section 12), which compares each against "none".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long n_signals;

static void on_prof(int sig)
{
	(void)sig;
	n_signals++;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int start_perf(uint64_t period)
{
	struct perf_event_attr at;
	memset(&at, 0, sizeof at);
	at.type = PERF_TYPE_SOFTWARE;
	at.size = sizeof at;
	at.config = PERF_COUNT_SW_TASK_CLOCK;
	at.sample_period = period;
	at.disabled = 1;
	at.exclude_hv = 1;
	at.wakeup_events = 1;
	int tid = (int)syscall(SYS_gettid);
	int fd = (int)syscall(SYS_perf_event_open, &at, tid, -1, -1, 0);
	if (fd < 0)
		return -1;
	struct f_owner_ex owner = {F_OWNER_TID, tid};
	if (fcntl(fd, F_SETFL, O_ASYNC) < 0 ||
	    fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -1;
	return 0;
}

static int start_timer(uint64_t period)
{
	struct sigevent sev;
	timer_t t;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev._sigev_un._tid = (int)syscall(SYS_gettid);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) < 0)
		return -1;
	struct itimerspec its = {
		{(time_t)(period / 1000000000u), (long)(period % 1000000000u)},
		{(time_t)(period / 1000000000u), (long)(period % 1000000000u)}};
	return timer_settime(t, 0, &its, NULL);
}

static uint64_t wake_period;

static void *wake_loop(void *arg)
{
	(void)arg;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (;;) {
		uint64_t ns = (uint64_t)t.tv_nsec + wake_period;
		t.tv_sec += (time_t)(ns / 1000000000u);
		t.tv_nsec = (long)(ns % 1000000000u);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		n_signals++;
	}
	return NULL;
}

static int start_wake(uint64_t period)
{
	pthread_t th;
	wake_period = period;
	return pthread_create(&th, NULL, wake_loop, NULL) ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: sigfloor none|perf|timer|wake HZ ITERATIONS\n");
		return 2;
	}
	long hz = atol(argv[2]);
	unsigned long n = strtoul(argv[3], NULL, 10);
	if (hz < 1 || hz > 100000) {
		fprintf(stderr, "sigfloor: HZ must be 1 to 100000\n");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	uint64_t period = 1000000000ull / (uint64_t)hz;
	int rc = 0;
	if (!strcmp(argv[1], "perf"))
		rc = start_perf(period);
	else if (!strcmp(argv[1], "timer"))
		rc = start_timer(period);
	else if (!strcmp(argv[1], "wake"))
		rc = start_wake(period);
	else if (strcmp(argv[1], "none")) {
		fprintf(stderr, "sigfloor: mode must be none, perf, timer or wake\n");
		return 2;
	}
	if (rc < 0) {
		perror("sigfloor: cannot start the signal source");
		return 1;
	}
	double c0 = cpu_seconds();
	volatile uint64_t x = 1;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	double c1 = cpu_seconds();
	printf("%.6f %lu\n", c1 - c0, n_signals);
	return 0;
}
