/*
 * cmd_record.c - `pyprof record`: run a command with libpyprof.so preloaded,
 * collect its samples in a private collector, write one profile.
 *
 * The sequence, and the process each step runs in:
 *
 *   pyprof                          collector (own pgrp)      COMMAND
 *   parse options, find files
 *   mkdtemp DIR (0700)
 *   fork+exec ────────────────────> listen on DIR/s.sock
 *   wait for the ready byte <────── write(ready_fd, 1 byte)
 *   fork+exec ────────────────────────────────────────────> LD_PRELOAD=lib
 *   wait (SIGINT/SIGQUIT ignored,                            streams samples
 *         SIGTERM/SIGHUP forwarded) <──────────────────────── exits
 *   SIGTERM ──────────────────────> writes OUTFILE, DIR/summary, exits
 *   print the summary line, rm DIR, exit with COMMAND's status
 *
 * Why the collector gets its own process group: the terminal's Ctrl-C goes
 * to the foreground group (pyprof and COMMAND) only, so COMMAND sees it as
 * it would without pyprof, while the collector lives on to write the
 * profile. PR_SET_PDEATHSIG stops the collector if pyprof itself is killed.
 *
 * This file holds the sequence and the checks made before anything starts
 * (the command, our own files, the output's directory); the steps are in
 * record_options.c, record_procs.c and record_result.c (record.h).
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/record.h"
#include "common/log.h"

/* Makes output_abs and checks that its directory can take a new file (by
 * making one), so that a typo is reported before the command runs, not
 * after. */
int record_check_output(struct record *r)
{
	char dir[CMD_PATH_MAX];
	struct stat st;
	char *slash;
	int len;

	if (r->output[0] == '/') {
		len = snprintf(r->output_abs, sizeof(r->output_abs), "%s",
			       r->output);
	} else {
		char cwd[CMD_PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			log_error("cannot find the current directory: %s",
				  strerror(errno));
			return -errno;
		}
		len = snprintf(r->output_abs, sizeof(r->output_abs), "%s/%s",
			       cwd, r->output);
	}
	if (len < 0 || (size_t)len >= sizeof(r->output_abs)) {
		log_error("-o/--output: path too long");
		return -ENAMETOOLONG;
	}
	if (stat(r->output_abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		log_error("-o/--output: %s is a directory", r->output);
		return -EISDIR;
	}
	memcpy(dir, r->output_abs, (size_t)len + 1);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	/* A file made and removed says more than access(): /proc, a
	 * read-only mount, a full inode table, a plain file as directory */
	char probe[CMD_PATH_MAX + 32];
	int fd = -1;
	len = snprintf(probe, sizeof(probe), "%s/.pyprof-probe.XXXXXX", dir);
	if (len > 0 && (size_t)len < sizeof(probe))
		fd = mkstemp(probe);
	else
		errno = ENAMETOOLONG;
	if (fd < 0) {
		int e = errno;

		log_error("cannot write %s: %s", r->output, strerror(e));
		return -e;
	}
	close(fd);
	unlink(probe);
	return 0;
}

/* Finds libpyprof.so and pyprof-collector beside our own executable. */
int record_find_files(struct record *r)
{
	static const char *const coll_rel[] = { "pyprof-collector", NULL };
	char dir[CMD_PATH_MAX];
	int ret;

	ret = cmd_self_dir(dir, sizeof(dir));
	if (ret) {
		log_error("cannot find pyprof's own directory: %s",
			  strerror(-ret));
		return ret;
	}
	ret = cmd_find_beside(dir, cmd_lib_rel, r->lib, sizeof(r->lib));
	if (ret) {
		log_error("libpyprof.so not found in %s or %s/../lib", dir,
			  dir);
		return ret;
	}
	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(r->lib, " :")) {
		log_error("cannot preload %s: LD_PRELOAD cannot carry a path "
			  "with a space or colon",
			  r->lib);
		return -EINVAL;
	}
	ret = cmd_find_beside(dir, coll_rel, r->collector,
			      sizeof(r->collector));
	if (ret) {
		log_error("pyprof-collector not found in %s", dir);
		return ret;
	}
	/* The module for labels from code: optional (without it a program
	 * that imports it fails as it would without pyprof). */
	if (cmd_find_beside(dir, cmd_module_rel, r->pymod, sizeof(r->pymod)) == 0)
		*strrchr(r->pymod, '/') = 0;
	else
		r->pymod[0] = 0;
	log_debug("library %s", r->lib);
	log_debug("collector %s", r->collector);
	log_debug("module %s", r->pymod[0] ? r->pymod : "(not found)");
	return 0;
}

/* ---- the subcommand --------------------------------------------------- */

static const char default_output[] = RECORD_DEFAULT_OUTPUT;

/* One run: the collector, the command, the profile at r->output. Returns
 * the exit status (the command's, or why pyprof failed). */
static int record_once(struct record *r)
{
	int ret, code, ran = 0, coll_status = -1, r_err;

	ret = cmd_make_tmpdir(r->tmpdir, sizeof(r->tmpdir));
	if (ret) {
		log_error("cannot create a temporary directory: %s",
			  strerror(-ret));
		r->tmpdir[0] = '\0';
		code = CMD_EXIT_FAIL;
		goto out;
	}
	if (cmd_join_path(r->sock, sizeof(r->sock), r->tmpdir, "s.sock") ||
	    cmd_join_path(r->summary, sizeof(r->summary), r->tmpdir,
			  "summary") ||
	    cmd_join_path(r->profile, sizeof(r->profile), r->tmpdir,
			  RECORD_TMP_PROFILE) ||
	    (r->format && (!strcmp(r->format, "speedscope") || !strcmp(r->format, "gecko")) &&
	     cmd_join_path(r->timeline, sizeof(r->timeline), r->tmpdir,
			   "timeline"))) {
		log_error("temporary path too long: %s", r->tmpdir);
		code = CMD_EXIT_FAIL;
		goto out;
	}
	log_debug("socket %s", r->sock);

	ret = record_collector_start(r);
	if (ret) {
		/* A collector that never got ready has nothing to write. */
		if (r->coll_pid > 0)
			kill(r->coll_pid, SIGKILL);
		code = ret == -EINTR ? 128 + record_pending_signal()
				     : CMD_EXIT_FAIL;
		goto out;
	}
	if (record_pending_signal()) {
		code = 128 + record_pending_signal();
		goto out;
	}

	code = record_command_run(r, &ran);
	record_collector_stop(r, &coll_status);
	if (!ran)
		goto out;
	r_err = record_report(r, coll_status);
	if (r_err && code == 0)
		code = CMD_EXIT_FAIL;
out:
	if (r->coll_pid > 0)
		record_collector_stop(r, &coll_status);
	if (r->tmpdir[0]) {
		ret = cmd_remove_tmpdir(r->tmpdir);
		if (ret)
			log_warn("could not remove %s: %s", r->tmpdir,
				 strerror(-ret));
	}
	r->tmpdir[0] = '\0';
	r->coll_pid = -1;
	return code;
}

/* The output of run i of --repeat: FILE.pb.gz becomes FILE.i.pb.gz, any
 * other name NAME.i; 0 or -ENAMETOOLONG (logged). */
static int repeat_output(const char *output, unsigned long i, char *buf,
			 size_t n)
{
	static const char ext[] = ".pb.gz";
	size_t len = strlen(output), el = sizeof(ext) - 1;
	int w;

	if (len > el && !strcmp(output + len - el, ext))
		w = snprintf(buf, n, "%.*s.%lu%s", (int)(len - el), output, i,
			     ext);
	else
		w = snprintf(buf, n, "%s.%lu", output, i);
	if (w < 0 || (size_t)w >= n) {
		log_error("-o/--output: path too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	static char name[CMD_PATH_MAX];
	const char *as_typed;
	struct record r;
	unsigned long repeat = 1;
	int ret, code = 0;

	memset(&r, 0, sizeof(r));
	r.output = default_output;
	r.coll_pid = -1;

	ret = record_parse_options(&r, argc, argv);
	if (ret == 1)
		return 0;
	if (ret < 0 || record_check_env(&r) < 0)
		return CMD_EXIT_FAIL;
	if (r.verbose)
		log_set_level(LOG_DEBUG);
	if (r.format && r.output == default_output)
		r.output = !strcmp(r.format, "svg")	 ? "pyprof.svg"
			   : !strcmp(r.format, "folded") ? "pyprof.folded"
			   : !strcmp(r.format, "gecko")	 ? "pyprof.gecko.json"
			   : !strcmp(r.format, "pstats") ? "pyprof.pstats"
							 : "pyprof.speedscope.json";
	as_typed = r.output;

	/* "Not found" first: it is the likeliest mistake, and needs nothing
	 * else to be in place. */
	ret = cmd_find_command(r.command[0]);
	if (ret == -ENOENT) {
		log_error("%s: command not found", r.command[0]);
		return CMD_EXIT_NOTFOUND;
	}
	if (ret == -EACCES) {
		log_error("%s: %s", r.command[0], strerror(EACCES));
		return CMD_EXIT_NOEXEC;
	}
	if (r.repeat[0])
		repeat = strtoul(r.repeat, NULL, 10);
	if (record_find_files(&r) != 0)
		return CMD_EXIT_FAIL;
	/* --repeat names every run's file (even with N = 1, so that a
	 * script's names do not depend on N); run 1's name is checked before
	 * anything runs, the others are in the same directory. */
	if (r.repeat[0] && repeat_output(as_typed, 1, name, sizeof(name)) < 0)
		return CMD_EXIT_FAIL;
	if (r.repeat[0])
		r.output = name;
	if (record_check_output(&r) != 0)
		return CMD_EXIT_FAIL;

	record_signals_install();
	for (unsigned long i = 1; i <= repeat && code == 0; i++) {
		if (i > 1 && (repeat_output(as_typed, i, name, sizeof(name)) < 0 ||
			      record_check_output(&r) != 0))
			return CMD_EXIT_FAIL;
		code = record_once(&r);
	}
	return code;
}
