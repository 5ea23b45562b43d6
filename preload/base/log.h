/*
 * log.h - the library's own diagnostics, off unless PYPROF_LOG asks.
 *
 * A tiny writer that formats into a stack buffer and write(2)s one line to
 * stderr with a `pyprof[pid:tid]` prefix. Used from the constructor and the
 * agent thread, NEVER from a signal handler (it calls vsnprintf).
 *
 * plog_config_error() is the one message that is printed whatever the log
 * level: a bad PYPROF_* value, which leaves profiling off.
 */
#ifndef PYPROF_LOG_H
#define PYPROF_LOG_H

enum plog_level {
	PLOG_OFF = 0,
	PLOG_ERROR = 1,
	PLOG_WARN = 2,
	PLOG_INFO = 3,
	PLOG_DEBUG = 4
};

/* Set once by the constructor before any other thread exists. */
extern int plog_level;

/* Non-zero: nothing is written at all, plog_always included (a library
 * loaded by `pyprof attach` must not write on the program's stderr). */
extern int plog_quiet;

void plog(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One line on stderr, unconditionally, prefixed "pyprof: ". */
void plog_always(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define plog_error(...) plog(PLOG_ERROR, __VA_ARGS__)
#define plog_warn(...) plog(PLOG_WARN, __VA_ARGS__)
#define plog_info(...) plog(PLOG_INFO, __VA_ARGS__)
#define plog_debug(...) plog(PLOG_DEBUG, __VA_ARGS__)

#endif /* PYPROF_LOG_H */
