/*
 * http_parse.h - a strict HTTP/1.x request-head parser, and the query
 * string and percent-decoding helpers of the HTTP endpoints.
 *
 * http.c feeds it the bytes a client has sent so far; it either needs
 * more, or returns the parsed head, or an error with the status to
 * answer. No allocation: the result points into the caller's buffer,
 * which must stay unchanged while the result is used. Pure functions, so
 * the unit test (tests/unit/test_http_parse.c) and the fuzzer
 * (tests/fuzz/http_parse_fuzz.c, `make fuzz-http`) call them directly.
 *
 * What is accepted (RFC 9112, read strictly):
 *   request-line = method SP request-target SP "HTTP/1." ("0" | "1") CRLF
 *   method       = token (any; http.c decides which it serves)
 *   target       = origin-form "/" ..., visible ASCII only
 *   header-field = token ":" OWS value OWS CRLF, value of visible ASCII,
 *                  SP, HTAB and bytes >= 0x80 (obs-text)
 * and an empty line. Rejected, with 400 unless said: a bare LF or CR,
 * whitespace before a header's colon or a line starting with whitespace
 * (obs-fold), a control byte anywhere, a target that is not origin-form
 * (absolute-form and '*' included), two different Content-Length values
 * or one that is not a decimal number, Content-Length with
 * Transfer-Encoding, HTTP/1.1 without exactly one Host; 505 for another
 * HTTP version; 414 for a request line longer than HTTP_MAX_LINE; 431 for
 * a head longer than HTTP_MAX_HEAD or with more than HTTP_MAX_HEADERS
 * fields; 501 for a Transfer-Encoding (we take bodies by length only).
 * Leading empty lines before the request line are skipped (RFC 9112
 * 2.2 allows it for robustness).
 */
#ifndef PYPROF_HTTP_PARSE_H
#define PYPROF_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_LINE 8192
#define HTTP_MAX_HEAD 16384
#define HTTP_MAX_HEADERS 64

struct http_str {
	const char *p; /* into the request buffer; not NUL-terminated */
	size_t len;
};

struct http_req {
	struct http_str method;
	struct http_str target; /* as sent: path and query */
	struct http_str path;	/* target up to '?', still encoded */
	struct http_str query;	/* after '?', empty if none */
	int minor;		/* HTTP/1.<minor> */
	int keep_alive;		/* after Connection and the version */
	int has_length;
	uint64_t content_length; /* 0 unless has_length */
	int expect_continue;	 /* Expect: 100-continue */
	struct http_str host;
	struct http_str authorization; /* empty if none */
	struct http_str cookie;	       /* the last Cookie header, empty if none */
	struct http_str user_agent;    /* the last User-Agent, empty if none */
	struct http_str fetch_site;    /* the last Sec-Fetch-Site, or empty */
	struct http_str origin;	       /* the last Origin, or empty */
	size_t head_len;	       /* bytes of the head, empty line included */
};

/* Parses the head at buf[0..len). Returns 1 with *req filled when the
 * head is complete, 0 when more bytes are needed (and what is there is
 * valid so far), or a negative number -STATUS (-400, -414, -431, -501,
 * -505) with a short reason in *why (a static string). */
int http_parse_request(const char *buf, size_t len, struct http_req *req,
		       const char **why);

/* Whether s equals the NUL-terminated lit, byte for byte / ignoring ASCII
 * case. */
int http_str_eq(struct http_str s, const char *lit);
int http_str_case_eq(struct http_str s, const char *lit);

/* Decodes %XX escapes (and, with plus_is_space, '+' as a space, as in
 * query strings) from s into out (cap bytes, NUL-terminated). Returns the
 * decoded length, or -1 when an escape is malformed, the result holds a
 * NUL byte, or it does not fit. */
int http_decode(struct http_str s, int plus_is_space, char *out, size_t cap);

/* Finds the first parameter key in query (a=1&b=2, keys compared after
 * decoding) and decodes its value into out (cap bytes). Returns 1 when
 * found, 0 when absent, -1 when the query or that value is malformed (or
 * does not fit). A key without '=' has an empty value. */
int http_query_get(struct http_str query, const char *key, char *out,
		   size_t cap);

/* Whether a Host header value names this machine's loopback, read whole
 * (RFC 3986 host [":" port]): "localhost" (any case), an IPv4 literal in
 * 127.0.0.0/8 (dotted quad), or an IPv6 loopback literal in brackets
 * ("[::1]"), each followed by nothing or by ":" and a port of 1 to 5
 * digits up to 65535. Anything after that ("[::1]evil.com",
 * "localhost.evil.com", "127.0.0.1:80x") is not loopback. */
int http_host_is_loopback(struct http_str host);

/* Parses a decimal number 0..max, no sign, no spaces, at most 19 digits.
 * 0, or -1. */
int http_parse_uint(const char *s, uint64_t max, uint64_t *out);

#endif /* PYPROF_HTTP_PARSE_H */
