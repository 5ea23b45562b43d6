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
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"

#define TOPP "pyprof top --pid"

enum { OPT_PID = 256, OPT_HZ, OPT_MODE, OPT_DURATION, OPT_TIMEOUT };

/* 0, or -1 after a usage line. rows: -n. */
static int parse(struct attach *a, int argc, char **argv, char *rows)
{
	static const struct option longs[] = {
		{ "pid", required_argument, NULL, OPT_PID },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
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
					PYPROF_MAX_HZ, optarg), -1;
			snprintf(a->r.hz, sizeof a->r.hz, "%lu", v);
			break;
		case OPT_MODE:
			if (strcmp(optarg, "cpu") && strcmp(optarg, "wall"))
				return usage_error(TOPP, "--mode accepts cpu or "
					"wall, not '%s'", optarg), -1;
			a->r.mode = optarg;
			break;
		case OPT_DURATION:
		case OPT_TIMEOUT:
			if (cmd_parse_uint(optarg, 1, 86400, &v))
				return usage_error(TOPP, "%s accepts an integer "
					"from 1 to 86400, not '%s'",
					c == OPT_DURATION ? "--duration"
							  : "--timeout",
					optarg), -1;
			*(c == OPT_DURATION ? &a->duration : &a->timeout) = v;
			break;
		case 'n':
			if (cmd_parse_uint(optarg, 1, 1000, &v))
				return usage_error(TOPP, "-n accepts an integer "
					"from 1 to 1000, not '%s'", optarg), -1;
			snprintf(rows, 16, "%lu", v);
			break;
		default:
			return usage_error(TOPP, "%s option '%s' (with --pid: "
					   "-n, --hz, --mode, --duration, "
					   "--timeout)",
					   c == ':' ? "missing value for"
						    : "unknown",
					   argv[optind - 1]), -1;
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
	char *argv[] = { "top", "-n", (char *)rows, (char *)file, NULL };
	time_t now = time(NULL);
	char when[16];

	strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("pyprof top: process %d (%s), %s, the last second at %s "
	       "(Ctrl-C ends)\n\n", (int)a->pid, a->t.comm,
	       a->r.mode ? a->r.mode : "cpu", when);
	fflush(stdout);
	cmd_top(4, argv);
	if (!tty)
		putchar('\n');
	fflush(stdout);
}

/* The live loop, the collector started and the process connected. */
static int live(struct attach *a, const char *rows)
{
	const char *extra[8];
	char out[2048], file[CMD_PATH_MAX];
	char dir[CMD_PATH_MAX];
	long long seen = 0;
	double end = attach_now_s() + (double)a->duration;
	int n = 0, tty = isatty(STDOUT_FILENO);

	snprintf(dir, sizeof dir, "%s", a->r.profile);
	if (a->r.hz[0]) {
		extra[n++] = "--hz";
		extra[n++] = a->r.hz;
	}
	if (a->r.mode) {
		extra[n++] = "--mode";
		extra[n++] = a->r.mode;
	}
	extra[n] = NULL;
	if (attach_ctl(a, a->r.sock, "start", extra, out, sizeof out) != 0) {
		log_error("process %d did not start sampling: %s", (int)a->pid,
			  out);
		return 1;
	}
	while (!attach_stop_sig && attach_target_alive(a) &&
	       (!a->duration || attach_now_s() < end)) {
		if (newest(dir, &seen, file, sizeof file))
			show(a, file, rows, tty);
		attach_nap_ms(100);
	}
	if (attach_target_alive(a))
		attach_ctl(a, a->r.sock, "stop", NULL, out, sizeof out);
	return 0;
}

int cmd_top_any(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--pid") || !strncmp(argv[i], "--pid=", 6))
			return cmd_top_pid(argc, argv);
	return cmd_top(argc, argv);
}

int cmd_top_pid(int argc, char **argv)
{
	struct attach a;
	char rows[16] = "20", config[2048];
	int rc, code = 1, st;

	memset(&a, 0, sizeof a);
	a.r.coll_pid = -1;
	a.timeout = 10;
	a.r.period_s = 1;
	if (parse(&a, argc, argv, rows) < 0)
		return CMD_EXIT_USAGE;
	if (!a.pid)
		return usage_error(TOPP, "--pid expects a process id"),
		       CMD_EXIT_USAGE;
	a.r.attached = a.pid;
	if (record_find_files(&a.r) != 0 ||
	    attach_target_check(a.pid, a.r.lib, 0, &a.t) < 0)
		return 1;
	rc = attach_dir(a.dir, sizeof a.dir);
	if (rc < 0) {
		log_error("cannot use %s: %s", a.dir, strerror(-rc));
		return 1;
	}
	attach_sweep(a.dir);
	if (attach_private_paths(&a) != 0)
		goto out;
	/* the profiles of each second go in a directory of their own */
	a.r.profile[strlen(a.r.profile) - strlen(".pb.gz")] = '\0';
	if (mkdir(a.r.profile, 0700) != 0 ||
	    record_collector_start(&a.r) != 0) {
		log_error("could not start the collector for process %d",
			  (int)a.pid);
		goto out;
	}
	attach_signals_install();
	if (!a.t.lib_loaded) {
		attach_make_config(&a, a.r.sock, 0, config, sizeof config);
		if (attach_inject(&a.t, a.r.lib, config, a.dir,
				  attach_now_s() + (double)a.timeout) < 0)
			goto out;
	}
	rc = attach_wait_connected(&a, a.r.sock,
				   attach_now_s() + (double)a.timeout);
	if (rc < 0) {
		record_collector_stop(&a.r, &st);
		attach_say_not_connected(&a, rc);
		goto out;
	}
	code = live(&a, rows);
out:
	if (a.r.coll_pid > 0)
		record_collector_stop(&a.r, &st);
	if (a.r.tmpdir[0]) {
		char cmd_dir[CMD_PATH_MAX];
		snprintf(cmd_dir, sizeof cmd_dir, "%s", a.r.profile);
		cmd_remove_tmpdir(cmd_dir);
		cmd_remove_tmpdir(a.r.tmpdir);
	}
	return code;
}
