/*
 * push_types.h - what the push modules share: the push options (struct
 * push_opts, filled by push_opts.c), the destinations, and a window's
 * description (struct push_window, made by output.c). Plain data, in a
 * header of its own so that the request builders (pyroscope.h,
 * otlp_request.h) and the HTTP client (push_http.h) need not include
 * push.h, which includes them.
 *
 * No code; any thread reads it.
 */
#ifndef PYPROF_PUSH_TYPES_H
#define PYPROF_PUSH_TYPES_H

#include <stddef.h>
#include <stdint.h>

#define PUSH_SPOOL_MAX_DEFAULT (256ull << 20)
#define PUSH_MAX_LABELS 32
#define PUSH_MAX_HEADERS 16

/* What the command line asks for (push_opts.c fills and checks it). */
struct push_opts {
	const char *pyroscope_url;		 /* http(s)://HOST[:PORT][/PATH], no
				      trailing '/'; NULL: no push there */
	const char *otlp_url;			 /* --otlp, the same form */
	const char *service_name;		 /* NULL: each window's process name */
	const char *label_keys[PUSH_MAX_LABELS]; /* --push-label, host */
	const char *label_values[PUSH_MAX_LABELS];
	size_t n_labels;
	const char *basic_user;		       /* --push-basic-auth; NULL: none */
	const char *password_file;	       /* else $PYPROF_PUSH_PASSWORD */
	const char *bearer_file;	       /* --push-bearer-token-file */
	const char *ca_file;		       /* --push-ca-file: the CAs HTTPS trusts;
				      NULL: the system's */
	const char *headers[PUSH_MAX_HEADERS]; /* "Name: value" */
	size_t n_headers;
	const char *spool_dir; /* NULL: the default (push_new) */
	uint64_t spool_max;    /* bytes */
};

/* Where windows go: each destination has its own push (thread, HTTP
 * client, spool subdirectory DEST_NAME under the spool directory, outage
 * state), so that one down does not hold up the other.
 *   PUSH_PYROSCOPE  POST URL/ingest (pyroscope.h), subdirectory pyroscope
 *   PUSH_OTLP       POST URL/v1development/profiles (otlp_request.h),
 *                   subdirectory otlp */
enum push_dest { PUSH_PYROSCOPE,
		 PUSH_OTLP };

/* What a window is: CPU or wall time, heap, or (PYPROF_WAITS) the block
 * or mutex profile beside them; PUSH_KINDS counts them. */
enum push_kind {
	PUSH_CPU,
	PUSH_WALL,
	PUSH_HEAP,
	PUSH_BLOCK,
	PUSH_MUTEX,
	PUSH_KINDS
};

/* One window as output.c describes it. Strings are borrowed for the
 * call. */
struct push_window {
	enum push_kind kind;
	const char *comm;	    /* the process name; NULL for a merged window */
	uint64_t pid;		    /* 0 for a merged window */
	uint64_t from_ns, until_ns; /* Unix time */
	unsigned rate_hz;	    /* the sampling rate; 0: not known */
};

#endif /* PYPROF_PUSH_TYPES_H */
