/*
 * collector_cmdline.c - pyprof-collector's command line: its usage text,
 * each option checked into struct cmdline (collector_cmdline.h), --config
 * FILE's lines through the same code, and the combinations refused.
 *
 * Called once by main_collector.c's main, before anything starts; the
 * configuration fuzzer (tests/fuzz/config_fuzz.c) includes it whole.
 * Runs on the main thread.
 */
#include "collector_cmdline.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/log.h"
#include "common/usage.h"
#include "common/version.h"
#include "daemon/collector.h"
#include "daemon/listener.h"
#include "daemon/output.h"
#include "push/push_opts.h"
#include "pyprof/defaults.h"

#define PROG "pyprof-collector" /* for usage_error */
#define MAX_PERIOD_S (7 * 86400)
#define MAX_CLIENTS (1 << 20)
#define MAX_EXIT_GRACE_MS 600000 /* ten minutes */
#define MAX_TOKEN_LEN 200
#define MAX_HOLD_MAX (1ull << 40)

/* --http-members' part of usage. */
static void usage_members(FILE *out)
{
	fputs("  --http-members PATH  the same endpoints on a Unix socket every "
	      "user the\n"
	      "                     collector serves may connect to (mode "
	      "0666), no\n"
	      "                     token: the kernel names each caller "
	      "(SO_PEERCRED),\n"
	      "                     who sees its own processes only; written "
	      "to\n"
	      "                     SOCKET.http-members for pyprof top and "
	      "dump\n",
	      out);
}

/* The push options' part of usage (push_opts.h). */
static void usage_push(FILE *out)
{
	fputs(
		"  --pyroscope URL    push every window (--period; each process's, or the\n"
		"                     merged one) to Grafana Pyroscope's POST URL/ingest\n"
		"                     (Alloy's pyroscope.receive_http takes it too); the\n"
		"                     collector never waits on the network: a window that\n"
		"                     cannot be sent is spooled and retried\n"
		"  --otlp URL         push every window as OpenTelemetry profiles to\n"
		"                     POST URL/v1development/profiles (OTLP/HTTP), the\n"
		"                     same way; with --pyroscope too, each its own queue\n"
		"  --service-name NAME  the service the windows belong to (default: the\n"
		"                     process name; merged: the name all processes share,\n"
		"                     else pyprof)\n"
		"  --push-label KEY=VALUE  a series label (repeatable; host=<host name>\n"
		"                     unless given)\n"
		"  --push-basic-auth USER  HTTP basic authentication, the password from\n"
		"                     $PYPROF_PUSH_PASSWORD or --push-password-file FILE\n"
		"  --push-bearer-token-file FILE  send Authorization: Bearer <its line>\n"
		"  --push-ca-file FILE  trust the CA certificates in FILE (PEM) for HTTPS\n"
		"                     instead of the system's\n"
		"  --push-header 'Name: value'  add a header (repeatable), such as\n"
		"                     X-Scope-OrgID: TENANT\n"
		"  --spool-dir DIR    where unsent windows wait, in DIR/pyroscope and\n"
		"                     DIR/otlp (default DIR/spool under --output-dir,\n"
		"                     else ~/.local/state/pyprof/spool)\n"
		"  --spool-max SIZE   at most SIZE bytes spooled (default 256M; K, M, G),\n"
		"                     the oldest dropped first\n",
		out);
}

/* The clients' users and groups, and --http's part of usage. */
static void usage_http(FILE *out)
{
	fputs(
		"  --allow-user USER  also serve clients of USER (a name or a uid; may be\n"
		"                     repeated); the socket is then mode 0666 in a 0711\n"
		"                     directory, and clients are checked by credentials\n"
		"  --allow-group GROUP  also serve processes in GROUP (a name or a gid;\n"
		"                     their gid or a supplementary group), as --allow-user\n"
		"  --http [ADDR:]PORT serve Go's /debug/pprof/ endpoints over HTTP (go tool\n"
		"                     pprof http://HOST:PORT/debug/pprof/profile?seconds=N);\n"
		"                     without ADDR on 127.0.0.1 only; PORT 0 picks one\n"
		"                     (logged). Off by default\n"
		"  --http unix:PATH   the same on a Unix socket (mode 0600; 0660 of the\n"
		"                     --output-group or --readers-group) that no other\n"
		"                     user can take while the collector is down, as\n"
		"                     they can a TCP port:\n"
		"                     curl --unix-socket PATH http://localhost/debug/pprof/\n"
		"  --http-token TOKEN require TOKEN on every HTTP request (or set\n"
		"                     PYPROF_HTTP_TOKEN, which ps does not show). Without\n"
		"                     it a random token is made at start, written to\n"
		"                     SOCKET.http-token (mode 0600, 0640 of the group\n"
		"                     above; removed at exit) and\n"
		"                     logged in the URL to open. A request carries it as\n"
		"                     ?token=TOKEN, as http://pyprof:TOKEN@HOST:PORT/...\n"
		"                     (go tool pprof, curl), or Authorization: Bearer TOKEN\n"
		"  --http-no-auth     serve HTTP without a token: anyone who can reach the\n"
		"                     port reads command lines and switches sampling on\n",
		out);
}

/* The limits' part of usage: clients, memory. */
static void usage_limits(FILE *out)
{
	fprintf(out,
		"  --max-clients N    serve at most N clients at once (default %d, and at\n"
		"                     most the descriptor limit less 64); beyond, the one\n"
		"                     waiting longest without a HELLO is closed, or the\n"
		"                     newcomer\n",
		COLLECTOR_MAX_CLIENTS);
	fprintf(out,
		"  --max-clients-per-user N  connections of one user other than "
		"the\n"
		"                     collector's own (default a quarter of "
		"--max-clients);\n"
		"                     beyond, the newcomer is turned away\n"
		"  --max-clients-per-process N  connections of one process "
		"of such a\n"
		"                     user (default %d)\n"
		"  --max-memory SIZE  definitions (names, files, stacks) all "
		"clients hold\n"
		"                     together, K, M or G (default %lluM); a "
		"client whose\n"
		"                     definition would pass it is closed\n"
		"  --max-memory-per-user SIZE  the same for the clients of one "
		"user other\n"
		"                     than the collector's own (default a "
		"quarter of\n"
		"                     --max-memory)\n",
		COLLECTOR_MAX_CLIENTS_PROC,
		(unsigned long long)(COLLECTOR_MAX_MEMORY >> 20));
}

static void usage(FILE *out)
{
	char sock[256];
	if (pyprof_default_socket(sock, sizeof(sock)) < 0)
		snprintf(sock, sizeof(sock), "(too long)");
	fprintf(out,
		"usage: pyprof-collector [options]\n"
		"\n"
		"Receives samples from Python processes running with libpyprof.so and\n"
		"writes pprof CPU profiles (read them with `go tool pprof FILE`).\n"
		"\n"
		"options:\n"
		"  --socket PATH      listen on PATH (default %s;\n"
		"                     its directory is created with mode 0700)\n"
		"  --output-dir DIR   write each process's profile to DIR when it ends, as\n"
		"                     <comm>.<pid>.<YYYYmmddTHHMMSSZ>.pb.gz (its start, in\n"
		"                     UTC; default ./%s unless only --output is given,\n"
		"                     or windows are pushed: then no files without it)\n"
		"  --output-group GROUP  share what is written with GROUP (a name or a\n"
		"                     gid you are a member of): files 0640 and new\n"
		"                     directories 0750, of that group. Without it files\n"
		"                     are 0600 and new directories 0700, whatever the\n"
		"                     umask: profiles hold every process's command line\n"
		"  --readers-group GROUP  each process's files in DIR/uid-<UID>/: its\n"
		"                     user reads them (a POSIX ACL), GROUP reads all\n"
		"                     (files 0640 of GROUP, DIR 0751, the HTTP token and\n"
		"                     socket too). Not with --output-group\n"
		"  --period SECONDS   continuous profiling: at every multiple of SECONDS\n"
		"                     also write each live process's profile of that window\n"
		"                     (named by the window's start), then start afresh\n"
		"  --hold-max SIZE    memory for profiles that could not be written (disk\n"
		"                     full): kept and written when there is room, oldest\n"
		"                     first; past SIZE (default 64M; K, M, G; 0 keeps\n"
		"                     none) the oldest are dropped, their samples counted\n"
		"                     as lost: [lost: not written] in the process's next\n"
		"                     profile, the log and --summary\n"
		"  --merge            write one profile of all processes (per period, or at\n"
		"                     exit) as DIR/merged.<YYYYmmddTHHMMSSZ>.pb.gz, with\n"
		"                     pid, process and command labels on every sample\n"
		"  --output FILE      at exit, write one profile merging all processes\n"
		"                     (not with --period)\n"
		"  --per-thread       beside each profile also write one per thread that\n"
		"                     has samples in it, holding only that thread's: a\n"
		"                     profile NAME.pb.gz gets NAME.tid<TID>.<thread>.pb.gz\n"
		"                     (--output FILE: FILE without .pb.gz, then the same;\n"
		"                     a file of several processes: .pid<PID>.tid<TID>...);\n"
		"                     <thread> is threading.Thread.name in [A-Za-z0-9_-]\n"
		"  --summary FILE     at exit, write \"processes=N samples=N lost=N\" (and\n"
		"                     \" refused=N\" when some process was not profiled),\n"
		"                     then a \"refused N REASON\" line per reason\n"
		"  --timeline FILE    at exit, with --output, write every sample in arrival\n"
		"                     order: (pid, tid, time, stack, value), stacks naming\n"
		"                     the --output profile's locations (for time-ordered\n"
		"                     speedscope: pyprof convert --timeline FILE)\n",
		sock, DEFAULT_OUTPUT_DIR);
	usage_http(out);
	usage_members(out);
	usage_push(out);
	usage_limits(out);
	fputs("  --ready-fd N       write \"1\" to file descriptor N once listening, then\n"
	      "                     close it\n"
	      "  --exit-grace MS    on SIGTERM or SIGINT, first wait up to MS milliseconds\n"
	      "                     for the processes still connected to end (default 0;\n"
	      "                     pyprof record: 2000); those still connected then are\n"
	      "                     counted as running in --summary\n"
	      "  --log-level LEVEL  error, warn, info (default) or debug\n"
	      "  -v, --verbose      same as --log-level debug (so is PYPROF_LOG=debug)\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      print the version\n"
	      "  --config FILE      read options from FILE, one \"key = value\" a line, key\n"
	      "                     a long option without its dashes (a flag: true or\n"
	      "                     false); the command line's options win\n"
	      "\n"
	      "SIGTERM or SIGINT: read what clients already sent, write the profiles,\n"
	      "exit. Exit status: 0 ok, 1 runtime error (cannot listen, cannot write),\n"
	      "2 usage error.\n",
	      out);
}

/* While --config's lines are applied, the log's prefix:
 * "pyprof-collector: FILE:N", so that an error names the line. */
static char config_where[PATH_MAX + 32];

/* A uid or gid in decimal: digits only, below max (which is (uid_t)-1,
 * "no id"). */
static int parse_id(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v >= max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A user name, or a uid in decimal (which need not have a name). */
static int parse_user(const char *s, uid_t *uid)
{
	struct passwd *pw = getpwnam(s);
	unsigned long v;

	if (pw) {
		*uid = pw->pw_uid;
		return 0;
	}
	if (parse_id(s, (uid_t)-1, &v) < 0)
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

/* A group name, or a gid in decimal. */
static int parse_group(const char *s, gid_t *gid)
{
	struct group *gr = getgrnam(s);
	unsigned long v;

	if (gr) {
		*gid = gr->gr_gid;
		return 0;
	}
	if (parse_id(s, (gid_t)-1, &v) < 0)
		return -EINVAL;
	*gid = (gid_t)v;
	return 0;
}

/* A decimal number from lo to hi (strtol's forms: a sign and leading
 * blanks pass, as they always have). */
static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "N", "NK", "NM", "NG" (powers of 1024), up to MAX_HOLD_MAX. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	if (*end) {
		const char *units = "KMG", *u = strchr(units, *end);
		if (!u || !*u || end[1])
			return -EINVAL;
		shift = 10u * (unsigned)(u - units + 1);
	}
	if (v > MAX_HOLD_MAX >> shift)
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Whether chown(2) lets us give a file to gid: root, or a member. */
static int may_give_to(gid_t gid)
{
	gid_t groups[NGROUPS_MAX];
	int n;

	if (geteuid() == 0 || getegid() == gid)
		return 1;
	n = getgroups(NGROUPS_MAX, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

enum {
	OPT_SOCKET = 256,
	OPT_OUTPUT_DIR,
	OPT_OUTPUT,
	OPT_SUMMARY,
	OPT_READY_FD,
	OPT_LOG_LEVEL,
	OPT_PERIOD,
	OPT_MERGE,
	OPT_ALLOW_USER,
	OPT_TIMELINE,
	OPT_PER_THREAD,
	OPT_HTTP,
	OPT_HTTP_TOKEN,
	OPT_OUTPUT_GROUP,
	OPT_READERS_GROUP,
	OPT_HTTP_NO_AUTH,
	OPT_HTTP_MEMBERS,
	OPT_HOLD_MAX,
	OPT_MAX_CLIENTS,
	OPT_SPOOL_MAX,
	OPT_EXIT_GRACE,
	OPT_MAX_CLIENTS_USER,
	OPT_MAX_CLIENTS_PROC,
	OPT_MAX_MEMORY,
	OPT_MAX_MEMORY_USER,
	OPT_ALLOW_GROUP,
	OPT_CONFIG,
	OPT_PUSH /* the push options: push_opts.h */
};

static const struct option longopts[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "summary", required_argument, NULL, OPT_SUMMARY },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "ready-fd", required_argument, NULL, OPT_READY_FD },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "period", required_argument, NULL, OPT_PERIOD },
	{ "merge", no_argument, NULL, OPT_MERGE },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "allow-user", required_argument, NULL, OPT_ALLOW_USER },
	{ "allow-group", required_argument, NULL, OPT_ALLOW_GROUP },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-token", required_argument, NULL, OPT_HTTP_TOKEN },
	{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
	{ "max-clients-per-user", required_argument, NULL,
	  OPT_MAX_CLIENTS_USER },
	{ "max-clients-per-process", required_argument, NULL,
	  OPT_MAX_CLIENTS_PROC },
	{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
	{ "max-memory-per-user", required_argument, NULL,
	  OPT_MAX_MEMORY_USER },
	{ "exit-grace", required_argument, NULL, OPT_EXIT_GRACE },
	{ "output-group", required_argument, NULL, OPT_OUTPUT_GROUP },
	{ "readers-group", required_argument, NULL, OPT_READERS_GROUP },
	{ "http-no-auth", no_argument, NULL, OPT_HTTP_NO_AUTH },
	{ "http-members", required_argument, NULL, OPT_HTTP_MEMBERS },
	{ "hold-max", required_argument, NULL, OPT_HOLD_MAX },
	{ "spool-max", required_argument, NULL, OPT_SPOOL_MAX },
	{ "pyroscope", required_argument, NULL, OPT_PUSH },
	{ "otlp", required_argument, NULL, OPT_PUSH },
	{ "service-name", required_argument, NULL, OPT_PUSH },
	{ "push-label", required_argument, NULL, OPT_PUSH },
	{ "push-basic-auth", required_argument, NULL, OPT_PUSH },
	{ "push-password-file", required_argument, NULL, OPT_PUSH },
	{ "push-bearer-token-file", required_argument, NULL, OPT_PUSH },
	{ "push-ca-file", required_argument, NULL, OPT_PUSH },
	{ "push-header", required_argument, NULL, OPT_PUSH },
	{ "spool-dir", required_argument, NULL, OPT_PUSH },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* The options that name a file or a socket: where their value goes. */
static const char **path_option(struct collector_opts *o, int opt)
{
	switch (opt) {
	case OPT_SOCKET:
		return &o->socket_path;
	case OPT_OUTPUT_DIR:
		return &o->output_dir;
	case OPT_OUTPUT:
		return &o->output_file;
	case OPT_SUMMARY:
		return &o->summary_file;
	case OPT_TIMELINE:
		return &o->timeline_file;
	case OPT_HTTP:
		return &o->http_spec;
	case OPT_HTTP_TOKEN:
		return &o->http_token;
	case OPT_HTTP_MEMBERS:
		return &o->http_members;
	default:
		return NULL;
	}
}

/* The field of --max-clients, --max-clients-per-user or
 * --max-clients-per-process, and in *name the option. */
static size_t *clients_option(struct collector_opts *o, int opt,
			      const char **name)
{
	if (opt == OPT_MAX_CLIENTS_USER) {
		*name = "--max-clients-per-user";
		return &o->max_clients_user;
	}
	if (opt == OPT_MAX_CLIENTS_PROC) {
		*name = "--max-clients-per-process";
		return &o->max_clients_proc;
	}
	*name = "--max-clients";
	return &o->max_clients;
}

/* --ready-fd, --period, --max-clients (and per user and process) and
 * --exit-grace: whole numbers in bounds. */
static int number_option(struct collector_opts *o, int opt, const char *arg)
{
	long v;

	switch (opt) {
	case OPT_READY_FD:
		if (parse_long(arg, 0, INT_MAX, &v) < 0)
			return usage_error(PROG, "--ready-fd wants a file "
						 "descriptor number, not '%s'",
					   arg);
		if (fcntl((int)v, F_GETFD) < 0)
			return usage_error(PROG, "--ready-fd %s is not an open "
						 "file descriptor",
					   arg);
		o->ready_fd = (int)v;
		return 0;
	case OPT_PERIOD:
		if (parse_long(arg, 1, MAX_PERIOD_S, &v) < 0)
			return usage_error(PROG, "--period wants whole seconds "
						 "from 1 to %d, not '%s'",
					   MAX_PERIOD_S, arg);
		o->period_ns = (uint64_t)v * 1000000000u;
		return 0;
	case OPT_EXIT_GRACE:
		if (parse_long(arg, 0, MAX_EXIT_GRACE_MS, &v) < 0)
			return usage_error(PROG, "--exit-grace wants "
						 "milliseconds from 0 to %d, not "
						 "'%s'",
					   MAX_EXIT_GRACE_MS, arg);
		o->exit_grace_ns = (uint64_t)v * 1000000u;
		return 0;
	default: { /* OPT_MAX_CLIENTS, and per user and per process */
		const char *name;
		size_t *max = clients_option(o, opt, &name);
		if (parse_long(arg, 1, MAX_CLIENTS, &v) < 0)
			return usage_error(PROG, "%s wants a number from 1 to "
						 "%d, not '%s'",
					   name, MAX_CLIENTS,
					   arg);
		*max = (size_t)v;
		return 0;
	}
	}
}

/* --allow-user, --output-group and --readers-group: who may read or own
 * what we write. */
static int who_option(struct cmdline *c, int opt, const char *arg)
{
	struct collector_opts *o = &c->opts;
	uid_t uid;

	if (opt == OPT_OUTPUT_GROUP || opt == OPT_READERS_GROUP) {
		const char *name = opt == OPT_OUTPUT_GROUP ? "--output-group"
							   : "--readers-group";
		if (o->output_shared && o->per_uid != (opt == OPT_READERS_GROUP))
			return usage_error(PROG, "--readers-group and "
						 "--output-group both say who reads "
						 "every profile: give one");
		if (parse_group(arg, &o->output_gid) < 0)
			return usage_error(PROG, "%s wants a group name or a "
						 "gid, not '%s' (no such group)",
					   name, arg);
		if (!may_give_to(o->output_gid))
			return usage_error(PROG, "%s %s: files can only be "
						 "given to a group you are a member "
						 "of",
					   name, arg);
		o->output_shared = 1;
		o->per_uid = opt == OPT_READERS_GROUP;
		return 0;
	}
	if (opt == OPT_ALLOW_GROUP) {
		gid_t gid;
		if (parse_group(arg, &gid) < 0)
			return usage_error(PROG, "--allow-group wants a group "
						 "name or a gid, not '%s' (no such "
						 "group)",
					   arg);
		if (o->n_allow_gids == MAX_ALLOW_USERS)
			return usage_error(PROG, "--allow-group: at most %d "
						 "groups",
					   MAX_ALLOW_USERS);
		c->allow_g[o->n_allow_gids++] = gid;
		o->allow_gids = c->allow_g;
		return 0;
	}
	if (parse_user(arg, &uid) < 0)
		return usage_error(PROG, "--allow-user wants a user name or a "
					 "uid, not '%s' (no such user)",
				   arg);
	if (o->n_allow_uids == MAX_ALLOW_USERS)
		return usage_error(PROG, "--allow-user: at most %d users",
				   MAX_ALLOW_USERS);
	c->allow[o->n_allow_uids++] = uid;
	o->allow_uids = c->allow;
	return 0;
}

/* The options that take a size (K, M or G): 0, or the exit status. */
static int size_option(struct cmdline *c, int opt, const char *arg)
{
	struct collector_opts *o = &c->opts;

	switch (opt) {
	case OPT_MAX_MEMORY:
	case OPT_MAX_MEMORY_USER: {
		int all = opt == OPT_MAX_MEMORY;
		uint64_t *max = all ? &o->max_memory : &o->max_memory_user;
		if (parse_size(arg, max) < 0 || *max < (1u << 20))
			return usage_error(PROG, "%s wants a size in bytes, "
						 "with K, M or G (of 1024) or not, "
						 "from 1M to 1T, not '%s'",
					   all ? "--max-memory"
					       : "--max-memory-per-user",
					   arg);
		return 0;
	}
	case OPT_HOLD_MAX:
		if (parse_size(arg, &o->hold_max) < 0)
			return usage_error(PROG, "--hold-max wants a size in "
						 "bytes, with K, M or G (of 1024) or "
						 "not, up to 1T, not '%s'",
					   arg);
		return 0;
	case OPT_SPOOL_MAX:
		if (parse_size(arg, &c->push.spool_max) < 0 ||
		    c->push.spool_max == 0)
			return usage_error(PROG, "--spool-max wants a size in "
						 "bytes, with K, M or G (of 1024) or "
						 "not, from 1 to 1T, not '%s'",
					   arg);
		c->spool_max_given = 1;
		return 0;
	}
	return 0;
}

/* One option getopt_long returned; 0, or the exit status to return. */
static int one_option(struct cmdline *c, int opt, const char *arg,
		      char **argv, int index)
{
	char err[512];

	struct collector_opts *o = &c->opts;
	const char **path = path_option(o, opt);

	if (path) {
		*path = arg;
		return 0;
	}
	switch (opt) {
	case OPT_READY_FD:
	case OPT_PERIOD:
	case OPT_MAX_CLIENTS:
	case OPT_MAX_CLIENTS_USER:
	case OPT_MAX_CLIENTS_PROC:
	case OPT_EXIT_GRACE:
		return number_option(o, opt, arg);
	case OPT_MAX_MEMORY:
	case OPT_MAX_MEMORY_USER:
	case OPT_HOLD_MAX:
	case OPT_SPOOL_MAX:
		return size_option(c, opt, arg);
	case OPT_ALLOW_USER:
	case OPT_ALLOW_GROUP:
	case OPT_OUTPUT_GROUP:
	case OPT_READERS_GROUP:
		return who_option(c, opt, arg);
	case OPT_MERGE:
		o->merge = 1;
		return 0;
	case OPT_PER_THREAD:
		o->per_thread = 1;
		return 0;
	case OPT_HTTP_NO_AUTH:
		o->http_no_auth = 1;
		return 0;
	case OPT_PUSH:
		if (push_opts_set(&c->push, longopts[index].name, arg, err,
				  sizeof(err)) < 0)
			return usage_error(PROG, "%s", err);
		return 0;
	case OPT_LOG_LEVEL:
		if (log_parse_level(arg, &c->level) < 0)
			return usage_error(PROG, "--log-level wants error, "
						 "warn, info or debug, not '%s'",
					   arg);
		c->level_set = 1;
		return 0;
	case 'v':
		c->level = LOG_DEBUG;
		c->level_set = 1;
		return 0;
	case ':':
		return usage_error(PROG, "%s needs a value", argv[optind - 1]);
	default:
		return usage_error(PROG, "unknown option '%s'",
				   argv[optind - 1]);
	}
}

/* The HTTP token: --http-token, else $PYPROF_HTTP_TOKEN (unless
 * --http-no-auth); 1 to MAX_TOKEN_LEN visible characters that need no
 * escaping in a URL's query. */
static int check_token(struct collector_opts *o)
{
	const char *env = getenv("PYPROF_HTTP_TOKEN");
	size_t n;
	int ok;

	if (!o->http_no_auth && !o->http_token && env && *env)
		o->http_token = env;
	if (!o->http_token)
		return 0;
	n = strlen(o->http_token);
	ok = n >= 1 && n <= MAX_TOKEN_LEN;
	for (size_t i = 0; i < n; i++)
		ok &= o->http_token[i] > 0x20 && o->http_token[i] < 0x7f &&
		      o->http_token[i] != '&' && o->http_token[i] != '%' &&
		      o->http_token[i] != '+';
	if (!ok)
		return usage_error(PROG, "--http-token wants 1 to %d visible "
					 "ASCII characters other than & %% +",
				   MAX_TOKEN_LEN);
	if (!o->http_spec)
		return usage_error(PROG, "--http-token goes with --http");
	return 0;
}

/* The options that only make sense together, or not together. */
static int check_combinations(struct collector_opts *o)
{
	if ((o->socket_path && !*o->socket_path) ||
	    (o->output_dir && !*o->output_dir) ||
	    (o->output_file && !*o->output_file) ||
	    (o->summary_file && !*o->summary_file) ||
	    (o->timeline_file && !*o->timeline_file) ||
	    (o->http_members && !*o->http_members))
		return usage_error(PROG, "empty path given to an option");
	if (o->http_members && o->http_members[0] != '/')
		return usage_error(PROG,
				   "--http-members wants the absolute path of "
				   "a Unix socket, not '%s'",
				   o->http_members);
	if (o->timeline_file && !o->output_file)
		return usage_error(PROG, "--timeline goes with --output (its "
					 "stacks name that profile's locations)");
	if (o->output_file && o->period_ns)
		return usage_error(PROG, "--output cannot go with --period "
					 "(each window starts afresh); use --merge");
	if (o->http_no_auth && o->http_token)
		return usage_error(PROG, "--http-no-auth and --http-token "
					 "exclude each other");
	if (o->http_no_auth && !o->http_spec)
		return usage_error(PROG, "--http-no-auth goes with --http");
	return check_token(o);
}

/* ---- --config FILE ------------------------------------------------------
 *
 * One option per line, "key = value", key a long option's name without
 * its dashes (period = 60, allow-group = pyprof, push-label = env=prod);
 * a flag takes true/false (yes/no, on/off, 1/0); blank lines and lines
 * starting with # are skipped; a repeatable option may appear on several
 * lines. An option given on the command line wins: every line of its key
 * is then left out. A bad line is a usage error naming FILE:LINE. */

#define N_LONGOPTS (sizeof(longopts) / sizeof(longopts[0]) - 1)

static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (*s == ' ' || *s == '\t')
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		*--e = 0;
	return s;
}

/* A flag's value: 1, 0, or -1 if it is neither. */
static int flag_value(const char *v)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return 1;
		if (!strcasecmp(v, no[i]))
			return 0;
	}
	return -1;
}

/* Keys whose values are secrets. */
static int secret_key(const char *key)
{
	return !strcmp(key, "http-token") || !strcmp(key, "push-basic-auth");
}

/* One "key = value" line of the config file (line already trimmed); 0,
 * or the exit status. open: others may read the file (mode o+r), which
 * then may hold no secret. */
static int config_line(struct cmdline *c, char *line, const char *seen,
		       int open, const char *file)
{
	char *eq = strchr(line, '='), *key, *val;
	size_t i;
	int on;

	if (!eq)
		return usage_error(PROG, "expected 'key = value', not '%s'", line);
	*eq = 0;
	key = trim(line);
	val = trim(eq + 1);
	for (i = 0; i < N_LONGOPTS; i++)
		if (!strcmp(longopts[i].name, key))
			break;
	if (i == N_LONGOPTS || !strcmp(key, "help") ||
	    !strcmp(key, "version") || !strcmp(key, "config"))
		return usage_error(PROG, "unknown key '%s' (the keys are "
					 "pyprof-collector's long options without "
					 "their dashes)",
				   key);
	if (open && secret_key(key))
		return usage_error(PROG, "%s holds %s and every local user may "
					 "read it: chmod o-r %s (the package's is "
					 "0640, group pyprof), or give the secret "
					 "another way (--help)",
				   file, key, file);
	if (seen[i])
		return 0; /* the command line's wins */
	if (longopts[i].has_arg == no_argument) {
		on = flag_value(val);
		if (on < 0)
			return usage_error(PROG, "%s is a flag: true or false, not "
						 "'%s'",
					   key, val);
		return on ? one_option(c, longopts[i].val, NULL, NULL,
				       (int)i)
			  : 0;
	}
	if (!*val)
		return usage_error(PROG, "%s needs a value", key);
	/* The value must outlive the parse: the options keep pointers. */
	val = strdup(val);
	if (!val)
		return usage_error(PROG, "out of memory");
	return one_option(c, longopts[i].val, val, NULL, (int)i);
}

/* Reads one line of f into buf (cap bytes, NUL-terminated, without its
 * '\n'): its length, or -1 at the end of the file. A line longer than
 * cap - 2 bytes stops the reading there, and the length returned is then
 * cap: a line cut there would give its tail as a line of its own (a
 * commented-out option turned on), so the caller refuses it whole. *nul
 * is set if the line holds a NUL byte, which would hide the rest of the
 * line from the string functions (fgets could not tell: a NUL in the
 * last line cut it silently, and one in another line was refused as a
 * line too long). */
static ssize_t config_getline(FILE *f, char *buf, size_t cap, int *nul)
{
	size_t n = 0;
	int ch;

	*nul = 0;
	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (n == cap - 2) {
			buf[n] = 0;
			return (ssize_t)cap;
		}
		*nul |= ch == 0;
		buf[n++] = (char)ch;
	}
	buf[n] = 0;
	return ch == EOF && n == 0 ? -1 : (ssize_t)n;
}

/* Applies FILE's lines to c, leaving out the keys in seen. 0, or the exit
 * status. */
static int read_config(struct cmdline *c, const char *file, const char *seen)
{
	FILE *f = fopen(file, "re");
	char buf[4096];
	struct stat st;
	int n = 0, rc = 0, open, nul;
	ssize_t len;

	if (!f)
		return usage_error(PROG, "--config %s: %s", file, strerror(errno));
	open = fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH);
	while (!rc && (len = config_getline(f, buf, sizeof(buf), &nul)) >= 0) {
		char *line;
		n++;
		snprintf(config_where, sizeof(config_where), "%s: %s:%d", PROG,
			 file, n);
		log_set_prefix(config_where);
		if ((size_t)len == sizeof(buf)) {
			rc = usage_error(PROG, "line longer than %zu bytes",
					 sizeof(buf) - 2);
			break;
		}
		if (nul) {
			rc = usage_error(PROG, "a NUL byte: not a text file");
			break;
		}
		line = trim(buf);
		if (!*line || *line == '#')
			continue;
		rc = config_line(c, line, seen, open, file);
	}
	log_set_prefix(PROG);
	fclose(f);
	return rc;
}

int cmdline_parse(struct cmdline *c, int argc, char **argv)
{
	int opt, rc, index = -1;
	char err[512], seen[N_LONGOPTS] = { 0 };
	const char *config = NULL;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":vhV", longopts, &index)) !=
	       -1) {
		int li = index;
		index = -1;
		if (opt == 'v') /* -v: the key "verbose" */
			for (li = 0; strcmp(longopts[li].name, "verbose"); li++)
				;
		if (li >= 0 && li < (int)N_LONGOPTS)
			seen[li] = 1;
		if (opt == OPT_CONFIG) {
			config = optarg;
			continue;
		}
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'V') { /* as pyprof -V */
			printf("pyprof-collector %s\n", PYPROF_VERSION);
			return 0;
		}
		rc = one_option(c, opt, optarg, argv, li);
		if (rc)
			return rc;
	}
	if (config && (rc = read_config(c, config, seen)))
		return rc;
	if (optind < argc)
		return usage_error(PROG, "unexpected argument '%s'",
				   argv[optind]);
	rc = check_combinations(&c->opts);
	if (!rc && push_opts_check(&c->push, c->spool_max_given, err,
				   sizeof(err)) < 0)
		rc = usage_error(PROG, "%s", err);
	if (c->push.pyroscope_url || c->push.otlp_url)
		c->opts.push = &c->push;
	return rc ? rc : -1;
}
