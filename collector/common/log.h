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
#include <stdint.h>

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

/* A rate limit on the lines about one party (the collector: one client
 * user), so that it cannot flood the log: a burst of LOG_BUDGET_BURST
 * lines, then LOG_BUDGET_PER_S a second. Lines past it are counted, and
 * one line says how many when the next may go out (or at
 * log_budget_report). Zeroed memory is a full budget; who names the
 * party in the summary line. */
#define LOG_BUDGET_BURST 100
#define LOG_BUDGET_PER_S 10
struct log_budget {
	uint64_t refill_ns;    /* CLOCK_MONOTONIC of the last refill; 0: new */
	uint64_t tokens_milli; /* lines that may go out, in thousandths */
	uint64_t suppressed;   /* lines dropped since the last summary */
	char who[48];	       /* "uid 1000" */
};

/* Charges every line logged from now on (at a level that is printed) to
 * b, until called again; NULL charges none. Returns the previous one, for
 * the caller to put back. */
struct log_budget *log_charge(struct log_budget *b);
/* If b dropped lines and may log again, says how many (one line). */
void log_budget_report(struct log_budget *b);

/* Copies at most len bytes of s into buf (size n > 0, always
 * NUL-terminated), replacing control characters (C0, DEL, and C1 in
 * UTF-8) and bidirectional overrides with '?', so that names a client
 * sent cannot forge log lines or act on a terminal. Returns buf. */
const char *log_printable(char *buf, size_t n, const char *s, size_t len);

#endif /* PYPROF_LOG_H */
