/*
 * http.c - the HTTP/1.1 server on the collector's loop (see http.h).
 *
 * Each connection is a small state machine:
 *
 *   HEAD --(head parsed, body expected)--> BODY --(body read)--+
 *    ^  \--(head parsed, no body)------------------------------+--> WAIT
 *    |                                                              |
 *    +----(written, keep-alive)---- WRITE <--(handler answers)------+
 *                                     |
 *                 (written, close) -> LINGER --(EOF or 2 s)--> closed
 *
 * In HEAD and BODY the connection is read (EPOLLIN) under a time-out; in
 * WAIT the handler has the request and only EPOLLRDHUP is watched, so a
 * client that goes away cancels the work (a profile window) at once while
 * bytes it pipelined stay unread in the kernel; WRITE waits for EPOLLOUT;
 * LINGER has sent its answer and shut down its side, and reads whatever
 * the client still sends until it closes, so that unread bytes do not
 * turn our close into a reset that destroys the answer in flight.
 *
 * Re-entrancy: a handler may answer inside the call (most do), and the
 * answer may complete at once, so the next pipelined request would be
 * parsed from inside the previous one's handler. process() is therefore
 * a loop that never recurses (in_process), and a connection closed while
 * process() runs is only marked dead and freed when it returns.
 *
 * The listening sockets, accepting and the server's end are
 * http_listen.c's; the structs both share are http_impl.h's.
 *
 * Runs on the collector's loop thread.
 */
#include "http/http.h"
#include "http/http_impl.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/dlist.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/daemon_api.h"

#define HTTP_LINGER_NS (2 * 1000000000ull)
#define HTTP_READS_PER_EVENT 4
#define HTTP_INITIAL_BUF 4096
/* Refused requests are logged at info, at most this many a minute (a
 * scanner must not flood the log); the rest at debug. */
#define HTTP_LOG_REFUSED_PER_MIN 10

const char *http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 301:
		return "Moved Permanently";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

/* ---- connection lifetime ----------------------------------------------------- */

static void on_conn(struct loop *loop, int fd, uint32_t events, void *arg);
static void on_conn_timer(struct loop *loop, struct loop_timer *t,
			  void *arg);
static void process(struct http_conn *c);

static void set_timer(struct http_conn *c, uint64_t ns)
{
	loop_del_timer(c->srv->loop, c->timer);
	c->timer = ns ? loop_add_timer(c->srv->loop, ns, 0, on_conn_timer, c)
		      : NULL;
	/* Without memory for a timer the connection has no time-out; it
	 * still ends with its client. */
}

void http_conn_free(struct http_conn *c)
{
	struct http_server *s = c->srv;
	DLIST_UNLINK(s->conns, c);
	s->n_conns--;
	free(c->in);
	free(c->out);
	free(c);
}

/* Closes the socket now; frees c now or, inside process(), when it
 * returns. A handler waiting to answer is told. */
void http_conn_close(struct http_conn *c)
{
	if (c->fd < 0)
		return;
	if (c->cancel) {
		http_cancel_fn fn = c->cancel;
		c->cancel = NULL;
		fn(c->cancel_arg);
	}
	loop_del_fd(c->srv->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	set_timer(c, 0);
	c->dead = 1;
	if (!c->in_process)
		http_conn_free(c);
}

/* Cannot fail for a registered fd (epoll_ctl MOD needs no memory); if
 * it did, the time-out still ends the connection. */
static void set_events(struct http_conn *c, uint32_t events)
{
	int rc = loop_mod_fd(c->srv->loop, c->fd, events);
	if (rc < 0)
		log_warn("http %s: epoll: %s", c->peer, strerror(-rc));
}

/* ---- writing ------------------------------------------------------------------ */

static void start_linger(struct http_conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->state = C_LINGER;
	set_timer(c, HTTP_LINGER_NS);
	set_events(c, EPOLLIN | EPOLLRDHUP);
}

/* The answer is out: on to the next request, or close. */
static void written(struct http_conn *c)
{
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->close_after) {
		start_linger(c);
		return;
	}
	memmove(c->in, c->in + c->req_total, c->in_len - c->req_total);
	c->in_len -= c->req_total;
	c->req_total = 0;
	c->state = C_HEAD;
	c->head_timed = c->in_len > 0;
	set_timer(c, c->in_len ? HTTP_HEAD_TIMEOUT_NS : HTTP_IDLE_TIMEOUT_NS);
	set_events(c, EPOLLIN | EPOLLRDHUP);
	if (!c->in_process && !c->dead)
		process(c); /* requests pipelined behind this one */
}

static void do_write(struct http_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += (size_t)n;
			set_timer(c, HTTP_WRITE_TIMEOUT_NS);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			set_events(c, EPOLLOUT);
			return;
		}
		log_debug("http %s: write: %s", c->peer,
			  n < 0 ? strerror(errno) : "nothing written");
		http_conn_close(c);
		return;
	}
	written(c);
}

/* 1 if str, percent-decoded, may carry the token: it holds the server's
 * token, or (key set) "token" in any case, or it does not decode. */
static int decoded_holds(struct http_str str, int key, const char *tok)
{
	size_t tl = tok ? strlen(tok) : 0;
	if (!str.len)
		return 0;
	char *d = malloc(str.len + 1);
	if (!d)
		return 1;
	int n = http_decode(str, 1, d, str.len + 1);
	int found = n < 0 || (tl && memmem(d, (size_t)n, tok, tl));
	for (int i = 0; key && !found && i + 5 <= n; i++)
		found = strncasecmp(d + i, "token", 5) == 0;
	free(d);
	return found;
}

/* What of the request's target the log may show: 2 all of it, 1 its
 * path only (a query key with "token" in it once percent-decoded, as
 * ?%74oken= is ?token= to the server; the server's token anywhere in the
 * query; a query that does not decode), 0 nothing (the path holds the
 * token, raw or decoded). */
static int holds(struct http_str v, const char *tok)
{
	return v.p && v.len && memmem(v.p, v.len, tok, strlen(tok));
}

static int loggable(const struct http_server *s, const struct http_req *r)
{
	const char *tok = s->token && *s->token ? s->token : NULL;
	if (tok && (holds(r->path, tok) || decoded_holds(r->path, 0, tok)))
		return 0;
	if (tok && holds(r->query, tok))
		return 1;
	return decoded_holds(r->query, 1, tok) ? 1 : 2;
}

static void access_log(const struct http_conn *c, int status, size_t len)
{
	const struct http_req *r = &c->req;
	if (!r->method.p || !r->target.p) {
		log_debug("http %s: -> %d (%zu bytes)", c->peer, status, len);
		return;
	}
	int show = loggable(c->srv, r), redact = show < 2;
	struct http_str shown = show == 2 ? r->target : r->path;
	if (show == 0)
		shown = (struct http_str){ "/", 1 };
	log_debug("http %s: %.*s %.*s%s -> %d (%zu bytes, %.1f ms)", c->peer,
		  (int)(r->method.len > 16 ? 16 : r->method.len), r->method.p,
		  (int)(shown.len > 200 ? 200 : shown.len), shown.p,
		  redact ? "?(token redacted)" : "", status, len,
		  (double)(loop_now_ns() - c->t_start) / 1e6);
}

void http_respond(struct http_conn *c, int status, const char *content_type,
		  const char *extra_headers, const void *body, size_t len)
{
	char date[64], head[1536], cookie[800] = "";
	struct tm tm;
	time_t now = time(NULL);
	int n;

	if (c->dead || c->fd < 0)
		return;
	c->cancel = NULL;
	if (!c->req.keep_alive)
		c->close_after = 1;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (c->set_cookie && c->srv->token &&
	    !c->srv->token[strcspn(c->srv->token, "\",;\\")]) {
		/* HttpOnly: no script reads it; SameSite=Strict: no other
		 * site's page sends it. Cookies ignore ports: the port in
		 * its name keeps two collectors' apart, and its paths (one
		 * cookie for each tree this server serves) keep a browser
		 * from sending it to every page of another server on this
		 * host, only to these paths there. (A token given with bytes
		 * a cookie value cannot hold is not set: ?token= then works
		 * for each request only.) */
		if ((size_t)snprintf(cookie, sizeof(cookie),
				     "Set-Cookie: %s=%s; Path=/debug/pprof; HttpOnly; "
				     "SameSite=Strict\r\n"
				     "Set-Cookie: %s=%s; Path=/flamegraph; HttpOnly; "
				     "SameSite=Strict\r\n",
				     c->srv->cookie, c->srv->token, c->srv->cookie,
				     c->srv->token) >= sizeof(cookie))
			cookie[0] = 0; /* a token too long for it */
	}
	c->set_cookie = 0;
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\n"
		     "Date: %s\r\n"
		     "Content-Type: %s\r\n"
		     "Content-Length: %zu\r\n"
		     "X-Content-Type-Options: nosniff\r\n"
		     "%s%s%s\r\n",
		     status, http_reason(status), date, content_type, len,
		     extra_headers ? extra_headers : "", cookie,
		     c->close_after ? "Connection: close\r\n"
		     /* HTTP/1.0 keeps a connection only when told so */
		     : c->req.minor == 0 ? "Connection: keep-alive\r\n"
					 : "");
	if (n < 0 || (size_t)n >= sizeof(head)) {
		http_conn_close(c);
		return;
	}
	access_log(c, status, len);
	if (c->is_head)
		len = 0;
	free(c->out);
	c->out = malloc((size_t)n + len);
	if (!c->out) {
		log_warn("http %s: out of memory for a %zu-byte answer",
			 c->peer, len);
		http_conn_close(c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	if (len)
		memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->out_off = 0;
	c->state = C_WRITE;
	do_write(c);
}

void http_error(struct http_conn *c, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	msg[n++] = '\n';
	msg[n] = 0;
	http_respond(c, status, "text/plain; charset=utf-8", "X-Go-Pprof: 1\r\n",
		     msg, (size_t)n);
}

void http_set_cancel(struct http_conn *c, http_cancel_fn fn, void *arg)
{
	c->cancel = fn;
	c->cancel_arg = arg;
}

const char *http_conn_peer(const struct http_conn *c)
{
	return c->peer;
}

int http_conn_peer_uid(const struct http_conn *c, uid_t *uid)
{
	if (!c->srv->by_peer)
		return -1;
	*uid = c->uid;
	return 0;
}

/* ---- reading and dispatching ---------------------------------------------------- */

/* Constant time in the token's length, so that timing does not tell how
 * much of a guess was right. */
static int token_eq(const char *token, const char *p, size_t len)
{
	size_t tl = strlen(token);
	unsigned diff = (unsigned)(tl != len);
	for (size_t i = 0; i < tl; i++)
		diff |= (unsigned char)token[i] ^
			(unsigned char)(i < len ? p[i] : 0);
	return diff == 0;
}

/* Decodes standard base64 (with padding) from s into out (cap bytes,
 * NUL-terminated). The length, or -1 when malformed or too long. */
static int base64_decode(struct http_str s, char *out, size_t cap)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789+/";
	uint32_t acc = 0;
	size_t n = 0, bits = 0, i = 0;

	for (; i < s.len && s.p[i] != '='; i++) {
		const char *at = memchr(abc, s.p[i], 64);
		if (!at || !s.p[i])
			return -1;
		acc = (acc << 6) | (uint32_t)(at - abc);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= cap)
				return -1;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	for (; i < s.len; i++)
		if (s.p[i] != '=')
			return -1;
	out[n] = 0;
	return memchr(out, 0, n) ? -1 : (int)n;
}

/* How a request carries the token, each as a client can send it:
 *   Authorization: Bearer TOKEN    curl -H, scripts
 *   Authorization: Basic (any user):TOKEN
 *                                  a URL http://user:TOKEN@host/..., as
 *                                  go tool pprof, curl and Python send it
 *   ?token=TOKEN                   any URL (go tool pprof included)
 *   Cookie: pyprof_token_<port>=TOKEN
 *                                  a browser, after a page opened with
 *                                  ?token= set it
 * Returns 0 (refused), 1, or 2 when it came in the query (the answer
 * then sets the cookie). */
static int authorized(const struct http_server *s, const struct http_req *r)
{
	char q[256];
	const struct http_str a = r->authorization;
	if (!s->token)
		return 1;
	if (a.len > 7 && http_str_case_eq((struct http_str){ a.p, 7 }, "Bearer ") &&
	    token_eq(s->token, a.p + 7, a.len - 7))
		return 1;
	if (a.len > 6 && http_str_case_eq((struct http_str){ a.p, 6 },
					  "Basic ")) {
		int n = base64_decode((struct http_str){ a.p + 6, a.len - 6 },
				      q, sizeof(q));
		char *colon = n > 0 ? memchr(q, ':', (size_t)n) : NULL;
		if (colon && token_eq(s->token, colon + 1,
				      (size_t)(q + n - colon - 1)))
			return 1;
	}
	/* Cookie: a=1; pyprof_token_6060=TOKEN; b=2 */
	size_t cl = strlen(s->cookie);
	for (size_t i = 0; i < r->cookie.len;) {
		size_t end = i;
		while (end < r->cookie.len && r->cookie.p[end] != ';')
			end++;
		while (i < end && r->cookie.p[i] == ' ')
			i++;
		if (end - i > cl && memcmp(r->cookie.p + i, s->cookie, cl) == 0 && r->cookie.p[i + cl] == '=' &&
		    token_eq(s->token, r->cookie.p + i + cl + 1,
			     end - i - cl - 1))
			return 1;
		i = end + 1;
	}
	int rc = http_query_get(r->query, "token", q, sizeof(q));
	return rc == 1 && token_eq(s->token, q, strlen(q)) ? 2 : 0;
}

/* A request that cannot be served: answer and close. */
static void reject(struct http_conn *c, int status, const char *why)
{
	c->close_after = 1;
	c->is_head = 0;
	c->state = C_WAIT; /* http_respond writes from here */
	struct http_server *s = c->srv;
	uint64_t minute = loop_now_ns() / (60 * 1000000000ull);
	if (minute != s->refused_minute) {
		s->refused_minute = minute;
		s->n_refused = 0;
	}
	s->n_refused++;
	if (s->n_refused <= HTTP_LOG_REFUSED_PER_MIN)
		log_info("http %s: request refused: %d %s%s", c->peer, status,
			 why, s->n_refused == HTTP_LOG_REFUSED_PER_MIN ? " (more this minute at debug level)" : "");
	else
		log_debug("http %s: request refused: %d %s", c->peer, status,
			  why);
	http_error(c, status, "%s", why);
}

/* Whether a browser says another site's page made req: Sec-Fetch-Site
 * other than same-origin or none (the user's own navigation), or an
 * Origin whose host and port are not the Host asked for. Clients that
 * are no browser (go tool pprof, curl, scrapers) send neither. */
static int cross_site(const struct http_req *req)
{
	struct http_str o = req->origin;

	if (req->fetch_site.len && !http_str_case_eq(req->fetch_site, "same-origin") &&
	    !http_str_case_eq(req->fetch_site, "none"))
		return 1;
	if (!o.len)
		return 0;
	if (o.len > 7 && !strncmp(o.p, "http://", 7)) {
		o.p += 7;
		o.len -= 7;
	} else {
		return 1; /* "null", https://..., anything else */
	}
	return o.len != req->host.len || memcmp(o.p, req->host.p, o.len) != 0;
}

static void dispatch(struct http_conn *c)
{
	struct http_server *s = c->srv;
	c->state = C_WAIT;
	c->head_timed = 0;
	c->t_start = loop_now_ns();
	c->is_head = http_str_eq(c->req.method, "HEAD");
	set_timer(c, 0);
	set_events(c, EPOLLRDHUP);
	if (c->dead)
		return;
	if (c->refused) {
		c->close_after = 1;
		if (c->uid == (uid_t)-1)
			http_error(c, 403, "the kernel did not say who you are "
					   "(SO_PEERCRED): nothing is served");
		else
			http_error(c, 403, "uid %u is not served by this "
					   "collector: only the users whose programs "
					   "it profiles (its own, --allow-user, "
					   "--allow-group) see their own processes "
					   "here",
				   (unsigned)c->uid);
		return;
	}
	/* DNS rebinding: a web page the user visits could have its own name
	 * resolve to 127.0.0.1 and read our pages as its own origin. A
	 * browser always says which name it asked for; on loopback only
	 * loopback names are served. */
	if (s->loopback && c->req.host.len && !http_host_is_loopback(c->req.host)) {
		http_error(c, 403, "Host '%.*s' is not a loopback name: this "
				   "collector serves only localhost, 127.0.0.1 and "
				   "[::1] (DNS rebinding); --http ADDR:PORT serves "
				   "other addresses",
			   (int)(c->req.host.len > 100 ? 100 : c->req.host.len),
			   c->req.host.p);
		return;
	}
	/* Cross-site requests (CSRF): a page of another web server, on this
	 * host too, makes the browser send what it holds for us (the
	 * cookie, cached Basic credentials) with a request of its own, and
	 * every request may switch sampling on. A browser says where a
	 * request comes from (Sec-Fetch-Site; Origin on scripts' requests):
	 * only our own pages and what the user opened by hand are served. */
	if (cross_site(&c->req)) {
		http_error(c, 403, "a request made by another site's page "
				   "(Sec-Fetch-Site: %.*s%s%.*s): open the page "
				   "yourself (type or paste its URL)",
			   (int)(c->req.fetch_site.len > 40 ? 40
							    : c->req.fetch_site.len),
			   c->req.fetch_site.p, c->req.origin.len ? ", Origin: " : "",
			   (int)(c->req.origin.len > 100 ? 100 : c->req.origin.len),
			   c->req.origin.p);
		return;
	}
	int auth = authorized(s, &c->req);
	if (!auth) {
		static const char msg[] =
			"missing or wrong access token: add ?token=TOKEN to "
			"the URL, or put it in the URL as "
			"http://pyprof:TOKEN@HOST:PORT/..., or send "
			"Authorization: Bearer TOKEN (the token is in the file "
			"the collector named when it started)\n";
		http_respond(c, 401, "text/plain; charset=utf-8",
			     /* A browser asks for a user and password: any
			      * user, the token as password. */
			     "WWW-Authenticate: Basic realm=\"pyprof\", "
			     "charset=\"UTF-8\"\r\n"
			     "WWW-Authenticate: Bearer realm=\"pyprof\"\r\n"
			     "X-Go-Pprof: 1\r\n",
			     msg, sizeof(msg) - 1);
		return;
	}
	c->set_cookie = auth == 2;
	c->authed = 1;
	s->handler(s->arg, c, &c->req, c->in + c->req.head_len,
		   c->req_total - c->req.head_len);
}

/* Parses and serves what the buffer holds, request after request, until
 * more bytes are needed or an answer is on its way. */
static void process(struct http_conn *c)
{
	c->in_process = 1;
	while (!c->dead && (c->state == C_HEAD || c->state == C_BODY)) {
		if (c->state == C_HEAD) {
			const char *why;
			int rc = http_parse_request(c->in, c->in_len, &c->req,
						    &why);
			if (rc < 0) {
				reject(c, -rc, why);
				break;
			}
			if (rc == 0) {
				if (c->in_len && !c->head_timed) {
					c->head_timed = 1;
					set_timer(c, HTTP_HEAD_TIMEOUT_NS);
				}
				break;
			}
			if (c->req.content_length > HTTP_MAX_BODY) {
				reject(c, 413, "request body too large");
				break;
			}
			c->req_total = c->req.head_len +
				       (size_t)c->req.content_length;
			c->state = C_BODY;
			if (c->req.expect_continue && c->req.content_length &&
			    c->in_len < c->req_total) {
				static const char cont[] =
					"HTTP/1.1 100 Continue\r\n\r\n";
				/* Best effort: a client that does not get it
				 * sends its body after a second anyway. */
				if (send(c->fd, cont, sizeof(cont) - 1,
					 MSG_NOSIGNAL) < 0)
					log_debug("http %s: 100 Continue: %s",
						  c->peer, strerror(errno));
			}
		}
		if (c->in_len < c->req_total) {
			/* The body is still coming, under the request's
			 * time-out (started now if the head came at once). */
			if (!c->head_timed) {
				c->head_timed = 1;
				set_timer(c, HTTP_HEAD_TIMEOUT_NS);
			}
			break;
		}
		if (c->in_len > c->req.head_len) {
			/* The buffer may have moved (grown for the body)
			 * since the head was parsed: parse it again, so that
			 * req points into it. Same bytes, same result. */
			const char *why;
			int rc = http_parse_request(c->in, c->in_len, &c->req,
						    &why);
			assert(rc == 1);
			(void)rc;
		}
		dispatch(c);
	}
	c->in_process = 0;
	if (c->dead)
		http_conn_free(c);
}

/* Reads what the socket has into the buffer, growing it up to what the
 * current state may need. Returns 0, or -1 when the connection ended. */
static int do_read(struct http_conn *c)
{
	for (int i = 0; i < HTTP_READS_PER_EVENT; i++) {
		/* One byte past the head limit is enough to know it is
		 * exceeded; a body is read up to its end. */
		size_t want = c->state == C_BODY ? c->req_total
						 : HTTP_MAX_HEAD + 1;
		if (c->in_len >= want)
			return 0; /* process() decides */
		if (c->in_len == c->in_cap) {
			size_t cap = c->in_cap ? 2 * c->in_cap
					       : HTTP_INITIAL_BUF;
			if (cap > want)
				cap = want;
			char *p = realloc(c->in, cap);
			if (!p)
				return -1;
			c->in = p;
			c->in_cap = cap;
		}
		size_t room = (c->in_cap < want ? c->in_cap : want) - c->in_len;
		ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1; /* EOF (a partial request is dropped) or error */
	}
	return 0;
}

static void on_conn(struct loop *loop, int fd, uint32_t events, void *arg)
{
	struct http_conn *c = arg;
	char sink[4096];
	(void)loop;
	(void)fd;

	switch (c->state) {
	case C_HEAD:
	case C_BODY:
		if (do_read(c) < 0) {
			/* Serve what is complete; a partial request dies
			 * with its connection. */
			process(c);
			if (!c->dead && c->state != C_WRITE)
				http_conn_close(c);
			else if (!c->dead)
				c->close_after = 1;
			return;
		}
		process(c);
		return;
	case C_WAIT:
		/* Only hang-ups and errors are watched here. */
		log_debug("http %s: client went away before its answer",
			  c->peer);
		http_conn_close(c);
		return;
	case C_WRITE:
		if (events & (EPOLLERR | EPOLLHUP)) {
			http_conn_close(c);
			return;
		}
		do_write(c);
		return;
	case C_LINGER:
		for (int i = 0; i < HTTP_READS_PER_EVENT; i++) {
			ssize_t n = recv(c->fd, sink, sizeof(sink), 0);
			if (n > 0)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			http_conn_close(c);
			return;
		}
		return;
	}
}

static void on_conn_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct http_conn *c = arg;
	(void)loop;
	(void)t;
	c->timer = NULL; /* one-shot: freed by the loop on return */
	if ((c->state == C_HEAD && c->in_len) || c->state == C_BODY) {
		log_debug("http %s: request not complete in time", c->peer);
		c->req = (struct http_req){ 0 };
		reject(c, 408, "request not complete in time");
		return;
	}
	if (c->state == C_WRITE)
		log_debug("http %s: client not reading its answer; closing",
			  c->peer);
	http_conn_close(c);
}

int http_conn_start(struct http_conn *c)
{
	if (loop_add_fd(c->srv->loop, c->fd, EPOLLIN | EPOLLRDHUP, on_conn, c) < 0)
		return -1;
	c->born_ns = loop_now_ns();
	set_timer(c, HTTP_FIRST_TIMEOUT_NS);
	return 0;
}
