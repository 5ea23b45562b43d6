/*
 * http_client.c - a running collector's HTTP server, as a client; see
 * http_client.h.
 */
#include "client/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/trust.h"

/* The first line of path (without its newline) into out; 0 or -1. */
static int first_line(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(out, (int)n, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	out[strcspn(out, "\r\n")] = '\0';
	return out[0] ? 0 : -1;
}

/* A connected socket to "unix:PATH", "HOST:PORT" or "[HOST]:PORT", or -1. */
static int dial(const char *addr)
{
	char host[256], *port;
	struct addrinfo hints, *res, *ai;
	struct timeval tv = { 10, 0 };
	int fd = -1;

	if (!strncmp(addr, "unix:", 5)) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(addr + 5) >= sizeof sa.sun_path)
			return -1;
		strcpy(sa.sun_path, addr + 5);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			return fd;
		close(fd);
		return -1;
	}
	snprintf(host, sizeof host, "%s", addr[0] == '[' ? addr + 1 : addr);
	port = strrchr(host, ':');
	if (!port)
		return -1;
	*port++ = '\0';
	if (addr[0] == '[' && port - host >= 2 && port[-2] == ']')
		port[-2] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The owners of the sockets in table (/proc/net/tcp or tcp6) listening
 * on port at an address that takes connections to want (4 words as the
 * kernel prints them; v4: only want[0]): want itself, the wildcard, or in
 * tcp6 want as an IPv4-mapped address. The first owner other than
 * expect in *other (or (uid_t)-1), how many in *n. */
static void listen_owners(const char *table, int v6_table, int v6_want,
			  const uint32_t want[4], unsigned port, uid_t expect,
			  uid_t *other, int *n)
{
	FILE *f = fopen(table, "re");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char la[40];
		unsigned lport, st, uid;
		uint32_t w[4] = { 0 };
		int match;

		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %u",
			   la, &lport, &st, &uid) != 4 ||
		    st != 0x0A /* TCP_LISTEN */ || lport != port)
			continue;
		if (strlen(la) != (v6_table ? 32u : 8u))
			continue;
		for (int i = 0; i < (v6_table ? 4 : 1); i++) {
			char word[9];
			memcpy(word, la + 8 * i, 8);
			word[8] = '\0';
			w[i] = (uint32_t)strtoul(word, NULL, 16);
		}
		if (!v6_table)
			match = !v6_want && (w[0] == 0 || w[0] == want[0]);
		else if (!w[0] && !w[1] && !w[2] && !w[3])
			match = 1;
		else if (v6_want)
			match = !memcmp(w, want, sizeof w);
		else
			match = !w[0] && !w[1] && w[2] == htonl(0xffff) &&
				w[3] == want[0];
		if (!match)
			continue;
		(*n)++;
		if ((uid_t)uid != expect && *other == (uid_t)-1)
			*other = (uid_t)uid;
	}
	fclose(f);
}

/* Whether the TCP socket fd reached a server of the uid expect: a port
 * is anyone's to take while the collector is down (a local user's
 * listener would then be sent every client's token), so before a byte is
 * sent the listening socket at the address fd reached must be expect's
 * (/proc/net/tcp's uid column). 0, or -1 with why in err. */
static int server_is(int fd, const char *addr, uid_t expect,
		     const char *addr_file, char *err, size_t errn)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	uint32_t want[4] = { 0 };
	unsigned port;
	uid_t other = (uid_t)-1;
	int n = 0, v6;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(err, errn, "cannot check http://%s/: %s", addr,
			 strerror(errno));
		return -1;
	}
	v6 = ss.ss_family == AF_INET6;
	if (v6) {
		const struct sockaddr_in6 *in6 = (const void *)&ss;
		memcpy(want, &in6->sin6_addr, sizeof want);
		port = ntohs(in6->sin6_port);
	} else {
		const struct sockaddr_in *in = (const void *)&ss;
		want[0] = in->sin_addr.s_addr;
		port = ntohs(in->sin_port);
	}
	listen_owners("/proc/net/tcp", 0, v6, want, port, expect, &other, &n);
	listen_owners("/proc/net/tcp6", 1, v6, want, port, expect, &other, &n);
	if (other != (uid_t)-1) {
		snprintf(err, errn,
			 "http://%s/ is served by uid %u, not by uid %u (the "
			 "owner of %.200s): another user holds that port; "
			 "pyprof sent it nothing",
			 addr, (unsigned)other, (unsigned)expect, addr_file);
		return -1;
	}
	if (n == 0) {
		snprintf(err, errn,
			 "http://%s/: no socket of uid %u (the owner of %.200s) "
			 "listens there; pyprof sent nothing",
			 addr, (unsigned)expect, addr_file);
		return -1;
	}
	return 0;
}

/* Whether the Unix socket fd reached a server of the uid expect (the
 * kernel's word for the listener, SO_PEERCRED): the file that named the
 * socket and the process serving it are the same collector's. 0, or -1
 * with why in err. */
static int unix_server_is(int fd, const char *addr, uid_t expect,
			  const char *addr_file, char *err, size_t errn)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    len != sizeof cred) {
		snprintf(err, errn, "%s: the kernel does not say who serves "
				    "it; pyprof sent nothing",
			 addr);
		return -1;
	}
	if (cred.uid != expect) {
		snprintf(err, errn, "%s is served by uid %u, not by uid %u "
				    "(the owner of %.200s); pyprof sent it nothing",
			 addr, (unsigned)cred.uid, (unsigned)expect, addr_file);
		return -1;
	}
	return 0;
}


/* A status other than 200 (the answer's status line at all, its body
 * of bl bytes) said in err: its first line, printable bytes only (what a
 * server says reaches the terminal as text, never as escapes). */
static void refused(const struct http_src *h, const char *all,
		    const char *body, size_t bl, char *err, size_t errn)
{
	char said[160];
	size_t i;

	for (i = 0; i < bl && i + 1 < sizeof said && body[i] != '\r' &&
		    body[i] != '\n';
	     i++)
		said[i] = (unsigned char)body[i] >= 0x20 &&
					  (unsigned char)body[i] < 0x7f
				  ? body[i]
				  : '?';
	said[i] = '\0';
	snprintf(err, errn, "http://%s/ answered %.3s: %s", h->addr, all + 9,
		 said);
}

int http_fetch_window(const struct http_src *h, pid_t pid, const char *mode,
		      const char *seconds, char **body_out, size_t *len_out,
		      char *err, size_t errn)
{
	char req[512], pidq[32] = "", modeq[24] = "", buf[65536], *body;
	size_t len = 0, cap = 1 << 20;
	char *all = malloc(cap);
	ssize_t k;
	int fd, rc = -1, unix_sock = !strncmp(h->addr, "unix:", 5);

	if (!all)
		return snprintf(err, errn, "out of memory"), -1;
	if (pid)
		snprintf(pidq, sizeof pidq, "&pid=%d", (int)pid);
	if (mode)
		snprintf(modeq, sizeof modeq, "&mode=%s", mode);
	snprintf(req, sizeof req,
		 "GET /debug/pprof/profile?seconds=%s%s%s%s%s HTTP/1.0\r\n"
		 "Host: %s\r\nUser-Agent: pyprof-top\r\n\r\n",
		 seconds, pidq, modeq, h->token[0] ? "&token=" : "", h->token,
		 unix_sock ? "localhost" : h->addr);
	fd = dial(h->addr);
	if (fd < 0) {
		snprintf(err, errn, "cannot connect to http://%s/", h->addr);
		goto out;
	}
	/* a Unix socket's directory and mode decide who may listen there;
	 * the kernel says who does */
	if (unix_sock ? unix_server_is(fd, h->addr, h->owner, h->addr_file,
				       err, errn) < 0
		      : server_is(fd, h->addr, h->owner, h->addr_file, err,
				  errn) < 0) {
		close(fd);
		goto out;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		snprintf(err, errn, "cannot send to http://%s/", h->addr);
		close(fd);
		goto out;
	}
	while ((k = read(fd, buf, sizeof buf)) > 0) {
		if (len + (size_t)k > cap) {
			char *more = realloc(all, cap * 2);
			if (!more)
				break;
			all = more;
			cap *= 2;
		}
		memcpy(all + len, buf, (size_t)k);
		len += (size_t)k;
	}
	close(fd);
	body = memmem(all, len, "\r\n\r\n", 4);
	if (len < 12 || !body || strncmp(all, "HTTP/1.", 7)) {
		snprintf(err, errn, "no answer from http://%s/", h->addr);
		goto out;
	}
	body += 4;
	if (strncmp(all + 8, " 200", 4)) {
		refused(h, all, body, (size_t)(all + len - body), err, errn);
		goto out;
	}
	/* the body alone, at the start of the buffer the caller frees */
	*len_out = (size_t)(all + len - body);
	memmove(all, body, *len_out);
	*body_out = all;
	all = NULL;
	rc = 0;
out:
	free(all);
	return rc;
}

/* Whether path (not followed if a link) belongs to us, root or the user
 * PYPROF_COLLECTOR_USER trusts: a collector's files written by anyone
 * else (another user's collector that a target's PYPROF_SOCKET names, a
 * squatter in a sticky directory) are never believed, and our token is
 * never sent where they point. 0 when it does or does not exist; -1
 * with err. */
static int owner_trusted(const char *path, char *err, size_t errn)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISLNK(st.st_mode) &&
	    client_uid_trusted(st.st_uid, client_trusted_uid(err, errn)))
		return 0;
	snprintf(err, errn,
		 "%s belongs to uid %u, not to you (uid %u) or root: pyprof "
		 "does not talk to that collector nor send it your token; if "
		 "you trust that user, set PYPROF_COLLECTOR_USER=%u",
		 path, (unsigned)st.st_uid, (unsigned)geteuid(),
		 (unsigned)st.st_uid);
	return -1;
}

/* sock's collector's members' socket (--http-members: SOCK.http-members
 * names it), where the kernel names the caller and no token is sent: 1
 * found (h filled), 0 none, -1 with err. */
static int members_source(const char *sock, struct http_src *h, char *err,
			  size_t errn)
{
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof path, "%s.http-members", sock);
	if (lstat(path, &st) < 0)
		return 0;
	if (owner_trusted(path, err, errn) < 0)
		return -1;
	if (first_line(path, h->addr, sizeof h->addr) < 0 ||
	    strncmp(h->addr, "unix:/", 6) != 0) {
		snprintf(err, errn,
			 "%s does not name a Unix socket (unix:/PATH): pyprof "
			 "does not know where that collector's members' socket "
			 "is",
			 path);
		return -1;
	}
	snprintf(h->addr_file, sizeof h->addr_file, "%s", path);
	h->owner = st.st_uid;
	h->token[0] = '\0'; /* the kernel names us there: no token */
	return 1;
}

int http_source(const char *sock, struct http_src *h, struct http_missing *m,
		char *err, size_t errn)
{
	char path[PATH_MAX + 16];
	const char *env = getenv("PYPROF_HTTP_TOKEN");
	struct stat st;
	int rc;

	memset(h, 0, sizeof *h);
	snprintf(path, sizeof path, "%s.http-addr", sock);
	if (owner_trusted(sock, err, errn) < 0 ||
	    owner_trusted(path, err, errn) < 0)
		return -1;
	if (lstat(path, &st) < 0 ||
	    first_line(path, h->addr, sizeof h->addr) < 0) {
		memset(m, 0, sizeof *m);
		m->unreadable = access(path, F_OK) == 0 &&
				access(path, R_OK) != 0 && errno == EACCES;
		m->st = st;
		snprintf(m->addr_path, sizeof m->addr_path, "%s", path);
		if ((rc = members_source(sock, h, err, errn)) != 0)
			return rc > 0 ? 0 : -1;
		return -2;
	}
	snprintf(h->addr_file, sizeof h->addr_file, "%s", path);
	h->owner = st.st_uid;
	snprintf(path, sizeof path, "%s.http-token", sock);
	if (owner_trusted(path, err, errn) < 0)
		return -1;
	if (first_line(path, h->token, sizeof h->token) < 0)
		snprintf(h->token, sizeof h->token, "%s", env ? env : "");
	return 0;
}
