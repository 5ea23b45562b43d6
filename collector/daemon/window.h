/*
 * window.h - profiles of the next N seconds: what /debug/pprof/profile
 * and /flamegraph answer (http_pprof.c).
 *
 * A window covers [start, start + N s) of CLOCK_MONOTONIC, the clock the
 * library stamps each sample with (wire.h's SAMPLES times) and the
 * collector's loop runs on. From the moment it opens, every sample
 * accepted from a matching process (all processes or one pid, in one mode)
 * whose time falls inside goes into the window's own copy of that
 * process (a copy, proc.h), whatever the process's --period windows
 * do; processes that connect or exit meanwhile are in it for the time
 * they were there. Lost-sample reports are counted as they arrive.
 *
 * Closing. Samples reach the collector in batches (the agent sends every
 * AGENT_TICK_MS, 20 ms), so at the window's end some of its samples are
 * still on their way. A window therefore closes at its end only once
 * every matching live process that was active then has sent a sample
 * stamped at or after the end (nothing older can follow: each process
 * sends in time order); a process is taken as idle when its latest
 * sample is older than WINDOW_QUIET_NS (plus one sampling period) at the
 * end. At the latest, it closes WINDOW_GRACE_NS after the end: a busy
 * process starved of CPU produces its next sample late, and the answer
 * should not wait for it (what it still sends from before the end is
 * left out: at most the last WINDOW_GRACE_NS of its window). Then the
 * profile is built (pprof.h: gzipped, every sample labelled with pid,
 * process and command) and handed to the window's callback. (Without a
 * control this is a bound, not exact; with one, below, it is.)
 *
 * Any number of windows may overlap (up to WINDOW_MAX); each is computed
 * independently. The cost per sample is one comparison per open window,
 * plus one aggregate insertion per window it belongs to.
 *
 * Dormant processes: with a control (control.h), a window
 * holds sampling on in the processes it covers (its pid, or all) for its
 * duration, so that processes started with PYPROF_START=off are profiled
 * too, and switched back off after. The hold's end also makes closing
 * exact: once every covered process acknowledged it, each has sent every
 * sample it took before, and the window closes at once (at most
 * WINDOW_HOLD_WAIT_NS after its end; control.c waits longer for a process
 * that does not answer, the window does not).
 *
 * Scrapes that tile time (a scraper such as Grafana Alloy or Parca
 * polling every 15 s). A window opened with a scrape key (http_pprof.c
 * builds it from the client's address, its User-Agent and the request's
 * path and query) leaves, when it is opened, a standby: a window keyed
 * the same that starts exactly where it ends and collects from then on,
 * with no end (holding sampling on like a window once the key has
 * been continued at least once: a scraper's, not a one-off's). The
 * key's next
 * request, if it comes within the gap bound (the window's seconds, at
 * most WINDOW_GAP_MAX_SECONDS, after the end), adopts the standby: its
 * window covers [previous end, request + N s), so consecutive scrapes
 * tile time with no gap and no overlap, by each sample's own time stamp,
 * and time_nanos/duration_nanos say so exactly (the previous window's
 * time_nanos + duration_nanos is the next one's time_nanos). A standby
 * nobody adopts is dropped at the bound; a request without one (a first
 * scrape, a one-off `go tool pprof`, a scraper late by more than the
 * bound) covers the next N seconds, as Go's. At most WINDOW_STANDBY_MAX
 * standbys are kept (the oldest goes first); a window whose client went
 * away (window_cancel) takes its standby with it. Memory: a standby is a
 * window's copies of the processes it covers, filled for at most the gap
 * bound past its start.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_WINDOW_H
#define PYPROF_WINDOW_H

#include <stddef.h>
#include <stdint.h>

struct control;
struct loop;
struct procs;
struct proc;
struct symtab;
struct windows;
struct window;

#define WINDOW_MAX 64			      /* open at once */
#define WINDOW_GRACE_NS (40 * 1000000ull)     /* wait at most this for
						late samples */
#define WINDOW_QUIET_NS (100 * 1000000ull)    /* silent this long before
						the end: idle */
#define WINDOW_HOLD_WAIT_NS (90 * 1000000ull) /* with a hold: wait at most
						 this for its acks */
#define WINDOW_MAX_SECONDS 3600
#define WINDOW_GAP_MAX_SECONDS 60 /* a standby waits at most
						this long (and at most its
						window's seconds) */
#define WINDOW_STANDBY_MAX 64	  /* standbys kept at once */
#define WINDOW_NAME_LEN 128	  /* service, command + NUL */

/* Which samples a window takes: every process (pid 0) or one pid, in
 * mode (enum wire_mode), or with waits the block or mutex records of
 * every mode's processes (waits switched on in them for the window,
 * through the control); with service set, only processes whose name
 * (HELLO's comm, the profile's `process` label) is exactly it; with
 * command set, only those whose command line (arguments joined by
 * spaces; the name when there are none) contains it. Empty strings
 * select everything. With own, only the processes of one user. */
struct window_filter {
	uint64_t pid;
	unsigned mode;	   /* ignored with waits                        */
	int waits;	   /* enum pprof_waits: a block or mutex profile
			      of every mode's processes instead          */
	uint64_t waits_ns; /* with waits: the rate asked of processes
			      (0: PYPROF_DEFAULT_WAITS_NS)               */
	char service[WINDOW_NAME_LEN];
	char command[WINDOW_NAME_LEN];
	/* only the processes of uid (their connection's peer_uid,
	 * proc.h): a member's request on --http-members; sampling is
	 * switched on in those alone */
	int own;
	unsigned uid;
};

/* Whether process p passes f's service, command and user (not its pid
 * or mode): 1 or 0. Names are read from st. */
int window_names_match(const struct symtab *st, const struct window_filter *f,
		       const struct proc *p);

/* The window's result. On success status is 0 and data/len the gzipped
 * pprof (malloc'd; the callee takes it and frees it); else a negative
 * errno and data NULL. The window is freed after the callback returns. */
typedef void (*window_done_fn)(void *arg, int status, void *data, size_t len,
			       const struct window_filter *f);

/* The set of windows over one registry: installs its tap (proc.h). ctl
 * (may be NULL: processes sample as they would anyway) switches sampling
 * on for each window's duration. NULL (ENOMEM). */
struct windows *windows_new(struct loop *loop, struct symtab *st,
			    struct procs *reg, struct control *ctl);
/* Cancels every open window (no callback) and removes the tap. NULL is
 * fine. */
void windows_free(struct windows *ws);

/* Opens a window of seconds (1..WINDOW_MAX_SECONDS) ending seconds from
 * now. key NULL: it starts now. key set (copied): it continues the
 * standby of the same key and filter, if one waits (see the top), else
 * starts now; either way it leaves a standby of its own (when memory
 * allows). done is called once, from the loop, when it closes, unless
 * window_cancel is called first. Returns the window, or NULL: errno
 * EBUSY (WINDOW_MAX open) or ENOMEM. */
struct window *window_open(struct windows *ws, const struct window_filter *f,
			   unsigned seconds, const char *key,
			   window_done_fn done, void *arg);
/* Drops an open window and its standby without calling its callback
 * (the client went away). */
void window_cancel(struct window *w);
/* The interval an open window covers, in Unix ns: [*start, *end). */
void window_span(const struct window *w, uint64_t *start_unix_ns,
		 uint64_t *end_unix_ns);

/* Windows open now (standbys not counted). */
size_t windows_len(const struct windows *ws);
/* Standbys waiting now. */
size_t windows_standbys(const struct windows *ws);

#endif /* PYPROF_WINDOW_H */
