/*
 * collector.h - the collector as a whole: listener, clients, processes and
 * outputs, run on one event loop until SIGTERM or SIGINT.
 *
 * main_collector.c parses the command line into struct collector_opts and
 * calls collector_run. (The pyprof command may run its private collector
 * the same way, or exec pyprof-collector with --output, --summary and
 * --ready-fd.)
 *
 * What is written, and when:
 * - output_dir: each process's profile when its last connection closes,
 *   as <dir>/<comm>.<pid>.<YYYYmmddTHHMMSS>.pb.gz (start time, local),
 *   with .1, .2... before .pb.gz if that name exists; then the process is
 *   forgotten (unless output_file also asks to keep it). A client that
 *   reconnects after that starts a new profile.
 * - output_file: at shutdown, one profile merging every process seen,
 *   each sample labelled with its pid. It takes the first process's mode;
 *   processes in the other mode are left out with a warning.
 * - summary_file: at shutdown, "processes=N samples=N lost=N\n".
 * On SIGTERM/SIGINT the collector stops accepting, reads what every
 * connection has already sent, writes the above, and returns.
 *
 * Single-threaded; blocks SIGTERM and SIGINT in the calling thread.
 */
#ifndef PYPROF_COLLECTOR_H
#define PYPROF_COLLECTOR_H

struct collector_opts {
	const char *socket_path;  /* NULL: pyprof_default_socket() */
	const char *output_dir;   /* NULL: no per-process profiles */
	const char *output_file;  /* NULL: no merged profile */
	const char *summary_file; /* NULL: no summary */
	int ready_fd;             /* -1: none; else "1" is written once
				     listening, then it is closed */
};

/* Runs until SIGTERM or SIGINT. Returns 0 when everything asked for was
 * written, or a negative errno after logging why it could not start
 * (-EADDRINUSE when a collector already listens) or could not write an
 * output. */
int collector_run(const struct collector_opts *opts);

#endif /* PYPROF_COLLECTOR_H */
