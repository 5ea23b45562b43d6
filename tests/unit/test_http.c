/*
 * test_http.c - the HTTP server's connection handling (collector/http/http.h)
 * over a real loopback socket, driven step by step: the client writes,
 * then the loop runs for a moment, then the client reads.
 *
 * Freed memory is poisoned (mallopt M_PERTURB) and the test allocates
 * between steps so that a growing buffer must move: a request that still
 * pointed into its old buffer would read poison. Step 6 is a model test:
 * random pipelines of GET, HEAD and POST (bodies up to 20 KB, some ending
 * in a malformed request) sent in random pieces, each answer checked in
 * order against what was asked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "http/http.h"
#include "common/log.h"
#include "common/loop.h"

struct seen {
	int n;
	char method[16], path[64];
	size_t body_len;
	int body_ok;
	int defer; /* do not answer: wait */
	struct http_conn *waiting;
	int cancelled;
};

static void on_cancel(void *arg)
{
	struct seen *s = arg;
	s->cancelled++;
	s->waiting = NULL;
}

static void handler(void *arg, struct http_conn *c, const struct http_req *r,
		    const char *body, size_t len)
{
	struct seen *s = arg;
	s->n++;
	snprintf(s->method, sizeof(s->method), "%.*s", (int)r->method.len,
		 r->method.p);
	snprintf(s->path, sizeof(s->path), "%.*s", (int)r->path.len,
		 r->path.p);
	s->body_len = len;
	s->body_ok = 1;
	for (size_t i = 0; i < len; i++)
		if (body[i] != (char)('a' + i % 26))
			s->body_ok = 0;
	if (s->defer) {
		s->waiting = c;
		http_set_cancel(c, on_cancel, s);
		return;
	}
	http_respond(c, 200, "text/plain", NULL, s->path, strlen(s->path));
}

static void stop(struct loop *loop, struct loop_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	loop_stop(loop);
}

static void run_for(struct loop *loop, unsigned ms)
{
	loop_add_timer(loop, (uint64_t)ms * 1000000u, 0, stop, NULL);
	loop_run(loop);
}

static int connect_to(const char *addr)
{
	const char *colon = strrchr(addr, ':');
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	return fd;
}

/* What the server sent so far (non-blocking read). */
static size_t drain(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = 0;
	return n;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Runs the loop in 2 ms turns until cond holds, or for at most 3 s (a
 * busy machine); no fixed sleeps, so the test is as fast as the server. */
#define SETTLE(loop, cond)                                          \
	for (int settle_ = 0; settle_ < 1500 && !(cond); settle_++) \
	run_for((loop), 2)

/* Runs the loop and reads fd into buf (cap bytes, NUL-terminated) until
 * it holds `until` n times, or 3 s passed. Returns the bytes read. */
static size_t settle_read(struct loop *loop, int fd, char *buf, size_t cap,
			  const char *until, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int t = 0; t < 1500 && count(buf, until) < n; t++) {
		run_for(loop, 2);
		len += drain(fd, buf + len, cap - len);
	}
	return len;
}

static void *keep[64];
static int n_keep;

/* Allocations that stay, so that a buffer growing next cannot be
 * extended in place. */
static void fragment(void)
{
	if (n_keep < 64)
		keep[n_keep++] = malloc(96);
}

/* ---- 6. model test: random pipelines in random pieces ------------------------ */

struct expect {
	int status;
	char path[16];
	int head;
};

/* Appends to *out (cap bytes) what the client sends; returns its length,
 * and describes the answer expected in *e. */
static size_t make_request(unsigned *seed, char *out, size_t cap, int k,
			   struct expect *e)
{
	int kind = (int)(rand_r(seed) % 10);
	size_t n = 0;
	if (kind == 9) { /* malformed: the connection ends after its 400 */
		n = (size_t)snprintf(out, cap, "GET /x%d HTTP/1.1\nHost: t\n\n",
				     k);
		*e = (struct expect){ 400, "", 0 };
		return n;
	}
	snprintf(e->path, sizeof(e->path), "/p%d", k);
	e->status = 200;
	e->head = kind == 8;
	if (kind < 5) {
		n = (size_t)snprintf(out, cap, "%s %s HTTP/1.1\r\nHost: localhost\r\n"
					       "X-Pad: %0*d\r\n\r\n",
				     e->head ? "HEAD" : "GET", e->path,
				     (int)(rand_r(seed) % 3000), 7);
	} else {
		size_t len = rand_r(seed) % 20000;
		n = (size_t)snprintf(out, cap, "%s %s HTTP/1.1\r\nHost: localhost\r\n"
					       "Content-Length: %zu\r\n\r\n",
				     e->head ? "HEAD" : "POST", e->path, len);
		for (size_t i = 0; i < len && n < cap; i++)
			out[n++] = (char)('a' + i % 26);
	}
	return n;
}

/* Checks the answers in buf[0..len) against want[0..n): status, body
 * (the path, or nothing for HEAD). Returns how many matched in order. */
static int match_answers(const char *buf, size_t len,
			 const struct expect *want, int n)
{
	size_t pos = 0;
	int i;
	for (i = 0; i < n; i++) {
		const char *h = buf + pos, *end;
		int status;
		size_t clen;
		if (pos >= len || sscanf(h, "HTTP/1.1 %d", &status) != 1 ||
		    status != want[i].status)
			break;
		end = strstr(h, "\r\n\r\n");
		const char *cl = strstr(h, "Content-Length: ");
		if (!end || !cl || cl > end ||
		    sscanf(cl, "Content-Length: %zu", &clen) != 1)
			break;
		pos = (size_t)(end + 4 - buf);
		if (want[i].status == 200) {
			if (clen != strlen(want[i].path))
				break;
			if (!want[i].head) {
				if (pos + clen > len ||
				    memcmp(buf + pos, want[i].path, clen))
					break;
				pos += clen;
			}
		} else {
			pos += clen;
		}
	}
	return pos == len ? i : -1;
}

static void model_test(struct loop *loop, struct http_server *srv,
		       struct seen *s)
{
	static char out[400000], in[100000];
	unsigned seed = 7;
	int bad = 0, rounds = 40;

	for (int r = 0; r < rounds; r++) {
		struct expect want[8];
		size_t n_out = 0, sent = 0, n_in = 0;
		int n_req = 1 + (int)(rand_r(&seed) % 8), closes = 0;
		int before = s->n, posts_ok = 1;
		for (int k = 0; k < n_req; k++) {
			n_out += make_request(&seed, out + n_out,
					      sizeof(out) - n_out, k, &want[k]);
			if (want[k].status == 400) {
				n_req = k + 1;
				closes = 1;
				break;
			}
		}
		int fd = connect_to(http_server_addr(srv));
		if (fd < 0) {
			bad++;
			continue;
		}
		while (sent < n_out) {
			size_t piece = 1 + rand_r(&seed) % 5000;
			if (piece > n_out - sent)
				piece = n_out - sent;
			ssize_t w = send(fd, out + sent, piece, MSG_DONTWAIT);
			if (w > 0)
				sent += (size_t)w;
			run_for(loop, rand_r(&seed) % 3);
			if (rand_r(&seed) % 4 == 0)
				fragment();
			n_in += drain(fd, in + n_in, sizeof(in) - n_in);
			posts_ok &= s->body_ok;
		}
		/* Until every answer is in (and, after an error, the
		 * connection closed), or 3 s on a very busy machine. */
		int got = -1, closed = 0;
		char b1;
		for (int t = 0; t < 1500; t++) {
			run_for(loop, 2);
			n_in += drain(fd, in + n_in, sizeof(in) - n_in);
			got = match_answers(in, n_in, want, n_req);
			closed = recv(fd, &b1, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
			if (got == n_req && closed == closes)
				break;
		}
		posts_ok &= s->body_ok;
		if (got != n_req || !posts_ok || closed != closes ||
		    s->n - before != n_req - closes) {
			fprintf(stderr, "round %d: %d requests, %d answered "
					"in order, closed %d (want %d), handler %d, "
					"bodies %s\n",
				r, n_req, got, closed, closes,
				s->n - before, posts_ok ? "ok" : "BAD");
			if (getenv("HTTP_TEST_DUMP"))
				fwrite(in, 1, n_in, stderr);
			bad++;
		}
		close(fd);
	}
	CHECK(bad == 0, "6.1 random pipelines in random pieces: every "
			"answer in order, bodies whole, closed after an error");
}

/* 7. On loopback, only a Host naming loopback is served, read whole
 * (DNS rebinding): a name that merely starts like one gets 403. */
static void host_test(struct loop *loop, struct http_server *srv)
{
	static const struct {
		const char *host;
		int ok;
	} cases[] = {
		{ "localhost", 1 },
		{ "LocalHost:8080", 1 },
		{ "127.0.0.1", 1 },
		{ "127.1.2.3:65535", 1 },
		{ "[::1]", 1 },
		{ "[::1]:80", 1 },
		{ "[0:0:0:0:0:0:0:1]:1", 1 },
		{ "[::1]evil.com", 0 },
		{ "[::1]:80evil", 0 },
		{ "[::1]:", 0 },
		{ "[::1]:65536", 0 },
		{ "[::2]", 0 },
		{ "[::1", 0 },
		{ "localhost.evil.com", 0 },
		{ "localhost:80x", 0 },
		{ "localhost:", 0 },
		{ "127.0.0.1.evil.com", 0 },
		{ "127.0.0.1:1:2", 0 },
		{ "128.0.0.1", 0 },
		{ "evil.com", 0 },
		{ "[127.0.0.1]", 0 },
	};
	char req[256], buf[4096], name[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = connect_to(http_server_addr(srv));
		int n = snprintf(req, sizeof(req),
				 "GET /h HTTP/1.1\r\nHost: %s\r\n"
				 "Connection: close\r\n\r\n",
				 cases[i].host);
		snprintf(name, sizeof(name), "7.%zu Host: %s -> %s", i + 1,
			 cases[i].host, cases[i].ok ? "200" : "403");
		if (fd < 0 || send(fd, req, (size_t)n, 0) != n) {
			CHECK(0, name);
			if (fd >= 0)
				close(fd);
			continue;
		}
		settle_read(loop, fd, buf, sizeof(buf), "\r\n\r\n", 1);
		CHECK(strncmp(buf, cases[i].ok ? "HTTP/1.1 200" : "HTTP/1.1 403", 12) == 0,
		      name);
		close(fd);
	}
}

/* 8. With a token, each way of sending it, and the cookie that ?token=
 * sets. */
static void token_test(struct loop *loop)
{
	static const struct {
		const char *extra; /* header lines, or a query with '?' */
		int status;
	} cases[] = {
		{ "", 401 },
		{ "?token=t0k", 200 },
		{ "?token=t0", 401 },
		{ "Authorization: Bearer t0k\r\n", 200 },
		{ "Authorization: Bearer t0kk\r\n", 401 },
		/* base64("pyprof:t0k"), base64(":t0k"), base64("u:bad") */
		{ "Authorization: Basic cHlwcm9mOnQwaw==\r\n", 200 },
		{ "Authorization: basic OnQwaw==\r\n", 200 },
		{ "Authorization: Basic dTpiYWQ=\r\n", 401 },
		{ "Authorization: Basic !!!!\r\n", 401 },
		{ "Cookie: a=1; pyprof_token_PORT=t0k; b=2\r\n", 200 },
		{ "Cookie: pyprof_token_PORT=t0kx\r\n", 401 },
		{ "Cookie: pyprof_token_1=t0k\r\n", 401 },
		{ "Cookie: xpyprof_token_PORT=t0k\r\n", 401 },
		/* the server decodes the key: the log must not show these */
		{ "?%74oken=t0k", 200 },
		{ "?a=1&%54OKEN=t0k", 401 },
		{ "?x=t%30k", 401 },
		{ "?x=%zz&y=t0k", 401 },
	};
	struct http_server *srv = NULL;
	struct seen s = { 0 };
	char err[ERR_LEN], req[512], buf[4096], name[160], extra[160];

	CHECK_OR_RETURN(http_listen(loop, "0", "t0k", handler, &s, &srv,
				    err) == 0,
			err, );
	/* the debug log, in a file: the token must never be in it */
	char logpath[] = "/tmp/test_http_log.XXXXXX";
	int logfd = mkstemp(logpath), saved = dup(2);
	CHECK_OR_RETURN(logfd >= 0 && saved >= 0, "8.0 a log file", );
	unlink(logpath);
	dup2(logfd, 2);
	log_set_level(LOG_DEBUG);
	const char *port = strrchr(http_server_addr(srv), ':') + 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *e = cases[i].extra, *at = strstr(e, "PORT");
		if (at)
			snprintf(extra, sizeof(extra), "%.*s%s%s",
				 (int)(at - e), e, port, at + 4);
		else
			snprintf(extra, sizeof(extra), "%s", e);
		int q = extra[0] == '?';
		int n = snprintf(req, sizeof(req),
				 "GET /t%s HTTP/1.1\r\nHost: localhost\r\n"
				 "%sConnection: close\r\n\r\n",
				 q ? extra : "", q ? "" : extra);
		int fd = connect_to(http_server_addr(srv));
		snprintf(name, sizeof(name), "8.%zu %s -> %d", i + 1,
			 cases[i].extra, cases[i].status);
		if (fd < 0 || send(fd, req, (size_t)n, 0) != n) {
			CHECK(0, name);
			if (fd >= 0)
				close(fd);
			continue;
		}
		settle_read(loop, fd, buf, sizeof(buf), "\r\n\r\n", 1);
		char want[16];
		snprintf(want, sizeof(want), "HTTP/1.1 %d", cases[i].status);
		CHECK(strncmp(buf, want, 12) == 0, name);
		if (cases[i].status == 401)
			CHECK(strstr(buf, "WWW-Authenticate: Basic") != NULL,
			      "8.x a browser is asked for the token");
		/* scoped to the paths served: cookies ignore ports, so
		 * another server on this host would get a Path=/ cookie
		 * with every request */
		char cookie[200];
		snprintf(cookie, sizeof(cookie),
			 "Set-Cookie: pyprof_token_%s=t0k; Path=/debug/pprof; "
			 "HttpOnly; SameSite=Strict\r\n"
			 "Set-Cookie: pyprof_token_%s=t0k; Path=/flamegraph; "
			 "HttpOnly; SameSite=Strict\r\n",
			 port, port);
		CHECK((strstr(buf, cookie) != NULL) ==
			      (q && cases[i].status == 200),
		      "8.y the cookie is set by ?token= only, for the "
		      "server's paths");
		CHECK(strstr(buf, "Path=/;") == NULL, "8.z no cookie for /");
		close(fd);
	}
	http_free(srv);
	log_set_level(getenv("HTTP_TEST_DEBUG") ? LOG_DEBUG : LOG_WARN);
	dup2(saved, 2);
	close(saved);
	char logbuf[16384];
	ssize_t ln = pread(logfd, logbuf, sizeof(logbuf) - 1, 0);
	close(logfd);
	logbuf[ln > 0 ? ln : 0] = 0;
	CHECK(ln > 0 && strstr(logbuf, "(token redacted)") != NULL,
	      "8.w the access lines were logged, redacted");
	CHECK(strstr(logbuf, "t0k") == NULL && strstr(logbuf, "t%30k") == NULL,
	      "8.v the token is never in the log, however the query spells "
	      "its key or value");
	if (strstr(logbuf, "t0k") || strstr(logbuf, "t%30k"))
		fputs(logbuf, stderr);
}

static const char get_wait[] = "GET /wait HTTP/1.1\r\nHost: localhost\r\n\r\n";

/* 1. A body that arrives in three parts, the buffer moving. Returns the
 * connection, kept alive, or -1. */
static int test_body_in_parts(struct loop *loop, struct http_server *srv,
			      struct seen *s)
{
	static char body[40000];
	char buf[8192];
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 26);
	int fd = connect_to(http_server_addr(srv));
	CHECK_OR_RETURN(fd >= 0, "1.1 connected", -1);
	char head[160];
	int hl = snprintf(head, sizeof(head),
			  "POST /debug/pprof/symbol HTTP/1.1\r\nHost: localhost\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  sizeof(body));
	CHECK(send(fd, head, (size_t)hl, 0) == hl, "1.2 head sent");
	size_t off = 0;
	for (int part = 0; part < 3; part++) {
		size_t n = part < 2 ? 9000 : sizeof(body) - off;
		CHECK(send(fd, body + off, n, 0) == (ssize_t)n, "1.3 part");
		off += n;
		run_for(loop, 20);
		fragment();
	}
	SETTLE(loop, s->n == 1);
	CHECK(s->n == 1, "1.4 one request served");
	CHECK(strcmp(s->method, "POST") == 0, "1.5 method intact");
	CHECK(strcmp(s->path, "/debug/pprof/symbol") == 0, "1.6 path intact");
	CHECK(s->body_len == sizeof(body) && s->body_ok, "1.7 body whole");
	settle_read(loop, fd, buf, sizeof(buf), "HTTP/1.1 200 OK\r\n", 1);
	CHECK(strstr(buf, "HTTP/1.1 200 OK\r\n") != NULL, "1.8 answered");
	return fd;
}

/* 2. Two pipelined requests in one write, answered in order on the same
 * (kept-alive) connection. */
static void test_pipelined(struct loop *loop, int fd, const struct seen *s)
{
	char buf[8192];
	const char *two = "GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n"
			  "GET /two HTTP/1.1\r\nHost: localhost\r\n\r\n";
	CHECK(send(fd, two, strlen(two), 0) == (ssize_t)strlen(two),
	      "2.1 sent");
	settle_read(loop, fd, buf, sizeof(buf), "HTTP/1.1 200", 2);
	CHECK(s->n == 3, "2.2 both served");
	char *one = strstr(buf, "\r\n\r\n/one"), *tw = strstr(buf, "/two");
	CHECK(one && tw && one < tw, "2.3 in order");
	CHECK(count(buf, "HTTP/1.1 200") == 2, "2.4 two answers");
}

/* 3. A malformed request: 400, X-Go-Pprof, closed; the handler never sees
 * it. Closes fd. */
static void test_malformed(struct loop *loop, int fd, const struct seen *s)
{
	char buf[8192];
	const char *bad = "GET /x HTTP/1.1\nHost: t\n\n";
	CHECK(send(fd, bad, strlen(bad), 0) == (ssize_t)strlen(bad),
	      "3.1 sent");
	size_t n = settle_read(loop, fd, buf, sizeof(buf), "bare LF", 1);
	CHECK(n > 0 && strstr(buf, "HTTP/1.1 400 Bad Request\r\n"),
	      "3.2 400");
	CHECK(strstr(buf, "X-Go-Pprof: 1\r\n") && strstr(buf, "bare LF"),
	      "3.3 Go's error form and the reason");
	CHECK(strstr(buf, "Connection: close\r\n") != NULL, "3.4 closing");
	CHECK(s->n == 3, "3.5 handler not called");
	char one_byte;
	CHECK(recv(fd, &one_byte, 1, 0) == 0, "3.6 closed by the server");
	close(fd);
}

/* 4. An answer deferred, then the client goes away: cancel. Leaves
 * answers deferred. */
static void test_cancel_on_close(struct loop *loop, struct http_server *srv,
				 struct seen *s)
{
	s->defer = 1;
	int fd = connect_to(http_server_addr(srv));
	CHECK(send(fd, get_wait, strlen(get_wait), 0) ==
		      (ssize_t)strlen(get_wait),
	      "4.1 sent");
	SETTLE(loop, s->waiting != NULL);
	CHECK(s->waiting != NULL && s->cancelled == 0, "4.2 waiting");
	close(fd);
	SETTLE(loop, s->cancelled == 1);
	CHECK(s->cancelled == 1 && s->waiting == NULL, "4.3 cancelled");
}

/* 5.1-5.5: a deferred answer given later arrives; then another request
 * on the same connection waits (for the shutdown). Returns the
 * connection, or -1. */
static int test_late_answer(struct loop *loop, struct http_server *srv,
			    struct seen *s)
{
	char buf[8192];
	int fd = connect_to(http_server_addr(srv));
	CHECK(send(fd, get_wait, strlen(get_wait), 0) ==
		      (ssize_t)strlen(get_wait),
	      "5.1 sent");
	SETTLE(loop, s->waiting != NULL);
	CHECK_OR_RETURN(s->waiting != NULL, "5.2 waiting", -1);
	http_error(s->waiting, 404, "nothing at %s", "/wait");
	s->waiting = NULL;
	settle_read(loop, fd, buf, sizeof(buf), "nothing at /wait\n", 1);
	CHECK(strstr(buf, "HTTP/1.1 404 Not Found\r\n") &&
		      strstr(buf, "nothing at /wait\n"),
	      "5.3 late answer");
	CHECK(send(fd, get_wait, strlen(get_wait), 0) ==
		      (ssize_t)strlen(get_wait),
	      "5.4 sent again (kept alive)");
	SETTLE(loop, s->waiting != NULL);
	CHECK(s->waiting != NULL, "5.5 waiting again");
	return fd;
}

int main(void)
{
	struct loop *loop = loop_new();
	struct http_server *srv = NULL;
	struct seen s = { 0 };
	char err[ERR_LEN], buf[8192];
	int fd;

	mallopt(M_PERTURB, 0xa5);
	/* Refusals are logged at info; HTTP_TEST_DEBUG=1 shows everything. */
	log_set_level(getenv("HTTP_TEST_DEBUG") ? LOG_DEBUG : LOG_WARN);
	CHECK_OR_RETURN(loop != NULL, "0.1 loop", 1);
	CHECK_OR_RETURN(http_listen(loop, "0", NULL, handler, &s, &srv,
				    err) == 0,
			err, 1);
	CHECK(strncmp(http_server_addr(srv), "127.0.0.1:", 10) == 0,
	      "0.2 a bare port binds 127.0.0.1");

	fd = test_body_in_parts(loop, srv, &s);
	if (fd < 0)
		return 1;
	test_pipelined(loop, fd, &s);
	test_malformed(loop, fd, &s);
	test_cancel_on_close(loop, srv, &s);
	fd = test_late_answer(loop, srv, &s);
	if (fd < 0)
		return 1;

	/* 5.6-5.7 come once the other tests ran: the shutdown cancels the
	 * request still waiting and answers 503. */
	s.defer = 0;
	model_test(loop, srv, &s);
	host_test(loop, srv);
	token_test(loop);
	http_free(srv);
	drain(fd, buf, sizeof(buf));
	CHECK(s.cancelled == 2, "5.6 shutdown cancels");
	CHECK(strstr(buf, "HTTP/1.1 503") && strstr(buf, "shutting down"),
	      "5.7 503 on shutdown");
	close(fd);

	for (int i = 0; i < n_keep; i++)
		free(keep[i]);
	loop_free(loop);
	return check_summary();
}
