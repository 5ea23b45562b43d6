/*
 * defaults.h - defaults that the library, the collector and the pyprof
 * command must agree on: where the socket lives by default.
 *
 * Used from constructors and main(), never from a signal handler.
 */
#ifndef PYPROF_DEFAULTS_H
#define PYPROF_DEFAULTS_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define PYPROF_DEFAULT_HZ 100
#define PYPROF_DEFAULT_MAX_DEPTH 1024
/* PYPROF_WAITS=1 / record --waits: the block and mutex profiles' rate in
 * ns (docs/waits.md says why this one) */
#define PYPROF_DEFAULT_WAITS_NS 10000
#define PYPROF_MAX_HZ 10000
#define PYPROF_MAX_MAX_DEPTH 4096

/*
 * The default socket: $XDG_RUNTIME_DIR/pyprof/collector.sock when that
 * directory is set (it is per user and private), else
 * /tmp/pyprof-<uid>/collector.sock. The directory is created owner-only by
 * the collector. Writes at most n bytes to buf (NUL-terminated); returns 0,
 * or -1 if the path did not fit.
 */
static inline int pyprof_default_socket(char *buf, size_t n)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int len;
	if (xdg && xdg[0] == '/')
		len = snprintf(buf, n, "%s/pyprof/collector.sock", xdg);
	else
		len = snprintf(buf, n, "/tmp/pyprof-%u/collector.sock",
			       (unsigned)getuid());
	return (len < 0 || (size_t)len >= n) ? -1 : 0;
}

#endif /* PYPROF_DEFAULTS_H */
