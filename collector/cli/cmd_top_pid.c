/*
 * cmd_top_pid.c - `pyprof top --pid PID`: a live table of a running
 * process's hottest functions, refreshed every second, like `py-spy top`.
 *
 * It attaches as `pyprof attach` does (cmd_attach.c's steps), with a
 * private collector that writes the process's profile of every second
 * (--period 1) into a temporary directory; each new one is shown with
 * `pyprof top`'s own table (cmd_view.c), the screen cleared first when
 * the output is a terminal (two ANSI sequences: any terminal, tmux,
 * ssh), else one table after the other. Ctrl-C (or --duration) ends it:
 * sampling is switched off and the library left dormant, as after an
 * attach.
 *
 * A process with nothing loaded (any version, 2.7 to 3.15) is read from
 * outside instead, as `pyprof record --pid` reads it (outside.h): the
 * profile of each second written to a temporary file and shown the same
 * way. Nothing is loaded into it then, even on 3.14+ where an attach
 * could: reading needs no safe point in the target, runs nothing there,
 * and leaves nothing behind.
 *
 * A process started with the library reports to a collector of its own
 * choosing: attaching again is not possible (the library is there,
 * talking to that collector). When that collector serves HTTP (--http:
 * it writes its address to SOCKET.http-addr, the token to
 * SOCKET.http-token), each second's profile is asked of it instead
 * (/debug/pprof/profile?seconds=1&pid=PID: a window of its own, which
 * switches sampling on in a dormant process for that second), as `top
 * --collector SOCKET` does for all its processes at once. HTTP/1.0 over
 * one TCP connection per second, with the token in the query.
 *
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "cli/outside.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/envcheck.h"
#include "pyprof/wire.h"

#define TOPP "pyprof top --pid"

enum {
	OPT_PID = 256,
	OPT_HZ,
	OPT_MODE,
	OPT_DURATION,
	OPT_TIMEOUT,
	OPT_COLLECTOR
};

/* --collector, or the one a process started with the library reports
 * to; NULL: attach */
static const char *top_collector;

/* 0, or -1 after a usage line. rows: -n. */
static int parse(struct attach *a, int argc, char **argv, char *rows)
{
	static const struct option longs[] = {
		{ "pid", required_argument, NULL, OPT_PID },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ NULL, 0, NULL, 0 }
	};
	unsigned long v;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":n:", longs, NULL)) != -1) {
		switch (c) {
		case OPT_PID:
			if (attach_parse_pid(TOPP, optarg, &a->pid) < 0)
				return -1;
			break;
		case OPT_HZ:
			if (cmd_parse_uint(optarg, 1, PYPROF_MAX_HZ, &v))
				return usage_error(TOPP, "--hz accepts an "
							 "integer from 1 to %d, not '%s'",
						   PYPROF_MAX_HZ, optarg),
				       -1;
			snprintf(a->r.hz, sizeof a->r.hz, "%lu", v);
			break;
		case OPT_MODE:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "wall"))
				return usage_error(TOPP, "--mode accepts cpu or "
							 "wall, not '%s'",
						   optarg),
				       -1;
			a->r.mode = optarg;
			break;
		case OPT_DURATION:
		case OPT_TIMEOUT:
			if (cmd_parse_uint(optarg, 1, 86400, &v))
				return usage_error(TOPP, "%s accepts an integer "
							 "from 1 to 86400, not '%s'",
						   c == OPT_DURATION ? "--duration"
								     : "--timeout",
						   optarg),
				       -1;
			*(c == OPT_DURATION ? &a->duration : &a->timeout) = v;
			break;
		case OPT_COLLECTOR:
			if (optarg[0] != '/')
				return usage_error(TOPP, "--collector expects "
							 "the collector's socket as an absolute "
							 "path, not '%s'",
						   optarg),
				       -1;
			top_collector = optarg;
			break;
		case 'n':
			if (cmd_parse_uint(optarg, 1, 1000, &v))
				return usage_error(TOPP, "-n accepts an integer "
							 "from 1 to 1000, not '%s'",
						   optarg),
				       -1;
			snprintf(rows, 16, "%lu", v);
			break;
		default:
			return usage_error(TOPP, "%s option '%s' (with --pid: "
						 "-n, --hz, --mode, --duration, "
						 "--timeout, --collector)",
					   c == ':' ? "missing value for"
						    : "unknown",
					   argv[optind - 1]),
			       -1;
		}
	}
	if (optind != argc)
		return usage_error(TOPP, "takes no PROFILE"), -1;
	return 0;
}

/* The newest profile in dir written after *seen (mtime, ns); its path
 * into out. 1 if there is one, else 0. Older ones are removed. */
static int newest(const char *dir, long long *seen, char *out, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long long best = *seen;
	char path[CMD_PATH_MAX];

	if (!d)
		return 0;
	out[0] = '\0';
	while ((e = readdir(d))) {
		struct stat st;
		long long t;
		size_t len = strlen(e->d_name);

		if (len < 7 || strcmp(e->d_name + len - 6, ".pb.gz") ||
		    cmd_join_path(path, sizeof path, dir, e->d_name) ||
		    stat(path, &st) != 0)
			continue;
		t = (long long)st.st_mtim.tv_sec * 1000000000LL +
		    st.st_mtim.tv_nsec;
		if (t > best) {
			if (out[0])
				unlink(out);
			best = t;
			snprintf(out, n, "%s", path);
		} else {
			unlink(path);
		}
	}
	closedir(d);
	if (!out[0])
		return 0;
	*seen = best;
	return 1;
}

static void show(const struct attach *a, const char *file, const char *rows,
		 int tty)
{
	char who[CMD_PATH_MAX + 64];
	char *argv[] = { "top", "-n", (char *)rows, (char *)file, NULL };
	time_t now = time(NULL);
	char when[16];

	strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	if (a->pid)
		snprintf(who, sizeof who, "process %d (%s)", (int)a->pid,
			 a->t.comm);
	else
		snprintf(who, sizeof who, "every process of %s",
			 top_collector);
	printf("pyprof top: %s, %s, the last second at %s (Ctrl-C ends)\n\n",
	       who, a->r.mode ? a->r.mode : "cpu", when);
	fflush(stdout);
	cmd_top(4, argv);
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

/* The live loop, the collector started and the process connected. */
static int live(struct attach *a, const char *rows)
{
	struct ctl_request q;
	char err[ERR_LEN], file[CMD_PATH_MAX];
	char dir[CMD_PATH_MAX];
	long long seen = 0;
	double end = attach_now_s() + (double)a->duration;
	int tty = isatty(STDOUT_FILENO);

	snprintf(dir, sizeof dir, "%s", a->r.profile);
	attach_start_request(a, &q);
	if (attach_ctl(a, a->r.sock, &q, NULL, err, sizeof err) != 0) {
		log_error("process %d did not start sampling: %s", (int)a->pid,
			  err);
		return 1;
	}
	while (!attach_stop_sig && attach_target_alive(a) &&
	       (!a->duration || attach_now_s() < end)) {
		if (newest(dir, &seen, file, sizeof file))
			show(a, file, rows, tty);
		attach_nap_ms(100);
	}
	if (attach_target_alive(a)) {
		struct ctl_request stop = { .verb = WIRE_VERB_STOP, .mode = -1 };
		attach_ctl(a, a->r.sock, &stop, NULL, err, sizeof err);
	}
	return 0;
}

/* ---- over a running collector's HTTP server ------------------------ */

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

struct http_src {
	char addr[128];	 /* SOCKET.http-addr, or SOCKET.http-members'   */
	char token[128]; /* SOCKET.http-token or $PYPROF_HTTP_TOKEN;
			    "" on the members' socket: never sent there */
	char addr_file[CMD_PATH_MAX + 16];
	uid_t owner; /* of addr_file: the collector's user */
};

/* The next second's profile (of pid, or of every process with pid 0)
 * into file. 0, or -1 with why in err. */
static int fetch_window(const struct http_src *h, pid_t pid, const char *mode,
			const char *seconds, const char *file, char *err,
			size_t errn)
{
	char req[512], pidq[32] = "", modeq[24] = "", buf[65536], *body;
	size_t len = 0, cap = 1 << 20;
	char *all = malloc(cap);
	ssize_t k;
	int fd, out, rc = -1, unix_sock = !strncmp(h->addr, "unix:", 5);

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
		size_t bl = (size_t)(all + len - body), i;
		char said[160];

		/* its first line, printable bytes only: what a server says
		 * reaches the terminal as text, never as escapes */
		for (i = 0; i < bl && i + 1 < sizeof said && body[i] != '\r' &&
			    body[i] != '\n';
		     i++)
			said[i] = (unsigned char)body[i] >= 0x20 &&
						  (unsigned char)body[i] < 0x7f
					  ? body[i]
					  : '?';
		said[i] = '\0';
		snprintf(err, errn, "http://%s/ answered %.3s: %s", h->addr,
			 all + 9, said);
		goto out;
	}
	out = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0 || write(out, body, (size_t)(all + len - body)) !=
			       (ssize_t)(all + len - body)) {
		snprintf(err, errn, "cannot write %.300s", file);
		if (out >= 0)
			close(out);
		goto out;
	}
	close(out);
	rc = 0;
out:
	free(all);
	return rc;
}

/* The collector a process started with the library reports to: its
 * PYPROF_SOCKET, else the default socket as that process's environment
 * makes it. 0 with the path in out, -1 if it was not started with the
 * library (no libpyprof in its LD_PRELOAD). */
int top_started_with_library(pid_t pid, char *out, size_t n)
{
	char env[32768], *p;
	const char *sock = NULL, *xdg = NULL;
	int preloaded = 0;
	long len = cmd_read_environ((int)pid, env, sizeof env);

	if (len <= 0)
		return -1;
	for (p = env; p < env + len; p += strlen(p) + 1) {
		if (!strncmp(p, "LD_PRELOAD=", 11) && strstr(p, "libpyprof"))
			preloaded = 1;
		else if (!strncmp(p, "PYPROF_SOCKET=", 14) && p[14])
			sock = p + 14;
		else if (!strncmp(p, "XDG_RUNTIME_DIR=", 16) && p[16])
			xdg = p + 16;
	}
	if (!preloaded)
		return -1;
	if (sock)
		snprintf(out, n, "%s", sock);
	else if (xdg)
		snprintf(out, n, "%s/pyprof/collector.sock", xdg);
	else
		snprintf(out, n, "/tmp/pyprof-%u/collector.sock",
			 (unsigned)getuid());
	return 0;
}

/* PYPROF_COLLECTOR_USER as the library reads it (-1: none). */
static const char *collector_user_only(const char *name, void *arg)
{
	(void)arg;
	return strcmp(name, "PYPROF_COLLECTOR_USER") == 0 ? getenv(name)
							  : NULL;
}

/* Whether path (not followed if a link) belongs to us, root or the user
 * PYPROF_COLLECTOR_USER trusts: a collector's files written by anyone
 * else (another user's collector that a target's PYPROF_SOCKET names, a
 * squatter in a sticky directory) are never believed, and our token is
 * never sent where they point. 0 when it does or does not exist; -1
 * after one line. */
static int owner_trusted(const char *path)
{
	struct stat st;
	long trust = -1;
	char err[256];

	if (lstat(path, &st) != 0)
		return 0;
	if (config_collector_user(collector_user_only, NULL, &trust, err,
				  sizeof err) < 0)
		trust = -1;
	if (!S_ISLNK(st.st_mode) &&
	    (st.st_uid == geteuid() || st.st_uid == 0 ||
	     (trust >= 0 && st.st_uid == (uid_t)trust)))
		return 0;
	log_error("%s belongs to uid %u, not to you (uid %u) or root: pyprof "
		  "does not talk to that collector nor send it your token; if "
		  "you trust that user, set PYPROF_COLLECTOR_USER=%u",
		  path, (unsigned)st.st_uid, (unsigned)geteuid(),
		  (unsigned)st.st_uid);
	return -1;
}

/* top_collector's members' socket (--http-members: SOCKET.http-members
 * names it), where the kernel names the caller and no token is sent: 1
 * found (h filled), 0 none, -1 (said). */
static int members_source(struct http_src *h)
{
	char path[CMD_PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof path, "%s.http-members", top_collector);
	if (lstat(path, &st) < 0)
		return 0;
	if (owner_trusted(path) < 0)
		return -1;
	if (first_line(path, h->addr, sizeof h->addr) < 0 ||
	    strncmp(h->addr, "unix:/", 6) != 0) {
		log_error("%s does not name a Unix socket (unix:/PATH): "
			  "pyprof does not know where that collector's "
			  "members' socket is",
			  path);
		return -1;
	}
	snprintf(h->addr_file, sizeof h->addr_file, "%s", path);
	h->owner = st.st_uid;
	h->token[0] = '\0'; /* the kernel names us there: no token */
	return 1;
}

/* No HTTP server of top_collector we may use: say why, in one line.
 * addr_path exists but we may not read it (the collector shares its
 * live views of every process with its readers' group alone), or there
 * is none. */
static void no_http_said(pid_t pid, const char *addr_path, int unreadable,
			 const struct stat *st)
{
	char who[64] = "", grp[CMD_PATH_MAX + 300];
	struct group *g;

	if (pid)
		snprintf(who, sizeof who, "process %d reports to ", (int)pid);
	else
		snprintf(who, sizeof who, "no live view from ");
	if (!unreadable) {
		if (pid)
			log_error("%sthe collector on %s, which serves no "
				  "HTTP: start that collector with --http to "
				  "watch its processes live",
				  who, top_collector);
		else
			log_error("the collector on %s serves no HTTP (no "
				  "%s): start it with --http",
				  top_collector, addr_path);
		return;
	}
	g = getgrgid(st->st_gid);
	if (g && (st->st_mode & S_IRGRP))
		snprintf(grp, sizeof grp, "its readers' group, %s: you may not "
					  "read %s. Ask to be added to %s",
			 g->gr_name,
			 addr_path, g->gr_name);
	else
		snprintf(grp, sizeof grp, "its user (uid %u): you may not "
					  "read %s. Ask for them to be shared (--readers-group)",
			 (unsigned)st->st_uid, addr_path);
	log_error("%sthe collector on %s, which keeps its live views of "
		  "every process for %s, or for the collector to serve each "
		  "user its own processes (pyprof-collector --http-members "
		  "PATH)",
		  who, top_collector, grp);
}

/* Where top_collector serves HTTP, and its token: its --http server when
 * we may read SOCKET.http-addr (root, its user, its readers' group),
 * else its members' socket (--http-members) when it has one. 0, or -1
 * (said). */
static int http_source(struct http_src *h, pid_t pid)
{
	char path[CMD_PATH_MAX + 16];
	const char *env = getenv("PYPROF_HTTP_TOKEN");
	int rc, unreadable;

	struct stat st;

	snprintf(path, sizeof path, "%s.http-addr", top_collector);
	if (owner_trusted(top_collector) < 0 || owner_trusted(path) < 0)
		return -1;
	if (lstat(path, &st) < 0 ||
	    first_line(path, h->addr, sizeof h->addr) < 0) {
		unreadable = access(path, F_OK) == 0 &&
			     access(path, R_OK) != 0 && errno == EACCES;
		if ((rc = members_source(h)) != 0)
			return rc > 0 ? 0 : -1;
		no_http_said(pid, path, unreadable, &st);
		return -1;
	}
	snprintf(h->addr_file, sizeof h->addr_file, "%s", path);
	h->owner = st.st_uid;
	snprintf(path, sizeof path, "%s.http-token", top_collector);
	if (owner_trusted(path) < 0)
		return -1;
	if (first_line(path, h->token, sizeof h->token) < 0)
		snprintf(h->token, sizeof h->token, "%s", env ? env : "");
	return 0;
}

/* The live loop over the collector's HTTP server. 0 or 1. */
static int live_http(struct attach *a, const char *rows)
{
	struct http_src h;
	char dir[CMD_PATH_MAX], file[CMD_PATH_MAX], err[512];
	double end = attach_now_s() + (double)a->duration;
	int tty = isatty(STDOUT_FILENO), code = 1;

	if (http_source(&h, a->pid) < 0)
		return 1;
	if (cmd_make_tmpdir(dir, sizeof dir) != 0 ||
	    cmd_join_path(file, sizeof file, dir, "second.pb.gz") != 0) {
		log_error("cannot create a temporary directory");
		return 1;
	}
	attach_signals_install();
	while (!attach_stop_sig && (!a->pid || attach_target_alive(a)) &&
	       (!a->duration || attach_now_s() < end)) {
		if (fetch_window(&h, a->pid, a->r.mode, "1", file, err,
				 sizeof err) < 0) {
			if (attach_stop_sig)
				break;
			log_error("%s", err);
			goto out;
		}
		show(a, file, rows, tty);
	}
	code = 0;
out:
	cmd_remove_tmpdir(dir);
	return code;
}

/* ---- from outside ------------------------------------------------- */

struct outside_top {
	const struct attach *a;
	const char *rows, *file;
	int tty, failed;
};

static void outside_window(void *arg, struct outside_prof *o)
{
	struct outside_top *c = arg;
	int rc = outside_prof_write(o, c->file, NULL);

	if (rc < 0) {
		if (!c->failed)
			log_error("cannot write %s: %s", c->file,
				  strerror(-rc));
		c->failed = 1;
		return;
	}
	show(c->a, c->file, c->rows, c->tty);
}

/* The live loop over the process read from outside. 0 or 1. */
static int live_outside(struct attach *a, const char *rows)
{
	struct outside_run r;
	struct outside_top c = { a, rows, NULL, isatty(STDOUT_FILENO), 0 };
	char dir[CMD_PATH_MAX], file[CMD_PATH_MAX];
	int code = 1;

	memset(&r, 0, sizeof r);
	if (outside_open(a->pid, &r.py, a->t.comm, sizeof a->t.comm) < 0)
		return 1;
	if (cmd_make_tmpdir(dir, sizeof dir) != 0 ||
	    cmd_join_path(file, sizeof file, dir, "second.pb.gz") != 0) {
		log_error("cannot create a temporary directory");
		return 1;
	}
	c.file = file;
	r.wall = a->r.mode && !strcmp(a->r.mode, "wall");
	r.hz = a->r.hz[0] ? strtoul(a->r.hz, NULL, 10) : PYPROF_DEFAULT_HZ;
	r.max_depth = PYPROF_DEFAULT_MAX_DEPTH;
	r.duration_s = (double)a->duration;
	r.window_s = 1.0;
	r.on_window = outside_window;
	r.arg = &c;
	attach_signals_install();
	if (outside_loop(&r) < 0) {
		log_error("cannot read process %d (%s): %s", (int)a->pid,
			  a->t.comm, r.why);
		goto out;
	}
	if (r.exited)
		log_info("process %d (%s) exited", (int)a->pid, a->t.comm);
	outside_done(&r);
	code = c.failed;
out:
	cmd_remove_tmpdir(dir);
	return code;
}

int cmd_top_any(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--pid") || !strncmp(argv[i], "--pid=", 6) ||
		    !strcmp(argv[i], "--collector") ||
		    !strncmp(argv[i], "--collector=", 12))
			return cmd_top_pid(argc, argv);
	return cmd_top(argc, argv);
}

/* The live loop over a process the library is loaded into, or is to be
 * (3.14+): attached as `pyprof attach` does, with a private collector
 * writing each second's profile into a temporary directory. 0 or 1. */
static int live_attached(struct attach *a, const char *rows)
{
	char config[2048];
	int rc, code = 1, st;

	if (attach_target_check(a->pid, a->r.lib, 0, &a->t) < 0)
		return 1;
	rc = attach_dir(a->dir, sizeof a->dir);
	if (rc < 0) {
		attach_dir_refused(a->dir, rc);
		return 1;
	}
	attach_sweep(a->dir);
	if (attach_private_paths(a) != 0)
		goto out;
	/* the profiles of each second go in a directory of their own */
	a->r.profile[strlen(a->r.profile) - strlen(".pb.gz")] = '\0';
	if (mkdir(a->r.profile, 0700) != 0 ||
	    record_collector_start(&a->r) != 0) {
		log_error("could not start the collector for process %d",
			  (int)a->pid);
		goto out;
	}
	attach_signals_install();
	if (!a->t.lib_loaded) {
		attach_make_config(a, a->r.sock, 0, config, sizeof config);
		if (attach_inject(&a->t, a->r.lib, config, a->dir,
				  attach_now_s() + (double)a->timeout) < 0)
			goto out;
	}
	rc = attach_wait_connected(a, a->r.sock,
				   attach_now_s() + (double)a->timeout);
	if (rc < 0) {
		record_collector_stop(&a->r, &st);
		attach_say_not_connected(a, rc);
		goto out;
	}
	code = live(a, rows);
out:
	if (a->r.coll_pid > 0)
		record_collector_stop(&a->r, &st);
	if (a->r.tmpdir[0]) {
		char cmd_dir[CMD_PATH_MAX];
		snprintf(cmd_dir, sizeof cmd_dir, "%s", a->r.profile);
		cmd_remove_tmpdir(cmd_dir);
		cmd_remove_tmpdir(a->r.tmpdir);
	}
	attach_sweep(a->dir); /* the target's, if it ended meanwhile */
	return code;
}

int cmd_top_pid(int argc, char **argv)
{
	struct attach a;
	char rows[16] = "20";

	memset(&a, 0, sizeof a);
	a.r.coll_pid = -1;
	a.timeout = 10;
	a.r.period_s = 1;
	if (parse(&a, argc, argv, rows) < 0)
		return CMD_EXIT_USAGE;
	if (!a.pid && !top_collector)
		return usage_error(TOPP, "--pid expects a process id"),
		       CMD_EXIT_USAGE;
	if (!a.pid)
		return live_http(&a, rows);
	a.r.attached = a.pid;
	if (record_find_files(&a.r) != 0)
		return 1;
	/* started with the library (or --collector): its collector's
	 * live profiles, no attach, any version (as dump) */
	{
		static char sock[CMD_PATH_MAX];
		if (!top_collector &&
		    top_started_with_library(a.pid, sock, sizeof sock) == 0)
			top_collector = sock;
		if (top_collector)
			return live_http(&a, rows);
	}
	/* nothing loaded: read from outside, any version */
	{
		struct remote_py py;
		char why[256];
		if (remote_py_find(a.pid, &py, why, sizeof why) != 0 ||
		    !py.lib_loaded)
			return live_outside(&a, rows);
	}
	/* the library left by an earlier attach */
	return live_attached(&a, rows);
}

int top_fetch_pid_window(const char *sock, pid_t pid, const char *mode,
			 const char *seconds, const char *file)
{
	struct http_src h;
	char err[512];

	top_collector = sock;
	if (http_source(&h, pid) < 0)
		return -1;
	if (fetch_window(&h, pid, mode, seconds, file, err, sizeof err) < 0) {
		log_error("process %d has the library, but its collector on "
			  "%s gave no profile (%s): is that collector still "
			  "running, with --http?",
			  (int)pid, sock, err);
		return -1;
	}
	return 0;
}
