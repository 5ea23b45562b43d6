/*
 * clock.h - the collector's clocks in nanoseconds, defined once: the wall
 * clock (CLOCK_REALTIME, for profile times and file names) and the
 * monotonic one (CLOCK_MONOTONIC, for time-outs and durations).
 *
 * Header only; any thread of either program.
 */
#ifndef PYPROF_COLLECTOR_CLOCK_H
#define PYPROF_COLLECTOR_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds since the Unix epoch. */
static inline uint64_t now_unix_ns(void)
{
	return clock_ns_of(CLOCK_REALTIME);
}

/* Nanoseconds on the monotonic clock (loop_now_ns's clock). */
static inline uint64_t now_mono_ns(void)
{
	return clock_ns_of(CLOCK_MONOTONIC);
}

#endif /* PYPROF_COLLECTOR_CLOCK_H */
