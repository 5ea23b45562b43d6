/*
 * usage.c - the one wording of a usage error (see usage.h).
 *
 * Single-threaded, from a program's option parsing.
 */
#include "common/usage.h"

#include <stdarg.h>
#include <stdio.h>

#include "common/log.h"

int usage_error(const char *command, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_error("%s (see %s --help)", msg, command);
	return USAGE_EXIT;
}
