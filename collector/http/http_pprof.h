/*
 * http_pprof.h - what pyprof-collector --http serves: Go's
 * net/http/pprof endpoints over every Python process streaming into the
 * collector, and a flame graph page for browsers.
 *
 *   /debug/pprof/           HTML index of the connected processes (pid,
 *                           command, Python version, sampling on or
 *                           dormant, mode, rate, uptime, samples,
 *                           dropped) with links to each view;
 *                           ?seconds=N sets the links' duration
 *   /debug/pprof/profile    ?seconds=N (default 30, 1..3600) [&pid=P |
 *                           &service=NAME &command=TEXT]
 *                           [&mode=cpu|wall]: a profile of the next N
 *                           seconds (window.h), or, for a scraper's next
 *                           request, from its previous window's end;
 *                           gzipped pprof, application/octet-stream,
 *                           attachment "profile"
 *   /debug/pprof/block      ?seconds=N [&pid=P | &service=NAME
 *   /debug/pprof/mutex      &command=TEXT] [&rate=DURATION]: Go's block
 *                           or mutex profile of the next N seconds (a
 *                           window with waits switched on in the
 *                           processes it covers, at rate, default
 *                           10us), every mode's processes; attachment
 *                           "block" or "mutex"
 *   /debug/pprof/heap       Go's heap profile of the processes with heap
 *   /debug/pprof/allocs     data (?pid=P: one; ?service=, ?command=: a
 *                           service's), as of now; allocs with
 *                           alloc_space as the default sample type; 404
 *                           "no process with heap sampling on" if none
 *   /debug/pprof/cmdline    text/plain: with ?pid=P that process's command
 *                           line, else the collector's own, arguments
 *                           separated by NUL bytes (Go's)
 *   /debug/pprof/symbol     "num_symbols: 1" (Python frames carry their
 *                           names; native ones are named by the collector
 *                           where it can, so address look-ups answer
 *                           nothing more, as Go does for unknown ones)
 *   /debug/pprof/top        ?seconds=N [&pid=P] [&service=...]
 *                           [&command=...] [&mode=...] [&n=ROWS]: the
 *                           same window as pyprof top's table in an HTML
 *                           page, with --split's python, native and
 *                           system columns in CPU mode; always the next
 *                           N seconds
 *   /flamegraph             ?seconds=N [&pid=P] [&service=...]
 *                           [&command=...] [&mode=...]: the same window
 *                           as an interactive SVG (view_flame.h), always
 *                           the next N seconds
 *   /, /debug/pprof         redirect to /debug/pprof/
 *
 * Errors as Go's net/http/pprof gives them: a status, text/plain body,
 * X-Go-Pprof: 1 (go tool pprof then prints the body). Methods: GET and
 * HEAD (and POST for /symbol); others 405. Nothing served writes a file or
 * runs anything.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_HTTP_PPROF_H
#define PYPROF_HTTP_PPROF_H

#include "http/http.h"

struct loop;
struct symtab;
struct procs;
struct pprof_server;

/* Listens on spec ("[ADDR:]PORT", http.h; NULL: nowhere yet, for a
 * server of pprof_server_members alone) with an optional access token
 * and serves reg's processes. 0 and the server in *out, or a negative
 * errno with the reason in err (ERR_LEN bytes). */
struct control;
/* ctl (control.h; may be NULL) switches sampling on in the processes a
 * profile covers, for its duration. */
int pprof_server_start(struct loop *loop, struct symtab *st,
		       struct procs *reg, struct control *ctl,
		       const char *spec, const char *token,
		       struct pprof_server **out, char *err);
/*
 * --http-members PATH: the same endpoints on a second listener, a Unix
 * socket any local user may connect to (http_listen_peers: 0666 in a
 * 0711 directory), where no token is asked: the kernel names each
 * client (SO_PEERCRED), check (may be NULL) decides whether that user is
 * served at all (the collector's: its own user, --allow-user,
 * --allow-group), and a served client sees only the processes whose
 * connection is its user's (proc_info's peer_uid): the index lists
 * those alone and counts nothing else (no other windows), pid= of
 * another user's process is 404 as a pid not connected, windows
 * (profile, flamegraph, top, block, mutex) and heap/allocs hold its
 * processes alone and switch sampling on in those alone, and cmdline
 * without pid= (the collector's own, which may hold --http-token) is
 * 404. Windows are shared with the main listener (WINDOW_MAX in all).
 * 0, or a negative errno with the reason in err (ERR_LEN bytes).
 */
int pprof_server_members(struct pprof_server *ps, const char *path,
			 http_peer_fn check, void *check_arg, char *err);
/* The address the main listener listens on, for the log (NULL without
 * one). */
const char *pprof_server_addr(const struct pprof_server *ps);
/* "unix:PATH" of --http-members, or NULL. */
const char *pprof_server_members_addr(const struct pprof_server *ps);
/* Stops listening, answers waiting requests 503, closes every client and
 * cancels the windows. NULL is fine. */
void pprof_server_free(struct pprof_server *ps);

#endif /* PYPROF_HTTP_PPROF_H */
