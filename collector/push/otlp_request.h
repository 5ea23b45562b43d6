/*
 * otlp_request.h - the OTLP/HTTP request a window becomes for
 * `pyprof-collector --otlp URL` (push.h): POST URL/v1development/profiles,
 * Content-Type application/x-protobuf, the body otlp_from_pprof's
 * ExportProfilesServiceRequest (otlp.h).
 *
 * The push queue and spool keep a window as (path and query, gzipped
 * pprof) for every destination. For OTLP the "query" carries the
 * resource the request will describe, fixed when the window ended:
 *
 *   /v1development/profiles?s=SERVICE&p=PID&a=KEY%3DVALUE&a=...
 *
 * (percent-encoded; p absent for a merged window; one a= per
 * --push-label, host=<host name> among them, which becomes host.name).
 * The query is never sent: the request goes to OTLP_REQUEST_PATH, and the
 * body is converted from the pprof on each try, the same bytes each time
 * (otlp.h: the conversion is deterministic, profile ids included).
 *
 * Pure functions; any thread (the push thread converts).
 */
#ifndef PYPROF_OTLP_REQUEST_H
#define PYPROF_OTLP_REQUEST_H

#include <stddef.h>

#include "push/push_types.h"

#define OTLP_REQUEST_PATH "/v1development/profiles"
#define OTLP_REQUEST_CTYPE "application/x-protobuf"

/* The path and query for window w (malloc'd), or NULL (ENOMEM). */
char *otlp_request_query(const struct push_opts *opts,
			 const struct push_window *w);

/* The request body for a window spooled with query (as made above) and
 * the gzipped pprof pprof_gz[0..len): *out malloc'd, *out_len bytes.
 * 0, -EINVAL (a query or profile that cannot be read; a one-line reason
 * in err) or -ENOMEM. */
int otlp_request_body(const char *query, const void *pprof_gz, size_t len,
		      void **out, size_t *out_len, char *err, size_t err_len);

#endif /* PYPROF_OTLP_REQUEST_H */
