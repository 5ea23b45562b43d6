/*
 * usage.h - the one wording of a usage error (an unknown or malformed
 * option, a missing or stray argument), shared by pyprof-collector and
 * every pyprof subcommand.
 *
 * One line through log.h, so with the program's prefix:
 *
 *   pyprof: error: --sort accepts flat or cum, not 'x' (see pyprof top --help)
 *   pyprof-collector: error: unknown option '--x' (see pyprof-collector --help)
 *
 * command is what the user types before --help to read about the mistake
 * ("pyprof-collector", "pyprof top"); the message says what was wrong,
 * naming the option, and what it accepts.
 *
 * Single-threaded, from a program's option parsing.
 */
#ifndef PYPROF_USAGE_H
#define PYPROF_USAGE_H

/* The exit status of a usage error in pyprof-collector and in the pyprof
 * subcommands that run no COMMAND (record keeps its own, cmd.h). */
#define USAGE_EXIT 2

/* Logs the usage error; returns USAGE_EXIT. */
int usage_error(const char *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* PYPROF_USAGE_H */
