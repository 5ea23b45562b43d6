/*
 * http_impl.h - the HTTP server's structs, private to http.c (a
 * connection: reading, dispatching, answering) and http_listen.c (the
 * listening sockets, accepting, the server's end). Nothing else includes
 * it: the rest of the collector goes through http.h, which its includers
 * include first (were it included here, the include check would see a
 * cycle, as for daemon/proc_impl.h).
 *
 * Runs on the collector's loop thread.
 */
#ifndef PYPROF_HTTP_IMPL_H
#define PYPROF_HTTP_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct loop;
struct loop_timer;
struct listener;

enum conn_state { C_HEAD,
		  C_BODY,
		  C_WAIT,
		  C_WRITE,
		  C_LINGER };

struct http_conn {
	struct http_server *srv;
	struct http_conn *prev, *next;
	int fd;
	enum conn_state state;
	char *in; /* what the client sent, unconsumed */
	size_t in_len, in_cap;
	struct http_req req; /* the request being served */
	size_t req_total;    /* its head and body bytes in `in` */
	int is_head;	     /* HEAD: no body in the answer */
	int close_after;     /* close once the answer is written */
	char *out;	     /* the answer being written */
	size_t out_len, out_off;
	struct loop_timer *timer;
	http_cancel_fn cancel; /* WAIT: tell the handler we are gone */
	void *cancel_arg;
	int in_process, dead;
	int set_cookie;	  /* authorized by ?token=: the answer sets
				     the cookie (a browser's next pages) */
	int head_timed;	  /* the request's time-out is running: set
				     once, at its first byte, so that a
				     client trickling bytes cannot extend it */
	uint64_t t_start; /* when the request was complete */
	uint64_t born_ns; /* accepted (loop_now_ns) */
	int authed;	  /* a request on it carried the token */
	char peer[64];
	/* by_peer servers: the client's user, as the kernel gave it at
	 * accept, and whether it is one not served (403) */
	uid_t uid;
	int refused;
};

struct http_server {
	struct loop *loop;
	int fd;
	struct listener *lis; /* --http unix:PATH (it owns fd), else NULL */
	char addr[120];	      /* "unix:" and a sun_path fit */
	char *token;
	char cookie[32]; /* the token cookie's name: pyprof_token_<port> */
	int loopback;	 /* bound to 127.0.0.0/8 or ::1: Host is checked */
	/* http_listen_peers: each client known by its credentials, no
	 * token; check says whether a client is served */
	int by_peer;
	http_peer_fn check;
	void *check_arg;
	http_handler_fn handler;
	void *arg;
	struct http_conn *conns;
	size_t n_conns;
	uint64_t refused_minute; /* loop_now_ns() / 60 s of the count below */
	unsigned n_refused;
};

/* Watches a connection accept_one filled in (srv, fd, state, peer; on
 * srv's list): its events, its first request's time-out. 0, or -1 when
 * the loop cannot watch it (the caller closes fd and frees c).
 * http.c. */
int http_conn_start(struct http_conn *c);

/* Closes the socket now; frees c now or, inside the connection's
 * processing, when that returns. A handler waiting to answer is told.
 * http.c. */
void http_conn_close(struct http_conn *c);

/* Unlinks c from its server and frees it (its socket closed already, or
 * never watched). http.c. */
void http_conn_free(struct http_conn *c);

#endif
