/*
 * main_collector.c - pyprof-collector's main: its command line parsed
 * (collector_cmdline.c), the log level set, and the result mapped to an
 * exit code:
 *   0  stopped by SIGTERM/SIGINT after writing everything asked for
 *   1  runtime error: cannot listen (for instance another collector is
 *      already listening on the socket) or cannot write an output
 *   2  usage error
 *
 * It also wires the collector (daemon/collector.h's struct
 * collector_ext): the daemon knows neither the HTTP server nor the
 * pushes, and this file plugs them in: --pyroscope and --otlp as the
 * output's sinks (push/push_sink.h), --http as a server on the loop
 * (http/http_pprof.h) with its access token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector_cmdline.h"
#include "common/fileio.h"
#include "common/log.h"
#include "daemon/collector.h"
#include "daemon/listener.h"
#include "daemon/output.h"
#include "http/http_pprof.h"
#include "push/push.h"
#include "push/push_opts.h"
#include "push/push_sink.h"

/* ---- wiring: the pushes and the HTTP server ----------------------------------- */

/* What main plugs into the collector (collector_ext's arg). */
struct wiring {
	const struct collector_opts *opts;
	struct output *out;
	struct push *push[2]; /* --pyroscope, --otlp (either NULL) */
	struct push_sink *sink[2];
	struct pprof_server *http; /* --http, else NULL */
	char token[40];		   /* made at start, else "" */
	char token_path[300];	   /* where it was written, else "" */
	/* SOCKET.http-addr (where --http listens, for `pyprof top`) as
	 * written, else "" */
	char addr_path[300];
	/* SOCKET.http-members (where --http-members listens) as written,
	 * else "" */
	char members_path[300];
};

/* --pyroscope, --otlp: a push thread and spool for each, as one of the
 * output's sinks. */
static int add_sinks(void *arg, const struct collector_parts *parts)
{
	static const enum push_dest dests[2] = { PUSH_PYROSCOPE, PUSH_OTLP };
	struct wiring *w = arg;
	const struct push_opts *po = w->opts->push;
	const char *dir = w->opts->output_dir;
	struct output_sink sink;

	if (!po)
		return 0;
	w->out = parts->out;
	for (int i = 0; i < 2; i++) {
		const char *url = i == 0 ? po->pyroscope_url : po->otlp_url;
		if (!url)
			continue;
		if (!(w->push[i] = push_new(po, dests[i], dir)))
			return -EIO;
		w->sink[i] = push_sink_new(w->push[i], dests[i], w->opts,
					   parts->st);
		if (!w->sink[i]) {
			log_error("out of memory");
			return -ENOMEM;
		}
		push_sink_as_output(w->sink[i], &sink);
		if (output_add_sink(parts->out, &sink) < 0)
			return -ENOSPC;
	}
	return 0;
}

/* The last windows are queued: sent for a few seconds, or spooled. */
static void end_sinks(void *arg)
{
	struct wiring *w = arg;

	if (w->out)
		output_clear_sinks(w->out);
	for (int i = 0; i < 2; i++) {
		push_sink_free(w->sink[i]);
		push_free(w->push[i]);
		w->sink[i] = NULL;
		w->push[i] = NULL;
	}
}

/* A token for --http when none was given: 128 random bits in hex,
 * written where only our user can read it, beside the socket (whose
 * directory the listener checked is ours). */
static int make_token(struct wiring *w, const char *sock)
{
	unsigned char raw[16];
	ssize_t n;
	int rc;

	do
		n = getrandom(raw, sizeof(raw), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(raw)) {
		rc = n < 0 ? -errno : -EIO;
		log_error("http: cannot make an access token: getrandom: %s",
			  strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(w->token + 2 * i, 3, "%02x", raw[i]);
	if ((size_t)snprintf(w->token_path, sizeof(w->token_path),
			     "%s.http-token", sock) >= sizeof(w->token_path)) {
		w->token_path[0] = 0;
		log_error("http: socket path too long for the token file "
			  "beside it; use --http-token");
		return -ENAMETOOLONG;
	}
	char line[sizeof(w->token) + 1];
	snprintf(line, sizeof(line), "%s\n", w->token);
	/* the readers of the profiles may read it (--output-group, or
	 * --readers-group: the package's pyprof-readers, docs/security.md),
	 * else the collector's user alone */
	rc = file_write_atomic(w->token_path, line, strlen(line),
			       FILEIO_REPLACE |
				       (w->opts->output_shared ? 0 : FILEIO_PRIVATE));
	if (rc < 0) {
		log_error("http: cannot write the access token to %s: %s",
			  w->token_path, strerror(-rc));
		w->token_path[0] = 0;
	}
	return rc;
}

/* SOCKET.http-addr: where --http listens, for `pyprof top`; w->addr_path
 * is "" when it could not be written (said at warn). */
static void write_addr(struct wiring *w, const char *sock)
{
	int rc;

	/* where the server listens, beside the socket: `pyprof top`
	 * reads the live profiles of this collector's processes there */
	if ((size_t)snprintf(w->addr_path, sizeof(w->addr_path),
			     "%s.http-addr", sock) <
	    sizeof(w->addr_path)) {
		char line[130];
		snprintf(line, sizeof(line), "%s\n",
			 pprof_server_addr(w->http));
		rc = file_write_atomic(w->addr_path, line, strlen(line),
				       FILEIO_REPLACE |
					       (w->opts->output_shared ? 0
								       : FILEIO_PRIVATE));
		if (rc < 0) {
			/* another user's file there (a sticky directory):
			 * pyprof top refuses to believe it, and says so */
			log_warn("http: cannot write %s: %s; `pyprof top "
				 "--collector` will not find this server",
				 w->addr_path, strerror(-rc));
			w->addr_path[0] = 0;
		}
	} else {
		w->addr_path[0] = 0;
	}
}

/* The log's lines for a started --http server: where, what to open, and
 * whether a token is needed (token: the one asked for, or NULL). */
static void log_serving(const struct wiring *w, const char *token)
{
	/* where, and what to open: a Unix socket is no URL a browser opens */
	const char *a = pprof_server_addr(w->http);
	char where[160], open_url[220];
	if (!strncmp(a, "unix:", 5)) {
		snprintf(where, sizeof(where), "%s", a);
		snprintf(open_url, sizeof(open_url),
			 "curl --unix-socket %s http://localhost/debug/pprof/",
			 a + 5);
	} else {
		snprintf(where, sizeof(where), "http://%s/", a);
		snprintf(open_url, sizeof(open_url), "http://%s/debug/pprof/",
			 a);
	}
	if (w->token[0]) {
		/* the token itself at debug level only: an info log goes to
		 * the journal, which the groups adm and systemd-journal read */
		log_info("http: serving /debug/pprof/ on %s (access token in "
			 "%s): open %s?token=TOKEN",
			 where, w->token_path, open_url);
		log_debug("http: open %s?token=%s", open_url, w->token);
	} else
		log_info("http: serving /debug/pprof/ on %s%s", where,
			 token ? " (access token required)" : "");
	if (w->opts->http_no_auth)
		log_warn("http: --http-no-auth: anyone who can reach "
			 "%s can read every process's command line "
			 "and switch sampling on",
			 pprof_server_addr(w->http));
}

/* --http: the token (given, or made beside the socket) and the server
 * (with --http-members alone, a server without a listener of its own). */
static int start_http(struct wiring *w, const struct collector_parts *parts)
{
	const struct collector_opts *opts = w->opts;
	char herr[ERR_LEN];
	const char *token = opts->http_token;
	int rc;

	if (!opts->http_spec) {
		rc = pprof_server_start(parts->loop, parts->st, parts->reg,
					parts->ctl, NULL, NULL, &w->http, herr);
		if (rc < 0)
			log_error("%s", herr);
		return rc;
	}
	if (!token && !opts->http_no_auth) {
		if ((rc = make_token(w, parts->socket_path)) < 0)
			return rc;
		token = w->token;
	}
	if ((rc = pprof_server_start(parts->loop, parts->st, parts->reg,
				     parts->ctl, opts->http_spec, token,
				     &w->http, herr)) < 0) {
		log_error("%s", herr);
		return rc;
	}
	/* a Unix socket is the collector's user's alone (0600); with
	 * --output-group (or --readers-group) its members, who read the
	 * token, may connect too */
	if (opts->output_shared &&
	    !strncmp(pprof_server_addr(w->http), "unix:", 5)) {
		const char *up = pprof_server_addr(w->http) + 5;
		if (chown(up, (uid_t)-1, opts->output_gid) < 0 ||
		    chmod(up, 0660) < 0)
			log_warn("http: cannot give %s to the output group: "
				 "%s; only this collector's user may connect",
				 up, strerror(errno));
	}
	write_addr(w, parts->socket_path);
	log_serving(w, token);
	return 0;
}

/* Whether the HTTP client of uid at the other end of fd is a user this
 * collector serves (--http-members' check): as its own clients are
 * (listener.h). */
static int member_served(void *arg, int fd, uid_t uid)
{
	const struct collector_opts *o = arg;
	return listener_peer_served(fd, uid, o->allow_uids, o->n_allow_uids,
				    o->allow_gids, o->n_allow_gids);
}

/* --http-members PATH: the members' listener, and SOCKET.http-members
 * (mode 0644: a path, no secret) saying where it is, for `pyprof top`
 * and `pyprof dump` run by a member who may not read SOCKET.http-addr. */
static int start_members(struct wiring *w, const struct collector_parts *parts)
{
	const struct collector_opts *opts = w->opts;
	char herr[ERR_LEN], line[130];
	int rc;

	if ((rc = pprof_server_members(w->http, opts->http_members,
				       member_served, (void *)opts, herr)) < 0) {
		log_error("%s", herr);
		return rc;
	}
	if ((size_t)snprintf(w->members_path, sizeof(w->members_path),
			     "%s.http-members", parts->socket_path) >=
	    sizeof(w->members_path)) {
		w->members_path[0] = 0;
		log_warn("http: socket path too long for %s.http-members: "
			 "`pyprof top --collector` will not find the members' "
			 "socket",
			 parts->socket_path);
	} else {
		snprintf(line, sizeof(line), "%s\n",
			 pprof_server_members_addr(w->http));
		rc = file_write_atomic(w->members_path, line, strlen(line),
				       FILEIO_REPLACE | FILEIO_PUBLIC);
		if (rc < 0) {
			log_warn("http: cannot write %s: %s; `pyprof top "
				 "--collector` will not find the members' "
				 "socket",
				 w->members_path, strerror(-rc));
			w->members_path[0] = 0;
		}
	}
	log_info("http: serving each user its own processes' /debug/pprof/ "
		 "on %s (no token: the kernel names the caller; "
		 "--http-members)",
		 pprof_server_members_addr(w->http));
	return 0;
}

/* --http and --http-members. */
static int start_serving(void *arg, const struct collector_parts *parts)
{
	struct wiring *w = arg;
	int rc;

	if (!w->opts->http_spec && !w->opts->http_members)
		return 0;
	if ((rc = start_http(w, parts)) < 0)
		return rc;
	return w->opts->http_members ? start_members(w, parts) : 0;
}

/* Waiting HTTP requests get 503; the server is gone. */
static void stop_serving(void *arg)
{
	struct wiring *w = arg;

	pprof_server_free(w->http);
	w->http = NULL;
}

static void wiring_done(void *arg)
{
	struct wiring *w = arg;

	if (w->token_path[0])
		unlink(w->token_path);
	w->token_path[0] = 0;
	if (w->addr_path[0])
		unlink(w->addr_path);
	w->addr_path[0] = 0;
	if (w->members_path[0])
		unlink(w->members_path);
	w->members_path[0] = 0;
}

int main(int argc, char **argv)
{
	struct cmdline c = { .opts = { .ready_fd = -1,
				       .hold_max = DEFAULT_HOLD_MAX },
			     .push = { .spool_max = PUSH_SPOOL_MAX_DEFAULT },
			     .level = LOG_INFO };
	const char *env = getenv("PYPROF_LOG");
	struct wiring w = { .opts = &c.opts };
	const struct collector_ext ext = {
		.add_sinks = add_sinks,
		.start_serving = start_serving,
		.stop_serving = stop_serving,
		.end_sinks = end_sinks,
		.done = wiring_done,
		.arg = &w,
	};
	int rc;

	rc = cmdline_parse(&c, argc, argv);
	if (rc >= 0)
		goto out;
	if (!c.level_set && env && strcmp(env, "debug") == 0)
		c.level = LOG_DEBUG;
	log_set_level(c.level);
	/* Files are optional when pushing. */
	if (!c.opts.output_dir && !c.opts.push &&
	    (!c.opts.output_file || c.opts.merge || c.opts.period_ns))
		c.opts.output_dir = DEFAULT_OUTPUT_DIR;
	rc = collector_run(&c.opts, &ext) < 0 ? 1 : 0;
out:
	push_opts_free(&c.push);
	return rc;
}
