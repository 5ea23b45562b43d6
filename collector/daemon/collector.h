/*
 * collector.h - the collector as a whole: listener, clients, processes and
 * outputs, run on one event loop until SIGTERM or SIGINT.
 *
 * main_collector.c parses the command line into struct collector_opts and
 * calls collector_run. (The pyprof command may run its private collector
 * the same way, or exec pyprof-collector with --output, --summary and
 * --ready-fd.)
 *
 * What is written, and when (output.c does the writing):
 * - output_dir: each process's profile when its last connection closes,
 *   as <dir>/<comm>.<pid>.<YYYYmmddTHHMMSSZ>.pb.gz (its start, UTC),
 *   with .1, .2... before .pb.gz if that name exists; then the process is
 *   forgotten (unless output_file also asks to keep it). A client that
 *   reconnects after that starts a new profile.
 * - period_ns: continuous profiling. At every multiple of the period (Unix
 *   time), each live process with samples in the window gets the same kind
 *   of file, named by the window's start and covering only that window
 *   (time_nanos, duration_nanos), and its aggregate starts afresh; at its
 *   disconnect it gets its last, partial window.
 * - merge: instead of per-process files, one profile of every process per
 *   window (or one at shutdown without period_ns) as
 *   <dir>/merged.<YYYYmmddTHHMMSSZ>.pb.gz, each sample labelled with pid,
 *   process (comm) and command; a process that ended is kept until its
 *   window is written.
 * - output_file: at shutdown, one profile merging every process seen,
 *   labelled like merge's. It takes the first process's mode; processes
 *   in the other mode are left out with a warning. Not with period_ns
 *   (windows reset what it would need).
 * - per_thread: beside every profile above (per process, per window,
 *   merged, output_file), one profile per OS thread that has samples in
 *   it, holding only that thread's (under every name it had; lost samples
 *   stay in the whole profile only): a profile <base>.pb.gz gets
 *   <base>.tid<TID>[.<thread>].pb.gz, where output_file's <base> is the
 *   file without .pb.gz (or .gz, or .pb); in a profile of several
 *   processes .pid<PID>.tid<TID>; <thread> is the thread's last name
 *   (threading.Thread.name) reduced to [A-Za-z0-9_-], at most 64 bytes,
 *   left out when the thread has none. Written right after the profile
 *   they split, the same way (new files, or output_file's replacing).
 * - a profile in output_dir that cannot be written (disk full) is held
 *   in memory, up to hold_max bytes in all, and written when there is
 *   room again; what must be given up is counted as lost ("[lost: not
 *   written]" in the process's next profile, the log, the summary).
 * - summary_file: at shutdown, "processes=N samples=N lost=N\n" (lost
 *   includes samples counted as "collector away", proc.h).
 * Every file above is created 0600 and a new output_dir 0700, whatever
 * the umask (they hold every process's command line); output_shared
 * makes them 0640 and 0750, of group output_gid (fileio.h). per_uid
 * (--readers-group) puts each process's files (not those of several)
 * in <dir>/uid-<UID>/, its client's uid's, which that uid may read too
 * (common/readers.h).
 * On SIGTERM/SIGINT the collector stops accepting, reads what every
 * connection has already sent, writes the above, and returns.
 *
 * HTTP (http_spec, plugged in by main_collector.c): every request needs
 * the access token (http.h): the one given, or one made at start from
 * getrandom(2), 32 hex digits (128 bits), written to <socket>.http-token
 * (mode 0600, removed at exit) and logged once at info in the URL to
 * open; http_no_auth serves everyone, with a warning.
 *
 * Clients: only our own uid, and those in allow_uids, are served (their
 * credentials come from SO_PEERCRED); with allow_uids the socket is made
 * reachable by others (listener.h). Connects, disconnects and refusals are
 * logged at info and warn.
 *
 * What clients can cost: at most max_clients connections at once (default
 * COLLECTOR_MAX_CLIENTS, and never more than the descriptor limit less
 * 64 kept for files and HTTP); at the cap, the connection that waited
 * longest without HELLO is closed for the newcomer, and without such a
 * one the newcomer is. Out of descriptors all the same, a newcomer is
 * accepted on a spare descriptor and closed (listener.h), so clients
 * never wait in the backlog for nothing; both are logged once per burst.
 * Each member of a shared collector has a share: at most
 * max_clients_user connections of one uid other than ours, and
 * max_clients_proc of one pid (connections whose other end hung up are
 * read and closed before a newcomer is counted against them); beyond, the
 * newcomer is closed, with a warning once per uid or pid. The definitions
 * all sessions hold, and those of one uid but ours, are bounded by
 * max_memory and max_memory_user (proc.h's procs_set_def_limits).
 * Each connection's time-outs and buffer are conn.h's, each process's
 * definitions proc.h's, its heap table heapagg.h's.
 *
 * Single-threaded; blocks SIGTERM and SIGINT in the calling thread.
 */
#ifndef PYPROF_COLLECTOR_H
#define PYPROF_COLLECTOR_H

#include "daemon/collector_opts.h"

struct control;
struct loop;
struct output;
struct procs;
struct symtab;

/* The collector's parts, lent to its extensions for the run. */
struct collector_parts {
	struct loop *loop;
	struct symtab *st;
	struct procs *reg;
	struct control *ctl;
	struct output *out;
	const char *socket_path;
};

/*
 * What the program plugs into the collector: main_collector.c's --http
 * server (http/) and its --pyroscope/--otlp sinks (push/, added to the
 * output with output_add_sink). The daemon knows neither by name. Every
 * hook may be NULL, runs on the loop thread, and gets arg:
 *   add_sinks      once the outputs are checked, before listening: 0, or
 *                  a negative errno after logging why (no start)
 *   start_serving  once listening: the same
 *   stop_serving   when the collector stops listening, before the last
 *                  windows; again on the way out (must be idempotent)
 *   end_sinks      after the last windows went to the sinks: remove them
 *                  (output_clear_sinks) and flush them; again on the way
 *                  out, after the connections are closed (idempotent)
 *   done           on every way out, last before the parts are freed
 */
struct collector_ext {
	int (*add_sinks)(void *arg, const struct collector_parts *parts);
	int (*start_serving)(void *arg, const struct collector_parts *parts);
	void (*stop_serving)(void *arg);
	void (*end_sinks)(void *arg);
	void (*done)(void *arg);
	void *arg;
};

/* Runs until SIGTERM or SIGINT, with ext plugged in (NULL: none). Returns
 * 0 when everything asked for was written, or a negative errno after
 * logging why it could not start (-EADDRINUSE when a collector already
 * listens) or could not write an output. */
int collector_run(const struct collector_opts *opts,
		  const struct collector_ext *ext);

#endif /* PYPROF_COLLECTOR_H */
