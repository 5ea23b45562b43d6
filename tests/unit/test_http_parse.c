/*
 * test_http_parse.c - the HTTP request-head parser and query helpers
 * (collector/http/http_parse.h): a table of requests with the status each must
 * get, the fields of good ones, every proper prefix of a good request
 * asking for more, limits, decoding; then a replay of the fuzzer's seed
 * corpus (tests/fuzz/http_seeds/, and any crash or hang afl++ saved into
 * tests/fuzz/http_found/) through the same invariants the fuzz harness
 * checks.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "http/http_parse.h"

static int parse(const char *s, struct http_req *r)
{
	const char *why;
	return http_parse_request(s, strlen(s), r, &why);
}

/* ---- 1. status per request ---------------------------------------------------- */

struct status_case {
	const char *name;
	const char *req;
	int rc;
};

static const struct status_case status_cases[] = {
	{ "1.1 minimal 1.1", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1 },
	{ "1.2 1.0 without Host", "GET /a HTTP/1.0\r\n\r\n", 1 },
	{ "1.3 incomplete head", "GET / HTTP/1.1\r\nHost: x\r\n", 0 },
	{ "1.4 empty", "", 0 },
	{ "1.5 leading CRLFs skipped", "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 1 },
	{ "1.6 bare LF", "GET / HTTP/1.1\nHost: x\n\n", -400 },
	{ "1.7 bare CR", "GET / HTTP/1.1\rHost: x\r\n\r\n", -400 },
	{ "1.8 missing Host in 1.1", "GET / HTTP/1.1\r\n\r\n", -400 },
	{ "1.9 two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", -400 },
	{ "1.10 HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", -505 },
	{ "1.11 HTTP/1.2", "GET / HTTP/1.2\r\nHost: x\r\n\r\n", -505 },
	{ "1.12 lower-case version", "GET / http/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.13 absolute-form", "GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.14 asterisk", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.15 two spaces", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.16 no version", "GET /\r\nHost: x\r\n\r\n", -400 },
	{ "1.17 space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", -400 },
	{ "1.18 obs-fold", "GET / HTTP/1.1\r\nHost: x\r\n  y\r\n\r\n", -400 },
	{ "1.19 empty field name", "GET / HTTP/1.1\r\n: x\r\nHost: x\r\n\r\n", -400 },
	{ "1.20 control byte in value", "GET / HTTP/1.1\r\nHost: x\x01y\r\n\r\n", -400 },
	{ "1.21 DEL in value", "GET / HTTP/1.1\r\nHost: x\x7fy\r\n\r\n", -400 },
	{ "1.22 obs-text in value ok", "GET / HTTP/1.1\r\nHost: x\r\nX: \xc3\xa9\r\n\r\n", 1 },
	{ "1.23 bad Content-Length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", -400 },
	{ "1.24 negative Content-Length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", -400 },
	{ "1.25 conflicting Content-Length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -400 },
	{ "1.26 repeated equal Content-Length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", 1 },
	{ "1.27 chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", -501 },
	{ "1.28 chunked and length", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", -400 },
	{ "1.29 huge Content-Length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", -400 },
	{ "1.31 tab in target", "GET /\t HTTP/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.32 method with slash", "G/T / HTTP/1.1\r\nHost: x\r\n\r\n", -400 },
	{ "1.33 trailing space after version", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", -400 },
};

static void test_statuses(void)
{
	char what[160];
	for (size_t i = 0; i < sizeof(status_cases) / sizeof(*status_cases);
	     i++) {
		const struct status_case *k = &status_cases[i];
		struct http_req r;
		const char *why;
		size_t len = strlen(k->req);
		int rc = http_parse_request(k->req, len, &r, &why);
		snprintf(what, sizeof(what), "%s: got %d (%s)", k->name, rc,
			 why);
		CHECK(rc == k->rc, what);
	}
	static const char nul[] = "GET /\0 HTTP/1.1\r\nHost: x\r\n\r\n";
	struct http_req r;
	const char *why;
	CHECK(http_parse_request(nul, sizeof(nul) - 1, &r, &why) == -400,
	      "1.30 NUL in the target");
	CHECK(http_parse_request(nul, 6, &r, &why) == -400,
	      "1.31 NUL refused before the line ends");
}

/* ---- 2. fields of good requests ------------------------------------------------- */

static int str_is(struct http_str s, const char *lit)
{
	return http_str_eq(s, lit);
}

static void test_fields(void)
{
	struct http_req r;
	const char *s = "GET /debug/pprof/profile?seconds=3&pid=12 HTTP/1.1\r\n"
			"Host: 127.0.0.1:6060\r\n"
			"Authorization:   Bearer abc  \r\n"
			"Connection: Keep-Alive, Upgrade\r\n\r\nNEXT";
	CHECK(parse(s, &r) == 1, "2.1 parses");
	CHECK(str_is(r.method, "GET"), "2.2 method");
	CHECK(str_is(r.path, "/debug/pprof/profile"), "2.3 path");
	CHECK(str_is(r.query, "seconds=3&pid=12"), "2.4 query");
	CHECK(str_is(r.host, "127.0.0.1:6060"), "2.5 host");
	CHECK(str_is(r.authorization, "Bearer abc"), "2.6 OWS trimmed");
	CHECK(r.minor == 1 && r.keep_alive, "2.7 1.1 keeps alive");
	CHECK(r.head_len == strlen(s) - 4, "2.8 head_len stops at the head");

	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		    &r) == 1 &&
		      !r.keep_alive,
	      "2.9 Connection: close");
	CHECK(parse("GET / HTTP/1.0\r\n\r\n", &r) == 1 && !r.keep_alive,
	      "2.10 1.0 closes by default");
	CHECK(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &r) ==
			      1 &&
		      r.keep_alive,
	      "2.11 1.0 with keep-alive");
	CHECK(parse("POST /debug/pprof/symbol HTTP/1.1\r\nHost: x\r\n"
		    "Content-Length: 12\r\nExpect: 100-continue\r\n\r\n",
		    &r) == 1 &&
		      r.has_length && r.content_length == 12 &&
		      r.expect_continue,
	      "2.12 Content-Length and Expect");
	CHECK(parse("GET /x HTTP/1.1\r\nhOsT: y\r\n\r\n", &r) == 1 &&
		      str_is(r.host, "y") && r.query.len == 0 &&
		      str_is(r.path, "/x"),
	      "2.13 names are case-insensitive; no query");
	CHECK(parse("GET /x? HTTP/1.1\r\nHost: y\r\n\r\n", &r) == 1 &&
		      r.query.len == 0 && str_is(r.path, "/x"),
	      "2.14 empty query");
}

/* ---- 3. prefixes and limits --------------------------------------------------------- */

static void test_prefixes(void)
{
	const char *s = "POST /debug/pprof/symbol?x=1 HTTP/1.1\r\nHost: a\r\n"
			"Content-Length: 5\r\nUser-Agent: Go-http-client/1.1"
			"\r\n\r\n";
	size_t n = strlen(s);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		struct http_req r;
		const char *why;
		if (http_parse_request(s, i, &r, &why) != 0)
			bad++;
	}
	CHECK(bad == 0, "3.1 every proper prefix of a good head needs more");
}

static void test_limits(void)
{
	struct http_req r;
	const char *why;
	size_t cap = HTTP_MAX_HEAD * 2;
	char *buf = malloc(cap);
	CHECK_OR_RETURN(buf != NULL, "3.2 memory", );

	/* A request line one byte over the limit, then more. */
	memset(buf, 'a', cap);
	memcpy(buf, "GET /", 5);
	CHECK(http_parse_request(buf, HTTP_MAX_LINE + 2, &r, &why) == -414,
	      "3.3 long request line (no CRLF yet) is 414");
	CHECK(http_parse_request(buf, HTTP_MAX_LINE - 10, &r, &why) == 0,
	      "3.4 a long but legal partial line needs more");
	size_t l = (size_t)snprintf(buf, cap, "GET /");
	memset(buf + l, 'b', HTTP_MAX_LINE);
	l += HTTP_MAX_LINE;
	l += (size_t)snprintf(buf + l, cap - l, " HTTP/1.1\r\nHost: x\r\n\r\n");
	CHECK(http_parse_request(buf, l, &r, &why) == -414,
	      "3.5 complete over-long request line is 414");

	/* Many small fields. */
	l = (size_t)snprintf(buf, cap, "GET / HTTP/1.1\r\nHost: x\r\n");
	for (int i = 0; i < HTTP_MAX_HEADERS; i++)
		l += (size_t)snprintf(buf + l, cap - l, "X-%d: y\r\n", i);
	l += (size_t)snprintf(buf + l, cap - l, "\r\n");
	CHECK(http_parse_request(buf, l, &r, &why) == -431,
	      "3.6 too many fields is 431");

	/* One huge field, head never ends. */
	l = (size_t)snprintf(buf, cap, "GET / HTTP/1.1\r\nHost: x\r\nX: ");
	memset(buf + l, 'c', cap - l);
	CHECK(http_parse_request(buf, HTTP_MAX_HEAD + 1, &r, &why) == -431,
	      "3.7 head past the limit is 431");
	CHECK(http_parse_request(buf, HTTP_MAX_HEAD, &r, &why) == 0,
	      "3.8 head at the limit, unfinished, needs more");
	free(buf);
}

/* ---- 4. decoding and queries ----------------------------------------------------------- */

static struct http_str S(const char *s) {
	return (struct http_str){ s, strlen(s) };
}

static void
test_decoding(void)
{
	char out[32];
	CHECK(http_decode(S("a%20b+c"), 1, out, sizeof(out)) == 5 &&
		      strcmp(out, "a b c") == 0,
	      "4.1 %20 and + in a query");
	CHECK(http_decode(S("a+b"), 0, out, sizeof(out)) == 3 &&
		      strcmp(out, "a+b") == 0,
	      "4.2 + stays in a path");
	CHECK(http_decode(S("%4a%4A"), 0, out, sizeof(out)) == 2 &&
		      strcmp(out, "JJ") == 0,
	      "4.3 hex digits of both cases");
	CHECK(http_decode(S("%"), 0, out, sizeof(out)) == -1,
	      "4.4 lone %");
	CHECK(http_decode(S("%4"), 0, out, sizeof(out)) == -1,
	      "4.5 short escape");
	CHECK(http_decode(S("%zz"), 0, out, sizeof(out)) == -1,
	      "4.6 bad hex");
	CHECK(http_decode(S("%00"), 0, out, sizeof(out)) == -1,
	      "4.7 NUL refused");
	CHECK(http_decode(S("abcd"), 0, out, 4) == -1,
	      "4.8 does not fit (NUL included)");
	CHECK(http_decode(S("abc"), 0, out, 4) == 3, "4.9 exactly fits");

	struct http_str q = S("seconds=3&pid=%31%32&&flag&mode=wall&seconds=9");
	CHECK(http_query_get(q, "seconds", out, sizeof(out)) == 1 &&
		      strcmp(out, "3") == 0,
	      "4.10 first value wins");
	CHECK(http_query_get(q, "pid", out, sizeof(out)) == 1 &&
		      strcmp(out, "12") == 0,
	      "4.11 value decoded");
	CHECK(http_query_get(q, "flag", out, sizeof(out)) == 1 &&
		      strcmp(out, "") == 0,
	      "4.12 key without =");
	CHECK(http_query_get(q, "nope", out, sizeof(out)) == 0,
	      "4.13 absent");
	CHECK(http_query_get(S("a=%zz&b=1"), "b", out, sizeof(out)) == 1,
	      "4.14 a bad value of another key is not ours");
	CHECK(http_query_get(S("a=%zz&b=1"), "a", out, sizeof(out)) == -1,
	      "4.15 a bad value of ours is an error");
	CHECK(http_query_get(S("s%zz=1"), "b", out, sizeof(out)) == -1,
	      "4.16 a malformed key is an error");

	uint64_t v;
	CHECK(http_parse_uint("3600", 3600, &v) == 0 && v == 3600,
	      "4.17 number at max");
	CHECK(http_parse_uint("3601", 3600, &v) == -1, "4.18 over max");
	CHECK(http_parse_uint("", 10, &v) == -1, "4.19 empty");
	CHECK(http_parse_uint("+1", 10, &v) == -1, "4.20 sign");
	CHECK(http_parse_uint("1 ", 10, &v) == -1, "4.21 space");
	CHECK(http_parse_uint("99999999999999999999", UINT64_MAX, &v) == -1,
	      "4.22 20 digits refused (no overflow)");
}

/* ---- 5. the fuzzer's corpus ------------------------------------------------------------ */

/* The invariants tests/fuzz/http_parse_fuzz.c asserts, as checks. */
static int invariants_hold(const char *buf, size_t len)
{
	struct http_req r;
	const char *why = NULL;
	int rc = http_parse_request(buf, len, &r, &why);
	if (rc == 0 || rc == -400 || rc == -414 || rc == -431 ||
	    rc == -501 || rc == -505)
		return why != NULL;
	if (rc != 1)
		return 0;
	if (r.head_len > len || r.head_len > HTTP_MAX_HEAD)
		return 0;
	if (r.path.p != r.target.p || r.path.len > r.target.len)
		return 0;
	if (r.target.p < buf || r.target.p + r.target.len > buf + len)
		return 0;
	char out[256];
	http_query_get(r.query, "seconds", out, sizeof(out));
	return r.target.len > 0 && r.target.p[0] == '/';
}

static int replay_dir(const char *dir, int must_exist)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	char path[PATH_MAX + 300], what[PATH_MAX + 400];
	static char buf[1 << 20];

	if (!d) {
		if (must_exist)
			CHECK(d != NULL, "5.1 the seed corpus is there");
		return 0;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		snprintf(what, sizeof(what), "5.2 invariants hold for %s",
			 path);
		CHECK(invariants_hold(buf, len), what);
		n++;
	}
	closedir(d);
	return n;
}

static void test_corpus(void)
{
	char exe[PATH_MAX], root[PATH_MAX + 64], dir[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK_OR_RETURN(n > 0, "5.0 /proc/self/exe", );
	exe[n] = 0;
	/* build/tests/test_http_parse -> the source tree */
	snprintf(root, sizeof(root), "%s/../..", dirname(exe));
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/http_seeds", root);
	int seeds = replay_dir(dir, 1);
	CHECK(seeds >= 10, "5.3 at least 10 seeds replayed");
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/http_found", root);
	replay_dir(dir, 0);
	printf("replayed %d seeds\n", seeds);
}

/* ---- 7. Host names loopback, read whole ----------------------------------------- */

static void test_host(void)
{
	static const struct {
		const char *host;
		int loopback;
	} cases[] = {
		{ "localhost", 1 },
		{ "LOCALHOST:1", 1 },
		{ "127.0.0.1", 1 },
		{ "127.255.0.9:80", 1 },
		{ "[::1]", 1 },
		{ "[::1]:6060", 1 },
		{ "[0::1]", 1 },
		{ "", 0 },
		{ ":80", 0 },
		{ "[::1]evil.com", 0 },
		{ "[::1]x:80", 0 },
		{ "[::1]:", 0 },
		{ "[::1]:0x50", 0 },
		{ "[::1]:123456", 0 },
		{ "[]", 0 },
		{ "[::ffff:127.0.0.1]", 0 },
		{ "localhost.", 0 },
		{ "localhostx", 0 },
		{ "127.0.0.1:", 0 },
		{ "127.1", 0 },
		{ "127.0.0.1 ", 0 },
		{ "127.0.0.1:80:80", 0 },
	};
	char name[96];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_str h = { cases[i].host, strlen(cases[i].host) };
		snprintf(name, sizeof(name), "7.%zu '%s' %s", i + 1,
			 cases[i].host, cases[i].loopback ? "is loopback" : "is not");
		CHECK(http_host_is_loopback(h) == cases[i].loopback, name);
	}
	/* The Cookie header is kept for the token check. */
	struct http_req r;
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nCookie: a=1; b=2\r\n"
		    "\r\n",
		    &r) == 1 &&
		      http_str_eq(r.cookie, "a=1; b=2"),
	      "7.c Cookie kept");
	/* User-Agent is kept for the scrape key (http_pprof.c). */
	CHECK(parse("GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: Alloy/v1.11.0 "
		    "(linux; binary)\r\n\r\n",
		    &r) == 1 &&
		      http_str_eq(r.user_agent, "Alloy/v1.11.0 (linux; binary)"),
	      "7.d User-Agent kept");
}

int main(void)
{
	test_host();
	test_statuses();
	test_fields();
	test_prefixes();
	test_limits();
	test_decoding();
	test_corpus();
	return check_summary();
}
