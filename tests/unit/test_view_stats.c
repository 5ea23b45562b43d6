/*
 * test_view_stats.c - the statistics of `pyprof top --intervals` and
 * `pyprof diff --test` (view_stats.c) against values from tables (R's
 * qnorm, qt, pt; Wilson's interval by hand), and Holm's correction on a
 * worked example.
 */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "views/view_stats.h"

static int near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

static void test_quantiles(void)
{
	CHECK(near(stats_z(0.95), 1.959964, 1e-5), "1.1 z(95%) is 1.96");
	CHECK(near(stats_z(0.99), 2.575829, 1e-5), "1.2 z(99%) is 2.576");
	CHECK(near(stats_p_normal(1.959964), 0.05, 1e-6), "1.3 p(1.96) 0.05");
	CHECK(near(stats_p_normal(-3), 0.0026998, 1e-6), "1.4 p(-3) two-sided");
	CHECK(near(stats_t(0.95, 1), 12.7062, 1e-3), "1.5 t(95%, 1 df)");
	CHECK(near(stats_t(0.95, 4), 2.776445, 1e-5), "1.6 t(95%, 4 df)");
	CHECK(near(stats_t(0.95, 30), 2.042272, 1e-5), "1.7 t(95%, 30 df)");
	CHECK(near(stats_t(0.95, 7.5), 2.335, 2e-3), "1.8 t(95%, 7.5 df)");
	CHECK(near(stats_p_t(2.0, 10), 0.07338803, 1e-6), "1.9 pt(2, 10)");
	CHECK(near(stats_p_t(0, 10), 1.0, 1e-12), "1.10 pt(0) is 1");
	CHECK(stats_p_t(INFINITY, 3) == 0, "1.11 pt(inf) is 0");
}

static void test_wilson(void)
{
	double lo, hi;

	/* p = 0.1, n = 1000: centre 0.101531, half-width 0.018621 */
	stats_wilson(0.1, 1000, 1.959964, &lo, &hi);
	CHECK(near(lo, 0.082909, 1e-5) && near(hi, 0.120152, 1e-5),
	      "2.1 Wilson 10% of 1000");
	stats_wilson(0, 100, 1.959964, &lo, &hi);
	CHECK(lo == 0 && near(hi, 0.036994, 1e-5),
	      "2.2 nothing seen in 100: up to 3.7%");
	stats_wilson(1, 100, 1.959964, &lo, &hi);
	CHECK(near(lo, 0.963006, 1e-5) && hi == 1, "2.3 all of 100");
	stats_wilson(0.5, 0, 1.96, &lo, &hi);
	CHECK(lo == 0 && hi == 1, "2.4 no sample: anything");
}

static void test_holm(void)
{
	/* 0.01 <= 0.05/4, 0.015 <= 0.05/3, 0.03 > 0.05/2: two rejected,
	 * though 0.04 alone would pass 0.05/1 (step-down stops). */
	double p[] = { 0.04, 0.01, 0.03, 0.015 };
	size_t order[4];
	int reject[4];

	CHECK(stats_holm(p, 4, 0.05, order, reject) == 2, "3.1 two rejected");
	CHECK(!reject[0] && reject[1] && !reject[2] && reject[3],
	      "3.2 the two smallest");
	CHECK(stats_holm(p, 1, 0.05, order, reject) == 1 && reject[0],
	      "3.3 one hypothesis: alpha itself");
	CHECK(stats_holm(p, 0, 0.05, order, reject) == 0, "3.4 none");
}

static void test_levels(void)
{
	double l = 0;

	CHECK(stats_parse_level("95", &l) == 0 && near(l, 0.95, 1e-12),
	      "4.1 a percentage");
	CHECK(stats_parse_level("0.99", &l) == 0 && near(l, 0.99, 1e-12),
	      "4.2 a fraction");
	CHECK(stats_parse_level("99.99", &l) == 0, "4.3 99.99%");
	CHECK(stats_parse_level("100", &l) < 0, "4.4 100% refused");
	CHECK(stats_parse_level("0.3", &l) < 0, "4.5 30% refused");
	CHECK(stats_parse_level("95x", &l) < 0, "4.6 junk refused");
	CHECK(stats_parse_level("", &l) < 0, "4.7 empty refused");
}

int main(void)
{
	test_quantiles();
	test_wilson();
	test_holm();
	test_levels();
	return check_summary();
}
