/*
 * check.h - the unit tests' whole test framework: a CHECK macro, two
 * counters and a summary.
 *
 * Include it in exactly one .c file per test binary (it defines static
 * state). Write CHECK(expr, "what was expected") for each assertion; a
 * failing check prints its file, line and message and the test carries on,
 * so one run reports every failure. End main() with `return check_summary();`
 * which prints `check: N passed, N failed` and returns non-zero if any check
 * failed. Numbering the messages ("3.1 ...") makes a failure point at one
 * case (docs/conventions.md, "Tests").
 */
#ifndef PYPROF_CHECK_H
#define PYPROF_CHECK_H

#include <stdio.h>

static unsigned check_n_passed;
static unsigned check_n_failed;

#define CHECK(expr, what)                                                  \
	do {                                                               \
		if (expr) {                                                \
			check_n_passed++;                                  \
		} else {                                                   \
			check_n_failed++;                                  \
			fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, \
				__LINE__, (what), #expr);                  \
		}                                                          \
	} while (0)

/* Like CHECK, but also returns ret from the calling function when the
 * check fails, for checks that later ones depend on. Leave ret empty in a
 * void function: CHECK_OR_RETURN(p != NULL, "made p", ); */
#define CHECK_OR_RETURN(expr, what, ret)                 \
	do {                                             \
		unsigned check_before_ = check_n_failed; \
		CHECK(expr, what);                       \
		if (check_n_failed != check_before_)     \
			return ret;                      \
	} while (0)

static inline int check_summary(void)
{
	printf("check: %u passed, %u failed\n", check_n_passed,
	       check_n_failed);
	return check_n_failed ? 1 : 0;
}

#endif /* PYPROF_CHECK_H */
