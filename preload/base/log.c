/*
 * log.c - see log.h. Formats into a stack buffer and writes one line with
 * a single write(2), so lines from several threads do not interleave.
 * Saves and restores errno so that logging never changes what a caller
 * reports. Constructor and agent thread only.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int plog_level = PLOG_OFF;

static const char *const level_names[] = { "", "error", "warn", "info",
					   "debug" };

int plog_quiet;

static void emit(const char *prefix, const char *fmt, va_list ap)
{
	if (plog_quiet)
		return;
	char buf[1024];
	int saved = errno;
	int n = snprintf(buf, sizeof buf, "%s", prefix);
	if (n < 0)
		n = 0;
	if ((size_t)n < sizeof buf) {
		int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
		if (m > 0)
			n += m;
	}
	if ((size_t)n >= sizeof buf - 1)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
	(void)r;
	errno = saved;
}

void plog(int level, const char *fmt, ...)
{
	if (level > plog_level || level <= PLOG_OFF)
		return;
	char prefix[64];
	snprintf(prefix, sizeof prefix, "pyprof[%d:%ld] %s: ", (int)getpid(),
		 (long)syscall(SYS_gettid), level_names[level]);
	va_list ap;
	va_start(ap, fmt);
	emit(prefix, fmt, ap);
	va_end(ap);
}

void plog_always(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("pyprof: ", fmt, ap);
	va_end(ap);
}
