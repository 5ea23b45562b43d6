/*
 * collector_opts.h - what the collector is asked to do: struct
 * collector_opts, filled by main_collector.c from the command line and
 * read by collector.c and by output.c (which writes what it names). Its
 * own header so that output.c, which collector.c drives, need not include
 * collector.h: what each option does is described there.
 *
 * Plain data; read from the collector's loop thread.
 */
#ifndef PYPROF_COLLECTOR_OPTS_H
#define PYPROF_COLLECTOR_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct push_opts;

struct collector_opts {
	const char *socket_path;   /* NULL: pyprof_default_socket() */
	const char *output_dir;	   /* NULL: no per-process profiles */
	const char *output_file;   /* NULL: no merged profile */
	const char *summary_file;  /* NULL: no summary */
	const char *timeline_file; /* NULL: none; else, with output_file, the
				      samples in arrival order (timeline.h),
				      written with it at shutdown */
	int ready_fd;		   /* -1: none; else "1" is written once
				     listening, then it is closed */
	uint64_t period_ns;	   /* 0: no windows; else whole seconds */
	int merge;		   /* merged files in output_dir */
	int per_thread;		   /* also one profile per thread */
	const uid_t *allow_uids;   /* other users to serve */
	size_t n_allow_uids;
	const gid_t *allow_gids; /* and the processes of these groups (the
				     client's gid or one of its supplementary
				     groups, from SO_PEERCRED/SO_PEERGROUPS) */
	size_t n_allow_gids;
	const char *http_spec;	  /* NULL: no HTTP; else "[ADDR:]PORT" to
				     serve /debug/pprof/ (http_pprof.h) */
	const char *http_token;	  /* NULL: a random one is made at start
				     (collector_run), unless http_no_auth */
	int http_no_auth;	  /* --http-no-auth: no token at all */
	const char *http_members; /* NULL: none; else the absolute path of a
				     Unix socket where each user the
				     collector serves sees its own processes
				     (http_pprof.h's pprof_server_members) */
	uint64_t hold_max;	  /* bytes of profiles that could not be
				     written yet to keep for another try
				     (output.c); 0: none */
	int output_shared;	  /* 0: files 0600, directories 0700; 1:
				     0640 and 0750, of group output_gid */
	gid_t output_gid;
	/* --readers-group (output_gid, with output_shared): each process's
	 * files in output_dir/uid-<UID>/, readable by that uid too
	 * (common/readers.h) */
	int per_uid;
	size_t max_clients; /* 0: COLLECTOR_MAX_CLIENTS */

	/* Each member's share (collector.h): the connections of one uid
	 * other than ours (0: a quarter of max_clients) and of one process,
	 * by its pid at connect (0: COLLECTOR_MAX_CLIENTS_PROC); the bytes
	 * of definitions all connections hold together (0:
	 * COLLECTOR_MAX_MEMORY) and those of one uid other than ours (0: a
	 * quarter of max_memory). */
	size_t max_clients_user;
	size_t max_clients_proc;
	uint64_t max_memory;
	uint64_t max_memory_user;

	uint64_t exit_grace_ns;	      /* on SIGTERM/SIGINT, wait at most this
				     long for connected clients to end
				     before shutting down; 0: no wait */
	const struct push_opts *push; /* NULL: no push; else where windows
					 are sent (push.h) */
};

#define COLLECTOR_MAX_CLIENTS 4096
/* A process opens one connection, and for a moment a second while it
 * reconnects; its forks have pids of their own. */
#define COLLECTOR_MAX_CLIENTS_PROC 16
#define COLLECTOR_MAX_MEMORY (1024ull << 20)

#endif /* PYPROF_COLLECTOR_OPTS_H */
