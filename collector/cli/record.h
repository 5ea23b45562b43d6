/*
 * record.h - what the files of `pyprof record` share: struct record (the
 * options, the files and the collector's pid of one run) and the steps
 * each file provides to cmd_record.c, which runs them in order.
 *
 *   record_options.c  the command line, and the PYPROF_* the command gets
 *   record_procs.c    signals, the private collector, the command
 *   record_result.c   placing the profile and the one-line report
 *
 * Single-threaded, in the pyprof process (record_procs.c's signal handler
 * aside: it only forwards signals).
 */
#ifndef PYPROF_RECORD_H
#define PYPROF_RECORD_H

#include <sys/types.h>

#include "cli/cmd.h"

#define RECORD_DEFAULT_OUTPUT "pyprof.pb.gz"
/* what the collector writes in the temporary directory, and the stem of
 * the files it writes beside it */
#define RECORD_TMP_STEM "profile"
#define RECORD_TMP_PROFILE RECORD_TMP_STEM ".pb.gz"
#define RECORD_DEFAULT_HEAP_RATE 524288u /* Go's MemProfileRate */
#define RECORD_READY_TIMEOUT_MS 15000	 /* collector start-up              */
#define RECORD_STOP_TIMEOUT_MS 60000	 /* collector writing the profile   */
/* the collector's --exit-grace: how long processes still connected when
 * COMMAND exits may take to end before they count as running (daemons) */
#define RECORD_EXIT_GRACE_MS "2000"
#define RECORD_ATTACH_GRACE_MS "100"
#define RECORD_SUMMARY_MAX 4096
#define RECORD_MAX_REPEAT 1000 /* --repeat */

struct record {
	/* options */
	const char *output; /* as typed, for messages                   */
	char hz[24];	    /* canonical decimal; "" = leave env alone   */
	char max_depth[24];
	const char *mode;   /* "cpu", "wall" or NULL                      */
	const char *native; /* PYPROF_NATIVE: "1", "all" or NULL          */
	char heap_rate[24]; /* PYPROF_HEAP_RATE (--heap); "" = env's      */
	char repeat[24];    /* --repeat N, decimal; "" = once            */
	const char *waits;  /* PYPROF_WAITS (--waits[=RATE]) or NULL     */
	int verbose;
	int per_thread;	    /* --per-thread: the collector's, as is     */
	char **command;	    /* NULL-terminated, points into argv         */
	const char *format; /* NULL: pprof; else what cmd_convert_file
			       makes of the profile: svg, folded...     */
	/* --split: passed to the conversion (folded, speedscope) */
	int split;

	/* files */
	char output_abs[CMD_PATH_MAX];
	char lib[CMD_PATH_MAX];
	char pymod[CMD_PATH_MAX]; /* the directory of the pyprof module
	                             (labels), put on the command's
	                             PYTHONPATH; "" if not found       */
	char collector[CMD_PATH_MAX];
	char tmpdir[CMD_PATH_MAX]; /* "" until created                   */
	char sock[CMD_PATH_MAX];
	char summary[CMD_PATH_MAX];
	char profile[CMD_PATH_MAX];  /* the collector's --output, in tmpdir:
					placed (or converted) at the end  */
	char timeline[CMD_PATH_MAX]; /* --timeline (speedscope, gecko), or "" */

	/* processes */
	pid_t coll_pid; /* -1 when not running */
	int period_s;	/* `pyprof top --pid`: the collector writes a
			   profile every period_s seconds into the
			   directory profile (--output-dir, --period);
			   0: one profile, profile, at exit (--output) */
	pid_t attached; /* `pyprof attach`: the target, which goes on
			   running (record_report then does not call it
			   a daemon); 0 for record */
	/* the command's start (the heap peak's time is said from it); 0:
	 * not known */
	unsigned long long start_unix_ns;
};

/* ---- cmd_record.c (also used by `pyprof attach`) ---------------------- */

/* Finds libpyprof.so, pyprof-collector and the module beside our own
 * executable. 0, or a negative errno (logged). */
int record_find_files(struct record *r);

/* Makes and removes a file beside r->output (filling r->output_abs), so
 * that an output that cannot be written is refused at once. 0 or a
 * negative errno (logged). */
int record_check_output(struct record *r);

/* ---- record_options.c ---------------------------------------------- */

/* Fills r's options from argv. Returns 0, 1 if --help was given (usage
 * printed), or -EINVAL (one error line printed). */
int record_parse_options(struct record *r, int argc, char **argv);

/* The PYPROF_* variables the command will get, checked with the
 * library's own rules before anything starts. 0 or -EINVAL (logged). */
int record_check_env(const struct record *r);

/* ---- record_procs.c ------------------------------------------------- */

/* Ignores SIGINT and SIGQUIT, forwards SIGTERM and SIGHUP to the command
 * (or keeps them for record_pending_signal until it runs). */
void record_signals_install(void);

/* The terminating signal that arrived before the command ran, or 0. */
int record_pending_signal(void);

/* "exited with status N", "was killed by signal N (NAME)"... into buf. */
const char *record_describe_status(int st, char *buf, size_t n);

/* Starts the collector (r->coll_pid) and waits until it listens. 0;
 * -ECHILD if it exited first, -ETIMEDOUT, -EINTR on a terminating signal
 * (record_pending_signal), or another negative errno; logged. */
int record_collector_start(struct record *r);

/* Stops the collector with SIGTERM (SIGKILL after a long grace period)
 * and reaps it. Returns its wait status in *status, or -1 in *status if
 * it had already been reaped. */
void record_collector_stop(struct record *r, int *status);

/* Runs COMMAND to completion. Returns its exit code (128+N for signal N),
 * or CMD_EXIT_NOEXEC / CMD_EXIT_NOTFOUND / CMD_EXIT_FAIL if it could not
 * be started (reason logged); *ran says whether it was exec'd. */
int record_command_run(struct record *r, int *ran);

/* ---- record_result.c ------------------------------------------------ */

/* Places the profile (and the files beside it) and prints the one-line
 * result. Returns 0 if the profile was written where asked. */
int record_report(const struct record *r, int coll_status);

#endif /* PYPROF_RECORD_H */
