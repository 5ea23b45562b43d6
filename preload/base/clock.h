/*
 * clock.h - the library's clocks in nanoseconds: the one place that turns
 * a struct timespec into a count.
 *
 * Contexts: every function here is async-signal-safe (clock_gettime is on
 * POSIX's list, and leaves errno alone when it succeeds) and runs on any
 * thread: the SIGPROF handler and the allocation hooks stamp samples with
 * mono_ns(), the agent thread paces itself with it, the constructor notes
 * the process's start with both clocks.
 */
#ifndef PYPROF_CLOCK_H
#define PYPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock c (CLOCK_MONOTONIC, a thread's or the process's CPU clock...) in
 * nanoseconds, or 0 if it cannot be read (a thread that has exited). */
static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds on CLOCK_MONOTONIC: the time base of every sample. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* Nanoseconds since the Unix epoch (CLOCK_REALTIME). */
static inline uint64_t unix_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

#endif /* PYPROF_CLOCK_H */
