/*
 * view_stats.h - the statistics behind `pyprof top --intervals` and
 * `pyprof diff --test`: intervals for a share of samples, the normal and
 * Student t distributions, and Holm's correction for testing many
 * functions at once. Why these and not others: docs/reading.md,
 * "Intervals and tested diffs".
 *
 * Pure functions of their arguments; no allocation, no state.
 */
#ifndef PYPROF_VIEW_STATS_H
#define PYPROF_VIEW_STATS_H

#include <stddef.h>

/* The confidence level when none is given. */
#define STATS_DEFAULT_LEVEL 0.95

/* Parses a confidence level: a fraction (0.95) or a percentage (95),
 * from 50% to 99.99%. 0 with *level a fraction, or -1. */
int stats_parse_level(const char *s, double *level);

/* z such that a standard normal variable is within +-z with probability
 * level (1.96 for 0.95). */
double stats_z(double level);
/* The probability that a standard normal variable is at least |z| away
 * from 0 (two-sided p-value). */
double stats_p_normal(double z);
/* The same for Student's t with df degrees of freedom (df > 0, real:
 * Welch's df are not whole numbers). */
double stats_p_t(double t, double df);
/* t such that Student's t with df degrees of freedom is within +-t with
 * probability level. */
double stats_t(double level, double df);

/* Wilson's score interval for a share p of n independent samples, at the
 * level whose normal quantile is z: [*lo, *hi], within [0, 1]. Unlike p
 * +- z sqrt(p(1-p)/n) it does not shrink to nothing at p = 0 or 1 (a
 * function seen in no sample may still have a small share). n <= 0 gives
 * [0, 1]. */
void stats_wilson(double p, double n, double z, double *lo, double *hi);

/* Holm's step-down correction: of the n hypotheses with p-values p, which
 * are rejected with a family-wise error rate of at most alpha (reject[i]
 * 1 or 0). order is scratch space for n indexes. Returns how many were
 * rejected. */
size_t stats_holm(const double *p, size_t n, double alpha, size_t *order,
		  int *reject);

#endif /* PYPROF_VIEW_STATS_H */
