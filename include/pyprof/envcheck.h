/*
 * envcheck.h - the library's check of its PYPROF_* variables, for the
 * programs: `pyprof record` checks what its command will get with the
 * library's own rules and messages before starting anything.
 *
 * Defined in preload/config.c (beside config_check, which it calls),
 * which the programs' build compiles in too; the programs include only
 * this header, never the library's own (the folders' layers,
 * tools/layers).
 */
#ifndef PYPROF_ENVCHECK_H
#define PYPROF_ENVCHECK_H

#include <stddef.h>

/* Checks the variables get(name, arg) returns (NULL: not set) as the
 * library's constructor would. 0, or -EINVAL with one line in err (no
 * newline; cut to err_len) naming the first bad variable, its value and
 * what it accepts. Pure. */
int config_validate(const char *(*get)(const char *name, void *arg),
		    void *arg, char *err, size_t err_len);

/* The same check, then the user PYPROF_COLLECTOR_USER trusts besides our
 * own and root (-1: none) in *uid (`pyprof ctl` checks a listener as the
 * library does). 0, or -EINVAL with one line in err. */
int config_collector_user(const char *(*get)(const char *name, void *arg),
			  void *arg, long *uid, char *err, size_t err_len);

/* A block and mutex profiles' rate as PYPROF_WAITS takes it: on words
 * (1, true, yes, on) give the default, off words (0, false, no, off,
 * empty) 0, else a duration with its unit (ns, us, ms) from 1 ns to 1 s
 * such as 100us. 0 and *ns, or -EINVAL. */
int config_waits_rate(const char *s, unsigned long long *ns);

#endif /* PYPROF_ENVCHECK_H */
