/*
 * arith.h - the small sums the collector's parts share: a saturating
 * add for counters that must stop at their top rather than wrap (the
 * aggregates' counts and values), and a sampling period in nanoseconds
 * as the rate a person reads (the profile's comments, the HTTP views,
 * the collector's log).
 *
 * Pure functions: any thread.
 */
#ifndef PYPROF_ARITH_H
#define PYPROF_ARITH_H

#include <stdint.h>

/* a + b, or UINT64_MAX if that overflows. */
static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Samples per second of a period of period_ns, rounded; 0 for 0. */
static inline uint64_t hz_of(uint64_t period_ns)
{
	return period_ns ? (1000000000u + period_ns / 2) / period_ns : 0;
}

#endif /* PYPROF_ARITH_H */
