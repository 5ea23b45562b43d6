/*
 * xorshift.h - the one small random sequence of both programs: Marsaglia's
 * xorshift64 (shifts 13, 7, 17), for sampling decisions and jittered
 * periods, never for anything secret.
 *
 * Header only, no state of its own: each caller keeps its word (a thread's
 * own, or one thread's static). Async-signal-safe.
 */
#ifndef PYPROF_XORSHIFT_H
#define PYPROF_XORSHIFT_H

#include <stdint.h>

/* The next value of the sequence in *x (never 0 if *x was not 0). */
static inline uint64_t xorshift_next(uint64_t *x)
{
	uint64_t v = *x;
	v ^= v << 13;
	v ^= v >> 7;
	v ^= v << 17;
	return *x = v;
}

/* A wait around period, uniform in [period/2, 3*period/2): its mean is
 * the period, and samplers that jitter this way do not fall in step with
 * a program's own period. */
static inline uint64_t xorshift_jitter(uint64_t *x, uint64_t period)
{
	return period / 2 + xorshift_next(x) % (period ? period : 1);
}

#endif /* PYPROF_XORSHIFT_H */
