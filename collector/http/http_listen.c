/*
 * http_listen.c - the HTTP server's listening side (see http.h): the
 * sockets of --http ([ADDR:]PORT or unix:PATH) and --http-members, each
 * client accepted or turned away (too many connections, of one user, a
 * member not served), and the server's end (http_free). What a
 * connection then does is http.c's.
 *
 * Called by main_collector.c (http_listen, http_listen_peers, http_free)
 * through http_pprof.c; runs on the collector's loop thread.
 */
#include "http/http.h"
#include "http/http_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/dlist.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/daemon_api.h"

#define HTTP_ACCEPT_PAUSE_NS (100 * 1000000ull)

static void format_addr(const struct sockaddr *sa, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, cap, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, cap, "[%s]:%u", host, port);
	} else if (sa->sa_family == AF_UNIX) {
		snprintf(out, cap, "unix");
	} else {
		snprintf(out, cap, "?");
	}
}

static void on_accept_resume(struct loop *loop, struct loop_timer *t,
			     void *arg)
{
	struct http_server *s = arg;
	(void)t;
	if (s->fd >= 0)
		loop_mod_fd(loop, s->fd, EPOLLIN);
}

/* Makes room for a new connection when HTTP_MAX_CONNS are open: closes
 * the one accepted first among those that never carried the token and
 * are between requests (waiting for a first or next request, or for its
 * head to arrive: nothing of theirs is being served). Idle connections
 * from anyone must not lock out the token's holders. 0, or -1 when every
 * connection is busy or authenticated. */
static int evict_one(struct http_server *s)
{
	struct http_conn *old = NULL;
	for (struct http_conn *c = s->conns; c; c = c->next)
		if (!c->dead && !c->authed &&
		    (c->state == C_HEAD || c->state == C_LINGER) &&
		    (!old || c->born_ns < old->born_ns))
			old = c;
	if (!old)
		return -1;
	log_debug("http %s: closed after %" PRIu64 " ms without a request "
		  "carrying the token, to make room",
		  old->peer,
		  (loop_now_ns() - old->born_ns) / 1000000);
	http_conn_close(old);
	return 0;
}

/* A by_peer server's client: its uid from the kernel (SO_PEERCRED) in
 * *uid, and whether it is served (the server's check): 0 served, -1 not
 * (or the kernel did not say). A client that is not served gets 403 to
 * its first request, whatever it asks (dispatch), rather than a closed
 * socket: curl and others take a connection closed at once for a server
 * that is not there, and the user would not learn why. */
static int peer_served(struct http_server *s, int fd, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    len != sizeof(cred)) {
		log_warn("http %s: SO_PEERCRED: %s", s->addr, strerror(errno));
		return -1;
	}
	*uid = cred.uid;
	if (!s->check || s->check(s->check_arg, fd, cred.uid))
		return 0;
	log_info("http %s: uid %u refused: not served by this collector",
		 s->addr, (unsigned)cred.uid);
	return -1;
}

/* Open connections of uid on a by_peer server. */
static int peer_conns(const struct http_server *s, uid_t uid)
{
	int n = 0;
	for (const struct http_conn *c = s->conns; c; c = c->next)
		n += !c->dead && !c->refused && c->uid == uid;
	return n;
}

static void accept_one(struct http_server *s, int fd,
		       const struct sockaddr *sa)
{
	static const char busy_user[] =
		"HTTP/1.1 503 Service Unavailable\r\n"
		"Content-Type: text/plain; charset=utf-8\r\n"
		"X-Go-Pprof: 1\r\nConnection: close\r\nContent-Length: 39\r\n"
		"\r\ntoo many HTTP connections of your user\n";
	static const char busy[] =
		"HTTP/1.1 503 Service Unavailable\r\n"
		"Content-Type: text/plain; charset=utf-8\r\n"
		"X-Go-Pprof: 1\r\nConnection: close\r\nContent-Length: 22\r\n"
		"\r\ntoo many HTTP clients\n";
	struct http_conn *c;
	uid_t uid = (uid_t)-1;
	int refused = s->by_peer && peer_served(s, fd, &uid) < 0;

	if (s->by_peer && !refused &&
	    peer_conns(s, uid) >= HTTP_MAX_CONNS_PER_PEER) {
		/* one user must not hold every connection (nor, one window
		 * per connection, every window) of the members' socket */
		log_info("http %s: uid %u holds %d connections already: "
			 "turned away",
			 s->addr, (unsigned)uid, HTTP_MAX_CONNS_PER_PEER);
		if (send(fd, busy_user, sizeof(busy_user) - 1, MSG_NOSIGNAL) < 0)
			log_debug("http: 503 to a client: %s", strerror(errno));
		close(fd);
		return;
	}
	if (s->n_conns >= HTTP_MAX_CONNS && evict_one(s) < 0) {
		/* Best effort and non-blocking; the client learns why. */
		if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0)
			log_debug("http: 503 to a client: %s", strerror(errno));
		close(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	/* Each answer is written whole at once, so Nagle's algorithm only
	 * holds back its last segment (or the next pipelined answer) until
	 * the client's delayed ACK, up to 40 ms. Go turns it off on every
	 * TCP connection too. */
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 &&
	    sa->sa_family != AF_UNIX)
		log_debug("http: TCP_NODELAY: %s", strerror(errno));
	c->srv = s;
	c->fd = fd;
	c->state = C_HEAD;
	c->uid = uid;
	c->refused = refused;
	format_addr(sa, c->peer, sizeof(c->peer));
	if (s->by_peer) /* the log's name, and the scrape key's host */
		snprintf(c->peer, sizeof(c->peer), "unix uid %u", (unsigned)uid);
	DLIST_PUSH(s->conns, c);
	s->n_conns++;
	if (http_conn_start(c) < 0) {
		close(fd);
		http_conn_free(c);
	}
}

static void on_listener(struct loop *loop, int lfd, uint32_t events,
			void *arg)
{
	struct http_server *s = arg;
	(void)events;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_one(s, fd, (struct sockaddr *)&ss);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		/* Out of fds or memory: the pending client stays queued and
		 * level-triggered epoll would spin on it. */
		log_warn("http: accept: %s; pausing for 100 ms",
			 strerror(errno));
		if (loop_mod_fd(loop, lfd, 0) == 0 &&
		    !loop_add_timer(loop, HTTP_ACCEPT_PAUSE_NS, 0,
				    on_accept_resume, s))
			loop_mod_fd(loop, lfd, EPOLLIN);
		return;
	}
}

/* "[ADDR:]PORT" into host and port strings. */
static int split_spec(const char *spec, char *host, size_t hcap, char *port,
		      size_t pcap)
{
	const char *colon = strrchr(spec, ':');
	const char *p = colon ? colon + 1 : spec;
	size_t hl = colon ? (size_t)(colon - spec) : 0;
	const char *h = spec;
	uint64_t v;

	if (http_parse_uint(p, 65535, &v) < 0 || strlen(p) >= pcap)
		return -EINVAL;
	snprintf(port, pcap, "%s", p);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	} else if (memchr(h, ':', hl)) {
		return -EINVAL; /* IPv6 wants brackets */
	}
	if (hl >= hcap)
		return -EINVAL;
	if (hl == 0)
		snprintf(host, hcap, "127.0.0.1");
	else
		snprintf(host, hcap, "%.*s", (int)hl, h);
	return 0;
}

/* The path of a Unix socket spec ("unix:PATH", or a path from "/"),
 * else NULL. */
static const char *unix_path(const char *spec)
{
	if (!strncmp(spec, "unix:", 5))
		return spec + 5;
	return spec[0] == '/' ? spec : NULL;
}

/* --http unix:PATH: the socket is made as the collector's own (listener.h:
 * a directory nobody else may write unless it is sticky, no symbolic
 * link, a live server's socket left alone, mode 0600; shared, for
 * --http-members: 0666 in a 0711 directory, each client's credentials
 * deciding what it sees). Who may connect
 * is then the file system's decision, so no other local user can take
 * the address while the collector is down, as with a TCP port. */
static int listen_unix(struct http_server *s, const char *spec,
		       const char *path, int shared, char *err)
{
	char lerr[ERR_LEN];
	int rc;

	if (!path[0] || path[0] != '/') {
		if (shared)
			snprintf(err, ERR_LEN, "--http-members wants an "
					       "absolute path, not '%s'",
				 spec);
		else
			snprintf(err, ERR_LEN,
				 "--http wants [ADDR:]PORT or "
				 "unix:/ABSOLUTE/PATH, not '%s'",
				 spec);
		return -EINVAL;
	}
	if ((rc = listener_open(path, shared, &s->lis, lerr)) < 0) {
		/* lerr names the path */
		snprintf(err, ERR_LEN, "%s: %.230s",
			 shared ? "--http-members" : "--http", lerr);
		return rc;
	}
	/* listener_open took no path longer than a sun_path: it fits */
	snprintf(s->addr, sizeof(s->addr), "unix:%s", path);
	/* no browser reaches a Unix socket: the cookie's name only has to
	 * be one */
	snprintf(s->cookie, sizeof(s->cookie), "pyprof_token_unix");
	return 0;
}

/* --http [ADDR:]PORT, resolved to ai: the socket bound and listening in
 * *fd (set as soon as it exists, for the caller to close on failure),
 * and s's address, token cookie and loopback flag from the address it
 * got. 0, or a negative errno with the reason in err. */
static int listen_tcp(struct http_server *s, const struct addrinfo *ai,
		      const char *spec, int *fd, char *err)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1;

	*fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		     0);
	if (*fd < 0 ||
	    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(*fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(*fd, 128) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&ss, &sl) < 0) {
		int rc = -errno;
		snprintf(err, ERR_LEN, "--http %s: cannot listen: %s",
			 spec, strerror(errno));
		return rc;
	}
	format_addr((struct sockaddr *)&ss, s->addr, sizeof(s->addr));
	snprintf(s->cookie, sizeof(s->cookie), "pyprof_token_%u",
		 (unsigned)ntohs(ss.ss_family == AF_INET6
					 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					 : ((struct sockaddr_in *)&ss)->sin_port));
	if (ss.ss_family == AF_INET)
		s->loopback = (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	else if (ss.ss_family == AF_INET6)
		s->loopback = IN6_IS_ADDR_LOOPBACK(
			&((struct sockaddr_in6 *)&ss)->sin6_addr);
	return 0;
}

int http_listen(struct loop *loop, const char *spec, const char *token,
		http_handler_fn handler, void *arg, struct http_server **out,
		char *err)
{
	const char *upath = unix_path(spec);
	struct addrinfo hints = { 0 }, *ai = NULL;
	struct http_server *s = NULL;
	char host[256], port[8];
	int fd = -1, rc, gai;

	*out = NULL;
	if (upath) {
		s = calloc(1, sizeof(*s));
		if (!s || (token && !(s->token = strdup(token)))) {
			snprintf(err, ERR_LEN, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
		s->loop = loop;
		s->handler = handler;
		s->arg = arg;
		if ((rc = listen_unix(s, spec, upath, 0, err)) < 0)
			goto out;
		fd = listener_fd(s->lis);
		goto watch;
	}
	if (split_spec(spec, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, ERR_LEN,
			 "--http wants [ADDR:]PORT (PORT 0 to 65535, an IPv6 "
			 "ADDR in brackets) or unix:/PATH, not '%s'",
			 spec);
		return -EINVAL;
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	gai = getaddrinfo(host, port, &hints, &ai);
	if (gai != 0) {
		snprintf(err, ERR_LEN, "--http %s: %s", spec,
			 gai_strerror(gai));
		return -EINVAL;
	}
	rc = -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s || (token && !(s->token = strdup(token)))) {
		snprintf(err, ERR_LEN, "out of memory");
		goto out;
	}
	s->loop = loop;
	s->handler = handler;
	s->arg = arg;
	if ((rc = listen_tcp(s, ai, spec, &fd, err)) < 0)
		goto out;
watch:
	if ((rc = loop_add_fd(loop, fd, EPOLLIN, on_listener, s)) < 0) {
		snprintf(err, ERR_LEN, "--http: cannot watch the "
				       "socket: %s",
			 strerror(-rc));
		goto out;
	}
	s->fd = fd;
	fd = -1;
	*out = s;
	s = NULL;
	rc = 0;
out:
	if (s && s->lis)
		listener_close(s->lis); /* and fd with it */
	else if (fd >= 0)
		close(fd);
	if (s) {
		free(s->token);
		free(s);
	}
	if (ai)
		freeaddrinfo(ai);
	return rc;
}

int http_listen_peers(struct loop *loop, const char *path, http_peer_fn check,
		      void *check_arg, http_handler_fn handler, void *arg,
		      struct http_server **out, char *err)
{
	struct http_server *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s) {
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	s->loop = loop;
	s->handler = handler;
	s->arg = arg;
	s->by_peer = 1;
	s->check = check;
	s->check_arg = check_arg;
	s->fd = -1;
	if ((rc = listen_unix(s, path, path, 1, err)) < 0)
		goto out;
	if ((rc = loop_add_fd(loop, listener_fd(s->lis), EPOLLIN, on_listener,
			      s)) < 0) {
		snprintf(err, ERR_LEN, "--http-members: cannot watch the "
				       "socket: %s",
			 strerror(-rc));
		goto out;
	}
	s->fd = listener_fd(s->lis);
	*out = s;
	s = NULL;
out:
	if (s) {
		listener_close(s->lis);
		free(s);
	}
	return rc;
}

const char *http_server_addr(const struct http_server *s)
{
	return s->addr;
}

void http_free(struct http_server *s)
{
	if (!s)
		return;
	loop_del_fd(s->loop, s->fd);
	if (s->lis)
		listener_close(s->lis); /* its file too, if still ours */
	else
		close(s->fd);
	s->fd = -1;
	while (s->conns) {
		struct http_conn *c = s->conns;
		c->in_process = 1; /* freed below, not inside http_error */
		if (c->state == C_WAIT && c->cancel) {
			http_cancel_fn fn = c->cancel;
			c->cancel = NULL;
			fn(c->cancel_arg);
			/* One non-blocking try: whatever the socket takes. */
			c->close_after = 1;
			http_error(c, 503, "the collector is shutting down");
		}
		c->in_process = 0;
		if (c->dead)
			http_conn_free(c);
		else
			http_conn_close(c);
	}
	free(s->token);
	free(s);
}
