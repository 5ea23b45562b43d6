/*
 * http_parse.c - the strict request-head parser and query helpers (see
 * http_parse.h).
 *
 * The head is parsed from scratch on each call, line by line, only up to
 * the last complete line (lines are at most HTTP_MAX_HEAD bytes in all,
 * so re-parsing costs microseconds; http.c calls it once per read). Every
 * byte is checked against the grammar before it is used; nothing is
 * trusted to be NUL-terminated.
 *
 * Pure functions; any thread.
 */
#include "http/http_parse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Visible ASCII, for the request target. */
static int is_vchar(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* A header value's bytes: visible, SP, HTAB, obs-text. */
static int is_field_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

int http_str_eq(struct http_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.p, lit, n) == 0;
}

int http_str_case_eq(struct http_str s, const char *lit)
{
	size_t n = strlen(lit);
	if (s.len != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)s.p[i]) != lower((unsigned char)lit[i]))
			return 0;
	return 1;
}

int http_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 19)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* ---- the request line and header fields ----------------------------------- */

static int parse_version(const char *p, size_t n, int *minor,
			 const char **why)
{
	if (n == 8 && memcmp(p, "HTTP/1.", 7) == 0 &&
	    (p[7] == '0' || p[7] == '1')) {
		*minor = p[7] - '0';
		return 0;
	}
	if (n == 8 && memcmp(p, "HTTP/", 5) == 0 && p[5] >= '0' &&
	    p[5] <= '9' && p[6] == '.' && p[7] >= '0' && p[7] <= '9') {
		*why = "HTTP version not supported";
		return -505;
	}
	*why = "malformed HTTP version";
	return -400;
}

static int parse_request_line(const char *p, size_t n, struct http_req *req,
			      const char **why)
{
	size_t i = 0, start;

	if (n > HTTP_MAX_LINE) {
		*why = "request line too long";
		return -414;
	}
	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ' ') {
		*why = "malformed request line (method)";
		return -400;
	}
	req->method = (struct http_str){ p, i };
	start = ++i;
	while (i < n && is_vchar((unsigned char)p[i]))
		i++;
	if (i == start || i == n || p[i] != ' ') {
		*why = "malformed request line (target)";
		return -400;
	}
	req->target = (struct http_str){ p + start, i - start };
	if (p[start] != '/') {
		*why = "the request target must be a path (origin-form)";
		return -400;
	}
	i++;
	return parse_version(p + i, n - i, &req->minor, why);
}

/* Connection: a comma-separated list of tokens. */
static void parse_connection(struct http_str v, int *close, int *keep)
{
	size_t i = 0;
	while (i < v.len) {
		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t' ||
				     v.p[i] == ','))
			i++;
		size_t s = i;
		while (i < v.len && v.p[i] != ',' && v.p[i] != ' ' &&
		       v.p[i] != '\t')
			i++;
		struct http_str t = { v.p + s, i - s };
		if (http_str_case_eq(t, "close"))
			*close = 1;
		else if (http_str_case_eq(t, "keep-alive"))
			*keep = 1;
	}
}

struct head_state {
	int n_host, has_te, conn_close, conn_keep;
};

static int parse_field(const char *p, size_t n, struct http_req *req,
		       struct head_state *hs, const char **why)
{
	size_t i = 0, vs, ve;
	struct http_str name, value;

	if (p[0] == ' ' || p[0] == '\t') {
		*why = "obsolete line folding in a header";
		return -400;
	}
	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == 0 || i == n || p[i] != ':') {
		*why = "malformed header field name";
		return -400;
	}
	name = (struct http_str){ p, i };
	vs = i + 1;
	while (vs < n && (p[vs] == ' ' || p[vs] == '\t'))
		vs++;
	ve = n;
	while (ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t'))
		ve--;
	for (size_t j = vs; j < ve; j++)
		if (!is_field_char((unsigned char)p[j])) {
			*why = "control character in a header value";
			return -400;
		}
	value = (struct http_str){ p + vs, ve - vs };

	if (http_str_case_eq(name, "host")) {
		hs->n_host++;
		req->host = value;
	} else if (http_str_case_eq(name, "content-length")) {
		char digits[24];
		uint64_t v;
		if (value.len == 0 || value.len >= sizeof(digits)) {
			*why = "malformed Content-Length";
			return -400;
		}
		memcpy(digits, value.p, value.len);
		digits[value.len] = 0;
		if (http_parse_uint(digits, UINT64_MAX / 2, &v) < 0 ||
		    (req->has_length && v != req->content_length)) {
			*why = "malformed or conflicting Content-Length";
			return -400;
		}
		req->has_length = 1;
		req->content_length = v;
	} else if (http_str_case_eq(name, "transfer-encoding")) {
		hs->has_te = 1;
	} else if (http_str_case_eq(name, "connection")) {
		parse_connection(value, &hs->conn_close, &hs->conn_keep);
	} else if (http_str_case_eq(name, "expect")) {
		if (http_str_case_eq(value, "100-continue"))
			req->expect_continue = 1;
	} else if (http_str_case_eq(name, "authorization")) {
		req->authorization = value;
	} else if (http_str_case_eq(name, "cookie")) {
		req->cookie = value;
	} else if (http_str_case_eq(name, "user-agent")) {
		req->user_agent = value;
	} else if (http_str_case_eq(name, "sec-fetch-site")) {
		req->fetch_site = value;
	} else if (http_str_case_eq(name, "origin")) {
		req->origin = value;
	}
	return 0;
}

/* The bytes buf[pos..end) of a head line so far: no bare CR, no NUL.
 * 0, or -400 with the reason in *why. */
static int line_bytes(const char *buf, size_t pos, size_t end,
		      const char **why)
{
	/* Check the bytes of the line so far: no bare CR, no other
	 * control byte in the request line or names. */
	for (size_t j = pos; j < end; j++) {
		unsigned char c = (unsigned char)buf[j];
		/* A CR must end its line; the last byte may be
		 * a CR whose LF has not arrived yet. */
		if (c == '\r' && j + 1 != end) {
			*why = "bare CR in the request head";
			return -400;
		}
		if (c == 0) {
			*why = "NUL byte in the request head";
			return -400;
		}
	}
	return 0;
}

/* The head read whole (its fields in hs): what its fields allow
 * (framing, Host), keep-alive, the target's path and query. 1, or a
 * negative status with the reason in *why. */
static int head_done(struct http_req *req, const struct head_state *hs,
		     const char **why)
{
	if (hs->has_te) {
		if (req->has_length) {
			*why = "both Transfer-Encoding and Content-Length";
			return -400;
		}
		*why = "Transfer-Encoding is not supported (send "
		       "Content-Length)";
		return -501;
	}
	if (hs->n_host > 1 || (req->minor == 1 && hs->n_host == 0)) {
		*why = hs->n_host ? "more than one Host header"
				  : "missing Host header";
		return -400;
	}
	req->keep_alive = req->minor == 1 ? !hs->conn_close
					  : hs->conn_keep && !hs->conn_close;
	const char *q = memchr(req->target.p, '?', req->target.len);
	if (q) {
		req->path = (struct http_str){ req->target.p,
					       (size_t)(q - req->target.p) };
		req->query = (struct http_str){
			q + 1, req->target.len - req->path.len - 1
		};
	} else {
		req->path = req->target;
		req->query = (struct http_str){ req->target.p + req->target.len,
						0 };
	}
	return 1;
}

int http_parse_request(const char *buf, size_t len, struct http_req *req,
		       const char **why)
{
	struct head_state hs = { 0 };
	size_t pos = 0, n_fields = 0;
	int have_line = 0, rc;

	memset(req, 0, sizeof(*req));
	*why = "";
	/* Empty lines before the request line are skipped. */
	while (pos + 1 < len && buf[pos] == '\r' && buf[pos + 1] == '\n')
		pos += 2;
	for (;;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if ((rc = line_bytes(buf, pos, end, why)) < 0)
			return rc;
		if (!nl) {
			if (!have_line && len - pos > HTTP_MAX_LINE) {
				*why = "request line too long";
				return -414;
			}
			if (len > HTTP_MAX_HEAD) {
				*why = "request head too large";
				return -431;
			}
			return 0;
		}
		if (end == pos || buf[end - 1] != '\r') {
			*why = "bare LF in the request head";
			return -400;
		}
		size_t line_len = end - 1 - pos;
		if (end + 1 > HTTP_MAX_HEAD) {
			*why = "request head too large";
			return -431;
		}
		if (!have_line) {
			if ((rc = parse_request_line(buf + pos, line_len, req,
						     why)) < 0)
				return rc;
			have_line = 1;
		} else if (line_len == 0) {
			pos = end + 1;
			break;
		} else {
			if (++n_fields > HTTP_MAX_HEADERS) {
				*why = "too many header fields";
				return -431;
			}
			if ((rc = parse_field(buf + pos, line_len, req, &hs,
					      why)) < 0)
				return rc;
		}
		pos = end + 1;
	}
	req->head_len = pos;
	return head_done(req, &hs, why);
}

/* ---- decoding ---------------------------------------------------------------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int http_decode(struct http_str s, int plus_is_space, char *out, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return -1;
	for (size_t i = 0; i < s.len; i++) {
		int c = (unsigned char)s.p[i];
		if (c == '%') {
			int hi, lo;
			if (i + 2 >= s.len)
				return -1;
			hi = hexval((unsigned char)s.p[i + 1]);
			lo = hexval((unsigned char)s.p[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
			if (c == 0)
				return -1;
		} else if (c == '+' && plus_is_space) {
			c = ' ';
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return (int)o;
}

int http_query_get(struct http_str query, const char *key, char *out,
		   size_t cap)
{
	size_t i = 0;
	char name[64];

	while (i < query.len) {
		size_t s = i, eq = 0;
		while (i < query.len && query.p[i] != '&') {
			if (query.p[i] == '=' && !eq)
				eq = i;
			i++;
		}
		size_t e = i++;
		if (e == s)
			continue; /* "a=1&&b=2" */
		struct http_str k = { query.p + s, (eq ? eq : e) - s };
		if (http_decode(k, 1, name, sizeof(name)) < 0) {
			if (k.len < sizeof(name))
				return -1; /* a malformed escape */
			continue;	   /* a long key is not ours */
		}
		if (strcmp(name, key) != 0)
			continue;
		struct http_str v = { eq ? query.p + eq + 1 : query.p + e,
				      eq ? e - eq - 1 : 0 };
		return http_decode(v, 1, out, cap) < 0 ? -1 : 1;
	}
	return 0;
}

/* ":" and 1 to 5 digits up to 65535, or nothing. */
static int port_ok(const char *p, size_t n)
{
	uint32_t v = 0;
	if (n == 0)
		return 1;
	if (p[0] != ':' || n < 2 || n > 6)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (uint32_t)(p[i] - '0');
	}
	return v <= 65535;
}

int http_host_is_loopback(struct http_str h)
{
	char name[INET6_ADDRSTRLEN + 1];
	size_t n;

	if (h.len && h.p[0] == '[') {
		const char *end = memchr(h.p, ']', h.len);
		struct in6_addr a6;
		if (!end)
			return 0;
		n = (size_t)(end - h.p - 1);
		if (n == 0 || n >= sizeof(name))
			return 0;
		memcpy(name, h.p + 1, n);
		name[n] = 0;
		return inet_pton(AF_INET6, name, &a6) == 1 &&
		       IN6_IS_ADDR_LOOPBACK(&a6) &&
		       port_ok(end + 1, h.len - (size_t)(end + 1 - h.p));
	}
	const char *colon = memchr(h.p, ':', h.len);
	n = colon ? (size_t)(colon - h.p) : h.len;
	if (n == 0 || n >= sizeof(name) || !port_ok(h.p + n, h.len - n))
		return 0;
	memcpy(name, h.p, n);
	name[n] = 0;
	if (http_str_case_eq((struct http_str){ name, n }, "localhost"))
		return 1;
	struct in_addr a;
	return inet_pton(AF_INET, name, &a) == 1 &&
	       (ntohl(a.s_addr) >> 24) == 127;
}
