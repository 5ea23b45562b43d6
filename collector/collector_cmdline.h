/*
 * collector_cmdline.h - pyprof-collector's command line, parsed
 * (collector_cmdline.c), for main_collector.c: what it asks for and the
 * exit status of a usage error.
 *
 * Main thread only, before the collector starts.
 */
#ifndef PYPROF_COLLECTOR_CMDLINE_H
#define PYPROF_COLLECTOR_CMDLINE_H

#include <sys/types.h>

#include "common/log.h"
#include "daemon/collector_opts.h"
#include "push/push_opts.h"

#define DEFAULT_OUTPUT_DIR "profiles"
#define DEFAULT_HOLD_MAX (64ull << 20)
#define MAX_ALLOW_USERS 64

/* What the command line asks for: the collector's options, the users
 * they point to, and the log level. */
struct cmdline {
	struct collector_opts opts;
	struct push_opts push;
	int spool_max_given;
	uid_t allow[MAX_ALLOW_USERS];
	gid_t allow_g[MAX_ALLOW_USERS];
	enum log_level level;
	int level_set;
};

/* Fills c from argv (and --config FILE): c's defaults (ready_fd -1,
 * hold_max, spool_max, level) set by the caller before, its strings
 * pointing into argv or into copies that live as long as the process
 * (c->push is freed with push_opts_free). Returns -1 to go on, else the
 * exit status: 0 after --help or --version (printed on stdout), 2 after
 * a usage error (said on stderr). */
int cmdline_parse(struct cmdline *c, int argc, char **argv);

#endif
