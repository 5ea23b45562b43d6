/*
 * proc_fixture.h - a process session as the collector's tests make one
 * (collector/daemon/proc.h): its HELLO, and a file's functions each
 * defined as a one-frame stack on thread 1.
 *
 * Header only (static functions): include it in a test's one .c file.
 */
#ifndef PYPROF_TESTS_PROC_FIXTURE_H
#define PYPROF_TESTS_PROC_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "common/errbuf.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"

static inline struct proc_bytes fx_bytes(const char *s)
{
	return (struct proc_bytes){ (const uint8_t *)s, strlen(s) };
}

/* The HELLO of pid (CPython 3.12, /usr/bin/python3, started at a fixed
 * time plus pid ns, a 10 ms period) named comm with args[0..n_args). */
static inline struct proc_hello fx_hello(uint64_t pid, unsigned mode,
					 const char *comm,
					 const struct proc_bytes *args,
					 size_t n_args)
{
	struct proc_hello h = {
		.version = 1,
		.pid = pid,
		.start_unix_ns = 1700000000ull * 1000000000ull + pid,
		.has_start_unix = 1,
		.mode = mode,
		.period_ns = 10000000ull,
		.pyversion = fx_bytes("3.12.0"),
		.exe = fx_bytes("/usr/bin/python3"),
		.comm = fx_bytes(comm),
		.args = args,
		.n_args = n_args,
	};
	return h;
}

/* In session s of pid: string 1 the file, strings 2.. the names; for
 * each name i (1-based) function, location and node i (a stack of one
 * frame); thread 1 (tid pid). 0, or -1 if the session refused one. */
static inline int fx_functions(struct proc_session *s, uint64_t pid,
			       const char *file, const char *const *names,
			       size_t n)
{
	char err[ERR_LEN];
	int rc = proc_def_string(s, 1, (const uint8_t *)file, strlen(file),
				 err);

	for (size_t i = 1; i <= n; i++) {
		rc |= proc_def_string(s, i + 1, (const uint8_t *)names[i - 1],
				      strlen(names[i - 1]), err);
		rc |= proc_def_function(s, i, i + 1, i + 1, 1, 1, err);
		rc |= proc_def_location(s, i, i, i, err);
		rc |= proc_def_node(s, i, 0, i, err);
	}
	rc |= proc_def_thread(s, 1, pid, 0, err);
	return rc ? -1 : 0;
}

#endif /* PYPROF_TESTS_PROC_FIXTURE_H */
