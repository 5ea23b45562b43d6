/*
 * config.h - the library's settings, read once from PYPROF_* variables.
 *
 * Parsed by the constructor (init.c) before anything else runs; read-only
 * afterwards, so every thread and the signal handler may read it freely.
 */
#ifndef PYPROF_CONFIG_H
#define PYPROF_CONFIG_H

#include <sys/un.h>

enum config_mode { CONFIG_MODE_CPU = 0, CONFIG_MODE_WALL = 1 };

struct config {
	int disabled;     /* PYPROF_DISABLE set: stay inert               */
	int hz;           /* PYPROF_HZ, 1..PYPROF_MAX_HZ                  */
	int mode;         /* PYPROF_MODE, enum config_mode                */
	int max_depth;    /* PYPROF_MAX_DEPTH, 1..PYPROF_MAX_MAX_DEPTH    */
	int log_level;    /* PYPROF_LOG, enum plog_level                  */
	char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/*
 * Fills *c from the environment. Returns 0, or -EINVAL after printing one
 * line on stderr naming the bad variable and what it accepts (the caller
 * then stays inert). Constructor only: uses getenv.
 */
int config_load(struct config *c);

/* Parses a decimal integer in [lo, hi]; 0 or -EINVAL. Exposed for tests. */
int config_parse_int(const char *s, long lo, long hi, long *out);

#endif /* PYPROF_CONFIG_H */
