/*
 * http.h - the collector's HTTP/1.1 server (--http), on its event loop.
 *
 * It owns the listening TCP socket and every client connection: reading
 * and parsing requests (http_parse.h), the access token, time-outs, keep-
 * alive and writing responses. What each path answers is decided by the
 * handler the collector gives it (http_pprof.c); a handler may answer at
 * once or later (a profile answers when its window closes), which is why
 * a connection waits in a state of its own meanwhile, watched only for
 * the client going away.
 *
 * Served on a loopback address, a request whose Host is not a loopback
 * name (localhost, 127.x.y.z, [::1]) is refused with 403: DNS rebinding
 * would otherwise let any web page read the pages.
 *
 * Per connection, one request at a time: bytes a client pipelines behind
 * a request wait in the buffer until the answer is written. Limits: a
 * request head of HTTP_MAX_HEAD bytes (431 past it), a body of
 * HTTP_MAX_BODY (413), HTTP_MAX_CONNS connections (past it, a newcomer
 * takes the place of the connection accepted first among those that never
 * carried the token and have no request being served; with none such, it
 * is answered 503 and closed). Time-outs: HTTP_FIRST_TIMEOUT_NS for a new
 * connection's first byte, HTTP_HEAD_TIMEOUT_NS to send a whole request
 * once it started, HTTP_IDLE_TIMEOUT_NS between keep-alive requests,
 * HTTP_WRITE_TIMEOUT_NS without any progress writing an answer (then the
 * connection is closed). A malformed request gets its error status and
 * the connection is closed after the answer (the rest is read and
 * discarded for a moment, so the client sees the answer rather than a
 * reset).
 *
 * Single-threaded (the collector's loop thread). Nothing blocks: a slow
 * client costs memory for its buffers, never time for the others or for
 * the sample stream.
 */
#ifndef PYPROF_HTTP_H
#define PYPROF_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/http_parse.h"
#include "common/errbuf.h"

struct loop;
struct http_server;
struct http_conn;

#define HTTP_MAX_BODY (64u << 10)
#define HTTP_MAX_CONNS 256
#define HTTP_MAX_CONNS_PER_PEER 8 /* of one user, http_listen_peers */
#define HTTP_HEAD_TIMEOUT_NS (10 * 1000000000ull)
#define HTTP_IDLE_TIMEOUT_NS (60 * 1000000000ull)
#define HTTP_FIRST_TIMEOUT_NS (5 * 1000000000ull)
#define HTTP_WRITE_TIMEOUT_NS (30 * 1000000000ull)

/* Called once per complete request (head and body) that passed the
 * token check. req and body point into the connection's buffer and are
 * valid until the handler answers. The handler answers with http_respond
 * or http_error, now or later; later, it must call http_set_cancel so it
 * hears if the connection goes away first. */
typedef void (*http_handler_fn)(void *arg, struct http_conn *c,
				const struct http_req *req, const char *body,
				size_t body_len);
/* Called when a connection waiting for an answer closes (client gone,
 * server shutting down); the handler must drop its reference to c. */
typedef void (*http_cancel_fn)(void *arg);

/* Whether the client of uid at the other end of fd is served by a
 * server of http_listen_peers: 1 or 0. */
typedef int (*http_peer_fn)(void *arg, int fd, uid_t uid);

/* Parses spec, "[ADDR:]PORT" (ADDR a name, an IPv4 address or an IPv6
 * address in brackets; without ADDR, 127.0.0.1; PORT 0 picks a free
 * port) or "unix:PATH" (or a PATH from "/": a Unix stream socket made as
 * listener.h makes the collector's, mode 0600), and listens there. token: NULL (no check), or the access token
 * every request must carry, as "Authorization: Bearer TOKEN", as the
 * password of "Authorization: Basic" (any user: a URL
 * http://user:TOKEN@host/), as a query parameter token=TOKEN (the answer
 * then sets the cookie pyprof_token_<port>, HttpOnly, SameSite=Strict, so
 * that a browser's next pages need not carry it), or as that cookie;
 * otherwise 401. Returns 0 and the server, or a negative
 * errno with the reason in err (ERR_LEN bytes): -EINVAL for a bad
 * spec, bind's error otherwise. */
int http_listen(struct loop *loop, const char *spec, const char *token,
		http_handler_fn handler, void *arg, struct http_server **out,
		char *err);
/* Listens on a Unix stream socket at path (an absolute path), made as
 * listener.h makes a shared collector socket (mode 0666 in a directory
 * of mode 0711 that is ours or root's), where each client is known by
 * the credentials the kernel gives at accept (SO_PEERCRED) rather than
 * by a token: none is asked for. check (may be NULL: everyone) decides
 * whether a client is served; one that is not gets 403 saying so to its
 * first request, whatever it asks, and is closed (the handler never
 * sees it). One user holds at most HTTP_MAX_CONNS_PER_PEER connections
 * at once (so at most as many windows): past it, 503 and closed. The
 * handler learns whom it
 * answers with http_conn_peer_uid. Returns as http_listen. */
int http_listen_peers(struct loop *loop, const char *path, http_peer_fn check,
		      void *check_arg, http_handler_fn handler, void *arg,
		      struct http_server **out, char *err);
/* The address actually bound, "127.0.0.1:8080", "[::1]:8080" or
 * "unix:/run/pyprof/http.sock". */
const char *http_server_addr(const struct http_server *s);
/* Closes the listener and every connection: those waiting for an answer
 * are told so through their cancel function and get 503 "shutting down"
 * if the socket takes it at once. NULL is fine. */
void http_free(struct http_server *s);

/* Answers the current request: status, Content-Type, extra header lines
 * (each ending in "\r\n", or NULL), and the body (copied; not sent for
 * HEAD). Keeps the connection open for the next request when the client
 * allows it. */
void http_respond(struct http_conn *c, int status, const char *content_type,
		  const char *extra_headers, const void *body, size_t len);
/* Answers an error the way Go's net/http/pprof does: text/plain, the
 * message and a newline, and the header X-Go-Pprof: 1 (so that go tool
 * pprof prints the message). */
void http_error(struct http_conn *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* See http_cancel_fn. */
void http_set_cancel(struct http_conn *c, http_cancel_fn fn, void *arg);
/* "127.0.0.1:45678", for logs ("unix uid 1001" on a server of
 * http_listen_peers). */
const char *http_conn_peer(const struct http_conn *c);
/* On a server of http_listen_peers: 0 and the client's uid, as the
 * kernel gave it when it connected. -1 on others (who holds the token
 * is not known). */
int http_conn_peer_uid(const struct http_conn *c, uid_t *uid);

/* The reason phrase of a status code ("Not Found"). */
const char *http_reason(int status);

#endif /* PYPROF_HTTP_H */
