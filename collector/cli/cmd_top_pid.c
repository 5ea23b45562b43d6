/*
 * cmd_top_pid.c - `pyprof top --pid PID`: a live table of a running
 * process's hottest functions, refreshed every second, like `py-spy top`.
 *
 * It attaches as `pyprof attach` does (cmd_attach.c's steps), with a
 * private collector that writes the process's profile of every second
 * (--period 1) into a temporary directory; each new one is shown with
 * `pyprof top`'s own table (views/renderers.h), the screen cleared first when
 * the output is a terminal (two ANSI sequences: any terminal, tmux,
 * ssh), else one table after the other. Ctrl-C (or --duration) ends it:
 * sampling is switched off and the library left dormant, as after an
 * attach.
 *
 * A process with nothing loaded (any version, 2.7 to 3.15) is read from
 * outside instead, as `pyprof record --pid` reads it (outside.h): the
 * profile of each second built in memory and shown the same way.
 * Nothing is loaded into it then, even on 3.14+ where an attach could:
 * reading needs no safe point in the target, runs nothing there, and
 * leaves nothing behind.
 *
 * A process started with the library reports to a collector of its own
 * choosing: attaching again is not possible (the library is there,
 * talking to that collector). When that collector serves HTTP (--http:
 * it writes its address to SOCKET.http-addr, the token to
 * SOCKET.http-token), each second's profile is asked of it instead
 * (/debug/pprof/profile?seconds=1&pid=PID: a window of its own, which
 * switches sampling on in a dormant process for that second), as `top
 * --collector SOCKET` does for all its processes at once, through
 * client/http_client.h (HTTP/1.0 over one connection per second, the
 * token in the query), the profile read in memory.
 *
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "cli/outside.h"
#include "client/http_client.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/envcheck.h"
#include "pyprof/wire.h"
#include "views/renderers.h"
#include "views/view_read.h"

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

/* One screen: the title, then top's table of p (NULL: a profile that
 * could not be read, said already). */
static void show(const struct attach *a, const struct view_profile *p,
		 const char *rows, int tty)
{
	char who[CMD_PATH_MAX + 64], err[ERR_LEN];
	struct view_top_opts o = { .n_rows = strtoul(rows, NULL, 10) };
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
	if (p && view_top(stdout, p, &o, err) < 0)
		log_error("%s", err);
	fflush(stdout);
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

/* show() of the profile in file. */
static void show_file(const struct attach *a, const char *file,
		      const char *rows, int tty)
{
	struct view_profile *p = NULL;
	char err[ERR_LEN];

	if (view_read_text_file(file, &p, err) < 0)
		log_error("%s: %s", file, err);
	show(a, p, rows, tty);
	view_free(p);
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
			show_file(a, file, rows, tty);
		attach_nap_ms(100);
	}
	if (attach_target_alive(a)) {
		struct ctl_request stop = { .verb = WIRE_VERB_STOP, .mode = -1 };
		attach_ctl(a, a->r.sock, &stop, NULL, err, sizeof err);
	}
	return 0;
}

/* ---- over a running collector's HTTP server ------------------------ */

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

/* No HTTP server of top_collector we may use: say why, in one line.
 * addr_path exists but we may not read it (the collector shares its
 * live views of every process with its readers' group alone), or there
 * is none. */
static void no_http_said(pid_t pid, const struct http_missing *m)
{
	const char *addr_path = m->addr_path;
	const struct stat *st = &m->st;
	int unreadable = m->unreadable;
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

/* Where top_collector serves HTTP (h). 0, or -1 after one line. */
static int source_of(pid_t pid, struct http_src *h)
{
	struct http_missing m;
	char err[ERR_LEN];
	int rc = http_source(top_collector, h, &m, err, sizeof err);

	if (rc == -1)
		log_error("%s", err);
	else if (rc == -2)
		no_http_said(pid, &m);
	return rc < 0 ? -1 : 0;
}

/* The next `seconds` s of pid (0: every process) in mode (NULL: its own)
 * from h, read as text for the terminal. NULL with one line in err. */
static struct view_profile *fetch_profile(const struct http_src *h,
					  pid_t pid, const char *mode,
					  const char *seconds, char *err,
					  size_t n)
{
	struct view_profile *p = NULL;
	char *body = NULL, why[ERR_LEN];
	size_t len = 0;

	if (http_fetch_window(h, pid, mode, seconds, &body, &len, err, n) < 0)
		return NULL;
	if (view_read_text_mem(body, len, &p, why) < 0)
		snprintf(err, n, "http://%.100s/ sent no profile: %.300s",
			 h->addr, why);
	free(body);
	return p;
}

/* The live loop over the collector's HTTP server. 0 or 1. */
static int live_http(struct attach *a, const char *rows)
{
	struct http_src h;
	char err[ERR_LEN];
	double end = attach_now_s() + (double)a->duration;
	int tty = isatty(STDOUT_FILENO);

	if (source_of(a->pid, &h) < 0)
		return 1;
	attach_signals_install();
	while (!attach_stop_sig && (!a->pid || attach_target_alive(a)) &&
	       (!a->duration || attach_now_s() < end)) {
		struct view_profile *p =
			fetch_profile(&h, a->pid, a->r.mode, "1", err,
				      sizeof err);
		if (!p) {
			if (attach_stop_sig)
				break;
			log_error("%s", err);
			return 1;
		}
		show(a, p, rows, tty);
		view_free(p);
	}
	return 0;
}

/* ---- from outside ------------------------------------------------- */

struct outside_top {
	const struct attach *a;
	const char *rows;
	int tty, failed;
};

static void outside_window(void *arg, struct outside_prof *o)
{
	struct outside_top *c = arg;
	struct view_profile *p = NULL;
	char err[ERR_LEN];
	void *data = NULL;
	size_t len = 0;
	int rc = outside_prof_build(o, &data, &len);

	if (rc < 0) {
		if (!c->failed)
			log_error("cannot build the window's profile: %s",
				  strerror(-rc));
		c->failed = 1;
		return;
	}
	if (view_read_text_mem(data, len, &p, err) < 0)
		log_error("the window's profile: %s", err);
	free(data);
	show(c->a, p, c->rows, c->tty);
	view_free(p);
}

/* The live loop over the process read from outside. 0 or 1. */
static int live_outside(struct attach *a, const char *rows)
{
	struct outside_run r;
	struct outside_top c = { a, rows, isatty(STDOUT_FILENO), 0 };

	memset(&r, 0, sizeof r);
	if (outside_open(a->pid, &r.py, a->t.comm, sizeof a->t.comm) < 0)
		return 1;
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
		return 1;
	}
	if (r.exited)
		log_info("process %d (%s) exited", (int)a->pid, a->t.comm);
	outside_done(&r);
	return c.failed;
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

struct view_profile *top_fetch_pid_window(const char *sock, pid_t pid,
					  const char *mode, const char *seconds)
{
	struct view_profile *p;
	struct http_src h;
	char err[ERR_LEN];

	top_collector = sock;
	if (source_of(pid, &h) < 0)
		return NULL;
	if (!(p = fetch_profile(&h, pid, mode, seconds, err, sizeof err)))
		log_error("process %d has the library, but its collector on "
			  "%s gave no profile (%s): is that collector still "
			  "running, with --http?",
			  (int)pid, sock, err);
	return p;
}
