/*
 * http_parse_fuzz.c - fuzz harness for the HTTP request parser
 * (collector/http/http_parse.h). One source for three builds:
 *   - libFuzzer (clang -fsanitize=fuzzer, ASan and UBSan): `make
 *     fuzz-http`, part of `make fuzz`, LLVMFuzzerTestOneInput below;
 *   - afl++ (afl-cc, HTTP_FUZZ_AFL defined): `make fuzz-http-afl`, a
 *     persistent-mode main reading stdin;
 *   - tests/unit/test_http_fuzz.c includes this file (FUZZ_REPLAY
 *     defined) and replays the kept corpus and every finding through
 *     http_fuzz_one.
 *
 * Each input is one byte string as a client could send it. The harness
 * parses it as a whole and then as every prefix a slow client could have
 * delivered so far (a few cut points), calls the query helpers on what a
 * good head holds, and reports the first invariant that breaks:
 *   - the result is 1, 0 or one of the documented -STATUS values, with a
 *     reason string;
 *   - a parsed head lies inside the input, is at most HTTP_MAX_HEAD bytes
 *     and its target starts with '/'; path and query partition the target;
 *   - a prefix of an input that parses needs more bytes or is an error,
 *     never a different complete head;
 *   - decoded strings fit their buffers and hold no NUL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http_parse.h"

#define HTTP_NEED(cond)                                                      \
	do {                                                                 \
		if (!(cond))                                                 \
			return "broken: " #cond;                             \
	} while (0)

static const char *check_decoded(struct http_str s, int plus)
{
	char out[128];
	int n = http_decode(s, plus, out, sizeof(out));
	if (n >= 0)
		HTTP_NEED((size_t)n < sizeof(out) && strlen(out) == (size_t)n);
	return NULL;
}

/* Parses buf[0..len) into *r, *rc the result; NULL, or what broke. */
static const char *check_one(const char *buf, size_t len, struct http_req *r,
			     int *rc)
{
	const char *why = NULL, *bad;
	*rc = http_parse_request(buf, len, r, &why);
	HTTP_NEED(why != NULL);
	if (*rc != 1) {
		HTTP_NEED(*rc == 0 || *rc == -400 || *rc == -414 ||
			  *rc == -431 || *rc == -501 || *rc == -505);
		return NULL;
	}
	HTTP_NEED(r->head_len <= len && r->head_len <= HTTP_MAX_HEAD);
	HTTP_NEED(r->target.p >= buf &&
		  r->target.p + r->target.len <= buf + len);
	HTTP_NEED(r->target.len > 0 && r->target.p[0] == '/');
	HTTP_NEED(r->path.p == r->target.p && r->path.len <= r->target.len);
	HTTP_NEED(r->query.len == 0 ||
		  r->path.len + 1 + r->query.len == r->target.len);
	HTTP_NEED(r->minor == 0 || r->minor == 1);
	if ((bad = check_decoded(r->path, 0)) ||
	    (bad = check_decoded(r->query, 1)))
		return bad;
	char v[64];
	int q = http_query_get(r->query, "seconds", v, sizeof(v));
	HTTP_NEED(q >= -1 && q <= 1);
	if (q == 1) {
		uint64_t n;
		HTTP_NEED(strlen(v) < sizeof(v));
		if (http_parse_uint(v, 3600, &n) == 0)
			HTTP_NEED(n <= 3600);
	}
	return NULL;
}

/* Runs one input; NULL, or the invariant it broke. */
static const char *http_fuzz_one(const uint8_t *data, size_t len)
{
	const char *buf = (const char *)data, *bad;
	struct http_req whole, part;
	int rc, prc;

	if ((bad = check_one(buf, len, &whole, &rc)))
		return bad;
	/* Prefixes: at most 8 cut points, spread over the input. */
	for (size_t k = 1; k <= 8 && len > 0; k++) {
		size_t cut = len * k / 9;
		if ((bad = check_one(buf, cut, &part, &prc)))
			return bad;
		if (rc == 1 && prc == 1)
			HTTP_NEED(part.head_len == whole.head_len);
		if (rc == 0)
			HTTP_NEED(prc == 0 || prc < 0);
	}
	return NULL;
}

#if defined(HTTP_FUZZ_AFL)
/* afl++: persistent mode, one input a loop from stdin; an abort() is
 * what afl++ records as a crash. Memory errors are found by building
 * with AFL_USE_ASAN=1 (the Makefile does). */
int main(void)
{
	static uint8_t buf[HTTP_MAX_HEAD * 2];
	__AFL_INIT();
	while (__AFL_LOOP(10000)) {
		ssize_t n = read(0, buf, sizeof(buf));
		const char *bad;
		if (n < 0)
			return 0;
		if ((bad = http_fuzz_one(buf, (size_t)n))) {
			fprintf(stderr, "http_parse_fuzz: %s\n", bad);
			abort();
		}
	}
	return 0;
}
#elif !defined(FUZZ_REPLAY)
#include <sanitizer/common_interface_defs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *bad = http_fuzz_one(data, size);
	if (bad) {
		/* stderr is /dev/null under -close_fd_mask=2: the sanitizer's
		 * report goes where libFuzzer's does */
		__sanitizer_report_error_summary(bad);
		abort();
	}
	return 0;
}
#endif
