/*
 * pyroscope.h - Grafana Pyroscope's HTTP ingest API (POST /ingest), as
 * its server (pkg/ingester/pyroscope/ingest_handler.go, labelset.Parse,
 * pkg/og/convert/pprof/profile.go) and Grafana Alloy's
 * pyroscope.receive_http read it: the request a window becomes.
 *
 *   POST /ingest?name=SERVICE{k=v,...}&from=UNIX&until=UNIX&format=pprof
 *               &sampleRate=HZ&spyName=pyprof
 *   Content-Type: application/octet-stream
 *   body: the window's pprof profile (gzipped; the server takes either)
 *
 * What the server does with it. With format=pprof, `name` is parsed as a
 * label set: the part before '{' is the service_name label verbatim
 * (characters [A-Za-z0-9_.-/]), the pairs inside are series labels (names
 * [A-Za-z0-9_.], values without ',' or '}'). The profile type is not in
 * the name: the server derives it from the profile's sample types (a
 * sample type "wall": wall; one containing "cpu": process_cpu;
 * alloc_*, inuse_*: memory, all four of a heap profile from one
 * request). Appending ".cpu" to the name, as the API's older non-pprof
 * formats want, would make the service "SERVICE.cpu"; so it is not done.
 * units and aggregationType only matter to those older formats and are
 * not sent. from/until default to "now" on the server, so both are
 * always sent.
 *
 * Block and mutex windows (PYPROF_WAITS) have Go's sample types
 * contentions/count and delay/nanoseconds, which the server cannot tell
 * apart by themselves. They go as the Go SDK sends runtime/pprof's block
 * and mutex profiles: a multipart/form-data body with the profile in the
 * field "profile" and a field "sample_type_config" giving each type the
 * SDK's display name (block_count and block_duration, or mutex_count and
 * mutex_duration) and units (lock_samples, lock_nanoseconds); the server
 * names the series' type by them (block, mutex).
 *
 * Pure functions of their arguments; any thread.
 */
#ifndef PYPROF_PYROSCOPE_H
#define PYPROF_PYROSCOPE_H

#include <stddef.h>

#include "push/push_types.h"

/* The path and query of the request for w ("/ingest?..."), malloc'd; NULL
 * (ENOMEM). The service is push_service_name's. */
char *pyroscope_query(const struct push_opts *opts,
		      const struct push_window *w);

/* For a block or mutex window (kind), the request body: the gzipped
 * pprof data[0..len) as a multipart form (see the top), malloc'd in
 * *out, *out_len. Other kinds are sent as they are: -EINVAL. 0, or
 * -ENOMEM. */
int pyroscope_form(enum push_kind kind, const void *data, size_t len,
		   void **out, size_t *out_len);

/* The Content-Type of a request body made for Pyroscope: a body that
 * pyroscope_form made says its boundary (it begins with it); any other
 * is the profile itself, application/octet-stream. Writes at most cap
 * bytes to buf and returns buf. */
const char *pyroscope_content_type(const void *body, size_t len, char *buf,
				   size_t cap);

/* The service a window belongs to (for every destination):
 * opts->service_name, else pyroscope_service(w->comm), else (a merged
 * window of processes of several names) "pyprof". */
void push_service_name(const struct push_opts *opts,
		       const struct push_window *w, char *out, size_t cap);

/* Appends s at *p percent-encoded (RFC 3986: all but the unreserved
 * characters), advancing *p; room for 3 * strlen(s) is the caller's. */
void push_escape(char **p, const char *s);

/* comm as a service name: characters the server refuses become '_';
 * "python" when nothing is left. */
void pyroscope_service(const char *comm, char *out, size_t cap);

/* Whether s may be a service name, a series label's name, a series
 * label's value (as labelset.Parse reads them). */
int pyroscope_valid_service(const char *s);
int pyroscope_valid_label_name(const char *s);
int pyroscope_valid_label_value(const char *s);

#endif /* PYPROF_PYROSCOPE_H */
