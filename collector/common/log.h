/*
 * log.h - the collector's log lines, on stderr.
 *
 * Every line is "<prefix>: [<level>: ]<message>\n" written with one write(2),
 * so lines from concurrent processes (pyprof and its private collector) do
 * not interleave mid-line. The prefix defaults to "pyprof-collector"; the
 * pyprof command may set its own. info lines carry no level word, the others
 * say "error:", "warning:" or "debug:".
 *
 * Single-threaded use (the collector's one thread). Not for signal handlers.
 */
#ifndef PYPROF_LOG_H
#define PYPROF_LOG_H

#include <stddef.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3
};

/* Lines at a level above this one are dropped. Default LOG_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Parses "error", "warn" (or "warning"), "info", "debug" into *level.
 * Returns 0, or -EINVAL for anything else (and leaves *level alone). */
int log_parse_level(const char *s, enum log_level *level);

/* Sets the prefix (the program name). The string must outlive its use;
 * pass a literal. */
void log_set_prefix(const char *prefix);

/* One line at the given level; the message needs no trailing newline. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Non-zero if a log_debug line would be printed: lets callers skip work
 * that only feeds a debug line. */
int log_debug_enabled(void);

/* Copies at most len bytes of s into buf (size n > 0, always
 * NUL-terminated), replacing control characters with '?', so that names a
 * client sent cannot forge log lines. Returns buf. */
const char *log_printable(char *buf, size_t n, const char *s, size_t len);

#endif /* PYPROF_LOG_H */
