/*
 * http_parse_fuzz.c - afl++ harness for the HTTP request parser
 * (collector/http/http_parse.h), built and run by `make fuzz-http`.
 *
 * Each input is one byte string as a client could send it. The harness
 * parses it as a whole and then as every prefix a slow client could have
 * delivered so far (a few cut points), calls the query helpers on what a
 * good head holds, and abort()s when an invariant breaks, so that afl++
 * records a crash:
 *   - the result is 1, 0 or one of the documented -STATUS values, with a
 *     reason string;
 *   - a parsed head lies inside the input, is at most HTTP_MAX_HEAD bytes
 *     and its target starts with '/'; path and query partition the target;
 *   - a prefix of an input that parses needs more bytes or is an error,
 *     never a different complete head;
 *   - decoded strings fit their buffers and hold no NUL.
 * Memory errors are found by building with AFL_USE_ASAN=1 (the Makefile
 * does).
 *
 * Persistent mode (__AFL_LOOP) when built by afl-cc, a plain
 * read-stdin-once program otherwise (the unit test replays the corpus
 * through the same invariants, tests/unit/test_http_parse.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http_parse.h"

#ifndef __AFL_LOOP
#define __AFL_LOOP(n) (once_++ == 0)
static int once_;
#endif
#ifndef __AFL_INIT
#define __AFL_INIT() ((void)0)
#endif

static void need(int cond)
{
	if (!cond)
		abort();
}

static void check_decoded(struct http_str s, int plus)
{
	char out[128];
	int n = http_decode(s, plus, out, sizeof(out));
	if (n >= 0)
		need((size_t)n < sizeof(out) && strlen(out) == (size_t)n);
}

static int check_one(const char *buf, size_t len, struct http_req *r)
{
	const char *why = NULL;
	int rc = http_parse_request(buf, len, r, &why);
	need(why != NULL);
	if (rc != 1) {
		need(rc == 0 || rc == -400 || rc == -414 || rc == -431 ||
		     rc == -501 || rc == -505);
		return rc;
	}
	need(r->head_len <= len && r->head_len <= HTTP_MAX_HEAD);
	need(r->target.p >= buf && r->target.p + r->target.len <= buf + len);
	need(r->target.len > 0 && r->target.p[0] == '/');
	need(r->path.p == r->target.p && r->path.len <= r->target.len);
	need(r->query.len == 0 ||
	     r->path.len + 1 + r->query.len == r->target.len);
	need(r->minor == 0 || r->minor == 1);
	check_decoded(r->path, 0);
	check_decoded(r->query, 1);
	char v[64];
	int q = http_query_get(r->query, "seconds", v, sizeof(v));
	need(q >= -1 && q <= 1);
	if (q == 1) {
		uint64_t n;
		need(strlen(v) < sizeof(v));
		if (http_parse_uint(v, 3600, &n) == 0)
			need(n <= 3600);
	}
	return rc;
}

int main(void)
{
	static char buf[HTTP_MAX_HEAD * 2];
	__AFL_INIT();
	while (__AFL_LOOP(10000)) {
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0)
			return 0;
		size_t len = (size_t)n;
		struct http_req whole, part;
		int rc = check_one(buf, len, &whole);
		/* Prefixes: at most 8 cut points, spread over the input. */
		for (size_t k = 1; k <= 8 && len > 0; k++) {
			size_t cut = len * k / 9;
			int prc = check_one(buf, cut, &part);
			if (rc == 1 && prc == 1)
				need(part.head_len == whole.head_len);
			if (rc == 0)
				need(prc == 0 || prc < 0);
		}
	}
	return 0;
}
