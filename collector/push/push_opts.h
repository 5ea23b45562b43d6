/*
 * push_opts.h - reading pyprof-collector's push options into struct
 * push_opts (push.h): --pyroscope, --otlp, --service-name, --push-label,
 * --push-basic-auth, --push-password-file, --push-bearer-token-file,
 * --push-header, --spool-dir (--spool-max is a size, read by
 * main_collector.c like --hold-max).
 *
 * Values are borrowed from argv (the URLs and label names are copied:
 * push_opts_free frees them). Errors are one line naming the option
 * and what it accepts, for usage_error.
 *
 * Single-threaded, from the option parsing.
 */
#ifndef PYPROF_PUSH_OPTS_H
#define PYPROF_PUSH_OPTS_H

#include <stddef.h>

#include "push/push_types.h"

/* Sets the option called name (its long name without "--") to arg. 0, or
 * -1 with the message in err. */
int push_opts_set(struct push_opts *o, const char *name, const char *arg,
		  char *err, size_t cap);

/* After every option: refuses push options without --pyroscope or --otlp
 * (and
 * --spool-max, when spool_max_given), basic authentication without a
 * password source, both kinds of authentication at once; adds the label
 * host=<host name> unless one was given. 0, or -1 with err. */
int push_opts_check(struct push_opts *o, int spool_max_given, char *err,
		    size_t cap);

/* Frees what push_opts_set and push_opts_check copied. */
void push_opts_free(struct push_opts *o);

#endif /* PYPROF_PUSH_OPTS_H */
