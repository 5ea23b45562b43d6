/*
 * otlp.h - a pprof profile turned into an OpenTelemetry profiles export
 * request (OTLP, opentelemetry-proto's profiles/v1development, the
 * version vendored under proto/): what `pyprof-collector --otlp URL`
 * sends for each window (push.h).
 *
 * The input is a window as the collector writes it (pprof.h: gzipped
 * profile.proto bytes); the output is one ExportProfilesServiceRequest
 * holding one ResourceProfiles (the resource attributes below), one
 * ScopeProfiles, one Profile per sample type of the input (the pprof's
 * default type first), sharing one dictionary. Samples keep their pprof
 * labels as attributes (pid, thread_id, thread_name under their semantic
 * convention names), trace_id/span_id as a Link; frames are typed
 * `cpython` (Python frames) or `native` (with an address); see
 * otlp_conv.h and docs/otlp.md. The same input gives the same bytes (a
 * retried window is sent identically). A plain (not gzipped) profile is
 * taken too.
 *
 * Runs on the collector's push thread; allocates what it returns.
 */
#ifndef PYPROF_PUSH_OTLP_H
#define PYPROF_PUSH_OTLP_H

#include <stddef.h>
#include <stdint.h>

/* The resource the profiles describe. Strings are borrowed for the
 * call; NULL or 0 leaves an attribute out. */
struct otlp_resource {
	const char *service_name;  /* service.name */
	int64_t pid;		   /* process.pid; 0 for a merged window */
	const char *host_name;	   /* host.name */
	const char *const *keys;   /* further attributes (--push-label), */
	const char *const *values; /* n_attrs of each */
	size_t n_attrs;
	const char *profile_kind; /* NULL, or "block" or "mutex": each
				     Profile's pyprof.profile.kind */
};

/* Converts the gzipped pprof profile pprof_gz[0..len) into a serialized,
 * uncompressed ExportProfilesServiceRequest. On success returns 0 and
 * *out is a malloc'd buffer of *out_len bytes that the caller frees. On
 * failure returns -EINVAL (the input is not a gzipped pprof profile; a
 * one-line reason in err[0..err_len)) or -ENOMEM. */
int otlp_from_pprof(const void *pprof_gz, size_t len,
		    const struct otlp_resource *res, void **out,
		    size_t *out_len, char *err, size_t err_len);

#endif /* PYPROF_PUSH_OTLP_H */
