/*
 * http_pprof_impl.h - the endpoints' structs, private to http_pprof.c
 * (routing, parameters, windows, heap, cmdline) and http_index.c (the
 * index page). Nothing else includes it: the rest of the collector goes
 * through http_pprof.h.
 *
 * Runs on the collector's loop thread.
 */
#ifndef PYPROF_HTTP_PPROF_IMPL_H
#define PYPROF_HTTP_PPROF_IMPL_H

#include <stdio.h>

#include "daemon/daemon_api.h"

struct http_conn;
struct http_server;

struct pprof_server {
	struct loop *loop;
	struct symtab *st;
	struct procs *reg;
	struct windows *ws;
	struct control *ctl; /* NULL: no sampling on demand */
	int need_token;	     /* requests must carry the access token */
	struct http_server *http;
	struct http_server *members; /* --http-members, else NULL */
};

/* Whom a request is answered for: every process (the token's holders,
 * on --http) or the processes of one user (own: the caller, on
 * --http-members, as the kernel named it). A process of another user
 * is then as absent: 404 as for a pid not connected, never listed, never
 * in a window, its command line never sent. */
struct who {
	int own;
	unsigned uid;
};

/* Whether who may see process p. */
static inline int visible(const struct who *who, const struct proc *p)
{
	return !who->own || proc_info(p)->peer_uid == who->uid;
}

/* Answers c with the index page, its links for windows of secs seconds
 * (checked by the caller): the processes who may see, at most
 * INDEX_MAX_ROWS of them. 500 when out of memory. http_index.c. */
void pprof_index(struct pprof_server *ps, const struct who *who,
		 struct http_conn *c, unsigned secs);

/* s as HTML text on out: the five special characters escaped, control
 * characters (line breaks too) as spaces. http_index.c. */
void pprof_html(FILE *out, const char *s);

#endif
