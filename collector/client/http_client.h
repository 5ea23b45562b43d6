/*
 * http_client.h - a running collector's HTTP server (--http, or its
 * members' socket, --http-members), as a client: where it serves and
 * with which token, and one profile window fetched into memory.
 *
 * Who it talks to: the files that name the server (SOCKET.http-addr,
 * .http-token, .http-members) are believed only when they belong to us,
 * root or PYPROF_COLLECTOR_USER; before a byte is sent the listener at
 * the address reached must be the user who wrote them (/proc/net/tcp's
 * uid column; SO_PEERCRED on a Unix socket): a port is anyone's to take
 * while the collector is down, and our token must not reach a squatter.
 *
 * Used by `pyprof top --pid|--collector` and `pyprof dump` of a process
 * started with the library. Single-threaded; writes nothing to stdout
 * or stderr.
 */
#ifndef PYPROF_CLIENT_HTTP_CLIENT_H
#define PYPROF_CLIENT_HTTP_CLIENT_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Where a collector serves HTTP, and what is sent there. */
struct http_src {
	char addr[128];		       /* "HOST:PORT", "[HOST]:PORT" or "unix:PATH"    */
	char token[128];	       /* SOCKET.http-token or $PYPROF_HTTP_TOKEN; ""
			    on the members' socket: never sent there */
	char addr_file[PATH_MAX + 16]; /* the file that named addr */
	uid_t owner;		       /* its owner: the collector's user */
};

/* Why a collector has no HTTP server we may use (http_source's -2). */
struct http_missing {
	char addr_path[PATH_MAX + 16]; /* SOCKET.http-addr */
	int unreadable;		       /* it exists, we may not read it */
	struct stat st;		       /* its owner, group and mode then */
};

/* Where the collector on sock serves HTTP, and its token: its --http
 * server when we may read SOCK.http-addr (root, its user, its readers'
 * group), else its members' socket when it has one. 0 (h filled); -1
 * with one line in err (size n): a file of a user not trusted, a members'
 * file that names no Unix socket; -2 when it serves none we may use (m
 * says why, for the caller to say). */
int http_source(const char *sock, struct http_src *h, struct http_missing *m,
		char *err, size_t n);

/* The profile of the next `seconds` s (of pid, or every process with pid
 * 0; in mode "cpu" or "wall", or the process's own with NULL) from h's
 * /debug/pprof/profile: 0 with the body (gzipped pprof) in *body (len
 * bytes; the caller frees it); -1 with one line in err (size n). */
int http_fetch_window(const struct http_src *h, pid_t pid, const char *mode,
		      const char *seconds, char **body, size_t *len, char *err,
		      size_t n);

#endif /* PYPROF_CLIENT_HTTP_CLIENT_H */
