/*
 * push_http.h - one HTTP POST through libcurl, for the push thread
 * (push.h): the connection kept alive between requests, the
 * authentication and headers the command line gave, and what the answer
 * means for the window.
 *
 * Time limits: PUSH_HTTP_CONNECT_S to connect, PUSH_HTTP_TIMEOUT_S for a
 * whole request; a request may also be cut short by the abort callback
 * (the collector is exiting). libcurl is initialised once, by
 * push_http_new, on the loop thread before the push thread starts.
 *
 * Push thread only (one handle, one thread).
 */
#ifndef PYPROF_PUSH_HTTP_H
#define PYPROF_PUSH_HTTP_H

#include <stddef.h>

#include "push/push_types.h"

#define PUSH_HTTP_CONNECT_S 10
#define PUSH_HTTP_TIMEOUT_S 30
#define PUSH_HTTP_RETRY_AFTER_MAX 600

/* What a request came to. */
enum push_result {
	PUSH_SENT,    /* 2xx */
	PUSH_RETRY,   /* no answer, a time-out, 3xx, 408, 429 or 5xx: try
			  again (a redirect is not followed: it is a
			  server or URL to fix, and the window waits) */
	PUSH_REFUSED, /* any other answer: do not send it again */
	PUSH_INVALID  /* never sent: the request cannot be made here (a
			  URL libcurl refuses, a window OTLP cannot take);
			  no server saw it, and no retry would help */
};

struct push_http;

/* A client for url (no trailing '/'), with opts' authentication and
 * headers; password and token (may be NULL) are the secrets read at
 * start. abort (may be NULL) is called while a request runs: non-zero
 * cuts it short (PUSH_RETRY). NULL after logging why. */
struct push_http *push_http_new(const struct push_opts *opts,
				const char *url, const char *password,
				const char *token,
				int (*abort)(void *), void *arg);
void push_http_free(struct push_http *h);

/* POSTs body[0..len) to url + path_query with Content-Type ctype.
 * why[0..why_len) gets a one-line reason unless PUSH_SENT: the status
 * and the start of the server's answer, or libcurl's error. *status is
 * the HTTP status (0: none). */
enum push_result push_http_post(struct push_http *h, const char *path_query,
				const char *ctype, const void *body,
				size_t len, int *status, char *why,
				size_t why_len);

/* The last answer's Retry-After in seconds (429 and 503 may carry it:
 * RFC 9110, and OTLP/HTTP asks clients to honour it), at most
 * PUSH_HTTP_RETRY_AFTER_MAX; 0 when it had none. */
unsigned push_http_retry_after(const struct push_http *h);

#endif /* PYPROF_PUSH_HTTP_H */
