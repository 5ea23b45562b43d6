/*
 * view_stats.c - intervals, p-values and Holm's correction (view_stats.h).
 *
 * The distributions are computed from the C library's erfc and lgamma:
 * Student's t through the regularized incomplete beta function, by its
 * continued fraction (Lentz's method), and quantiles by bisection on the
 * p-value, which is monotone; 200 halvings reach a double's precision
 * from any start, and the views ask for a few hundred quantiles at most.
 */
#include "views/view_stats.h"

#include <math.h>
#include <stdlib.h>

#define STATS_CF_ITER 300
#define STATS_EPS 1e-15
#define STATS_TINY 1e-300

int stats_parse_level(const char *s, double *level)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !isfinite(v))
		return -1;
	if (v >= 1)
		v /= 100; /* a percentage */
	if (!(v >= 0.5 && v <= 0.9999))
		return -1;
	*level = v;
	return 0;
}

double stats_p_normal(double z)
{
	return erfc(fabs(z) / sqrt(2.0));
}

/* The continued fraction of the incomplete beta function I_x(a, b), good
 * for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	if (fabs(d) < STATS_TINY)
		d = STATS_TINY;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= STATS_CF_ITER; m++) {
		double m2 = 2.0 * m, step[2];
		step[0] = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		step[1] = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		for (int k = 0; k < 2; k++) {
			d = 1 + step[k] * d;
			c = 1 + step[k] / c;
			if (fabs(d) < STATS_TINY)
				d = STATS_TINY;
			if (fabs(c) < STATS_TINY)
				c = STATS_TINY;
			d = 1 / d;
			h *= d * c;
			if (k == 1 && fabs(d * c - 1) < STATS_EPS)
				return h;
		}
	}
	return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double inc_beta(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) +
		    b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double stats_p_t(double t, double df)
{
	if (!isfinite(t))
		return 0;
	return inc_beta(df / 2, 0.5, df / (df + t * t));
}

/* The x > 0 where the decreasing p(x) equals alpha, by bisection. */
static double solve(double alpha, double df, int normal)
{
	double lo = 0, hi = 1;

	while ((normal ? stats_p_normal(hi) : stats_p_t(hi, df)) > alpha &&
	       hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		double p = normal ? stats_p_normal(mid) : stats_p_t(mid, df);
		if (p > alpha)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

double stats_z(double level)
{
	return solve(1 - level, 0, 1);
}

double stats_t(double level, double df)
{
	return solve(1 - level, df, 0);
}

void stats_wilson(double p, double n, double z, double *lo, double *hi)
{
	double z2 = z * z, mid, half;

	if (n <= 0) {
		*lo = 0;
		*hi = 1;
		return;
	}
	p = p < 0 ? 0 : p > 1 ? 1
			      : p;
	mid = (p + z2 / (2 * n)) / (1 + z2 / n);
	half = z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
	*lo = mid - half < 0 ? 0 : mid - half;
	*hi = mid + half > 1 ? 1 : mid + half;
}

static const double *holm_p;

static int cmp_p(const void *a, const void *b)
{
	double x = holm_p[*(const size_t *)a], y = holm_p[*(const size_t *)b];
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	if (x != y)
		return x < y ? -1 : 1;
	return i < j ? -1 : i > j;
}

size_t stats_holm(const double *p, size_t n, double alpha, size_t *order,
		  int *reject)
{
	size_t k;

	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		reject[i] = 0;
	}
	holm_p = p;
	qsort(order, n, sizeof(*order), cmp_p);
	holm_p = NULL;
	/* The smallest p-value against alpha/n, the next against
	 * alpha/(n-1)...; the first that fails stops the procedure. */
	for (k = 0; k < n; k++) {
		if (!(p[order[k]] <= alpha / (double)(n - k)))
			break;
		reject[order[k]] = 1;
	}
	return k;
}
