/*
 * log.c - the collector's log lines (see log.h).
 *
 * Each line is formatted into a stack buffer and written with one write(2)
 * to stderr; a line longer than the buffer is cut and ends in "...". Called
 * from the collector's single thread only.
 */
#include "common/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static enum log_level log_level = LOG_INFO;
static const char *log_prefix = "pyprof-collector";

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

int log_parse_level(const char *s, enum log_level *level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_ERROR },
		{ "warn", LOG_WARN },
		{ "warning", LOG_WARN },
		{ "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i].name) == 0) {
			*level = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

void log_set_prefix(const char *prefix)
{
	log_prefix = prefix;
}

int log_debug_enabled(void)
{
	return log_level >= LOG_DEBUG;
}

static void log_line(enum log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static struct log_budget *charged;

struct log_budget *log_charge(struct log_budget *b)
{
	struct log_budget *old = charged;
	charged = b;
	return old;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void refill(struct log_budget *b)
{
	uint64_t now = mono_ns(), full = LOG_BUDGET_BURST * 1000ull;
	if (!b->refill_ns) {
		b->tokens_milli = full;
	} else {
		uint64_t add = (now - b->refill_ns) / 1000000u *
			       LOG_BUDGET_PER_S; /* ms x lines/s = milli */
		b->tokens_milli = b->tokens_milli + add > full
					  ? full
					  : b->tokens_milli + add;
	}
	b->refill_ns = now;
}

static void say_suppressed(struct log_budget *b)
{
	struct log_budget *was = log_charge(NULL);
	uint64_t n = b->suppressed;
	b->suppressed = 0;
	log_warn("%s: %" PRIu64 " log line%s about its clients suppressed "
		 "(at most %d a second after a burst of %d)",
		 b->who, n,
		 n == 1 ? "" : "s", LOG_BUDGET_PER_S, LOG_BUDGET_BURST);
	log_charge(was);
}

/* Whether a line charged to b may go out now; else counts it. */
static int budget_take(struct log_budget *b)
{
	refill(b);
	if (b->tokens_milli < 1000) {
		b->suppressed++;
		return 0;
	}
	b->tokens_milli -= 1000;
	if (b->suppressed)
		say_suppressed(b);
	return 1;
}

void log_budget_report(struct log_budget *b)
{
	if (!b->suppressed)
		return;
	refill(b);
	if (b->tokens_milli >= 1000)
		say_suppressed(b);
}

static void log_line(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const words[] = { "error: ", "warning: ", "",
					     "debug: " };
	char buf[LOG_LINE_MAX];
	int saved = errno; /* callers often log, then look at errno */
	int n, m;
	size_t len;

	if (level > log_level)
		return;
	if (charged && !budget_take(charged))
		goto out;
	n = snprintf(buf, sizeof(buf), "%s: %s", log_prefix, words[level]);
	if (n < 0)
		goto out;
	len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	m = vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
	if (m < 0)
		goto out;
	if ((size_t)m >= sizeof(buf) - len) {
		/* Cut: keep room for "...\n". */
		len = sizeof(buf) - 5;
		memcpy(buf + len, "...", 3);
		len += 3;
	} else {
		len += (size_t)m;
	}
	buf[len++] = '\n';
	/* One write per line; a short write to stderr is not worth a retry
	 * loop that could block the event loop. */
	if (write(STDERR_FILENO, buf, len) < 0) {
		/* nothing sensible to do */
	}
out:
	errno = saved;
}

/* Bytes of a character a terminal acts on at u (left: bytes available),
 * or 0: C1 controls in UTF-8 (U+0080..U+009F; U+009B is a CSI) and the
 * bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069),
 * which make a line read other than it is stored. */
static size_t acted_on(const unsigned char *u, size_t left)
{
	if (left >= 2 && u[0] == 0xc2 && u[1] >= 0x80 && u[1] < 0xa0)
		return 2;
	if (left >= 3 && u[0] == 0xe2 &&
	    ((u[1] == 0x80 && u[2] >= 0xaa && u[2] <= 0xae) ||
	     (u[1] == 0x81 && u[2] >= 0xa6 && u[2] <= 0xa9)))
		return 3;
	return 0;
}

const char *log_printable(char *buf, size_t n, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0;
	while (i < len && o + 1 < n && s[i]) {
		size_t k = acted_on(u + i, len - i);
		if (k || u[i] < 0x20 || u[i] == 0x7f) {
			buf[o++] = '?';
			i += k ? k : 1;
		} else {
			buf[o++] = s[i++];
		}
	}
	buf[o] = 0;
	return buf;
}

#define LOG_DEFINE(fn, level)             \
	void fn(const char *fmt, ...)     \
	{                                 \
		va_list ap;               \
		va_start(ap, fmt);        \
		log_line(level, fmt, ap); \
		va_end(ap);               \
	}

LOG_DEFINE(log_error, LOG_ERROR)
LOG_DEFINE(log_warn, LOG_WARN)
LOG_DEFINE(log_info, LOG_INFO)
LOG_DEFINE(log_debug, LOG_DEBUG)
