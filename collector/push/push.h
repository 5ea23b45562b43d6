/*
 * push.h - sending the collector's windows to a profile store over HTTP
 * (pyprof-collector --pyroscope URL), without the event loop ever waiting
 * on the network, and without losing what fits on disk.
 *
 * Who calls what. main_collector.c fills struct push_opts (push_opts.c
 * checks the values); collector.c makes the push with push_new once the
 * outputs are ready and frees it after the last windows were handed
 * over; output.c hands every finished window to push_window. All of
 * these run on the collector's loop thread.
 *
 * The push thread. push_new starts one thread of its own that owns the
 * HTTP client (libcurl, one connection kept alive) and the spool
 * (spool.h). The loop thread only copies a window into the queue under
 * a mutex and signals a condition variable; the thread sends the queue
 * in order. Memory: the queue holds at most PUSH_QUEUE_MAX bytes; a
 * window that would pass it (the thread stuck on a slow server) goes to
 * the spool from the loop thread instead (file writes on the loop are
 * what output.c does anyway), so nothing queued is ever thrown away.
 *
 * Outages. A window that cannot be sent (no connection, a time-out, an
 * answer 408, 429 or 5xx) starts an outage: it and every later window go
 * to the spool directory (files that survive a crash and a restart), and
 * the oldest is tried again after an exponential back-off (1 s doubling
 * to PUSH_BACKOFF_MAX, with jitter; longer if the answer's Retry-After
 * asks so), then the rest in order once one passes. One warning starts an outage and one line ends it, with the
 * windows spooled and their bytes. Another 4xx answer (a bad token, 413)
 * is not retried: the window is dropped and counted, the server's message
 * logged once until a window passes again. A window is sent with the same
 * bytes and the same from/until however often it is tried; the spool
 * keeps the request's query as it was first made.
 *
 * A window the spool cannot take (a full disk) is held in memory by the
 * push thread (at most PUSH_QUEUE_MAX bytes more) and sent in its turn;
 * past that, or still held at exit with no room, it is lost and counted.
 * The spool's own promises (what it trusts, what it sets aside) are in
 * spool.h.
 *
 * At exit (push_free) the thread sends what is queued for at most
 * PUSH_EXIT_NS (an upload still running then is cut short), spools the
 * rest, and stops; the spool is sent by the next collector.
 */
#ifndef PYPROF_PUSH_H
#define PYPROF_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "push/push_types.h"

#define PUSH_QUEUE_MAX (64u << 20)
#define PUSH_BACKOFF_MAX_NS (60 * 1000000000ull)
#define PUSH_EXIT_NS (5 * 1000000000ull)

struct push;

/* Opens dest's spool (made 0700 if missing; its windows from an earlier
 * run are sent first), reads the password or token files, and starts the
 * push thread. output_dir (may be NULL) holds the default spool. NULL
 * after logging why (a spool directory that cannot be made or is used
 * by another collector, an unreadable secret, no memory). */
struct push *push_new(const struct push_opts *opts, enum push_dest dest,
		      const char *output_dir);
/* Sends what is queued for at most PUSH_EXIT_NS, spools the rest, stops
 * the thread and frees everything. NULL is fine. */
void push_free(struct push *p);

/* Hands over one window: pprof_gz[0..len) (the gzipped profile) is
 * copied. Loop thread; never waits on the network. 0, or -ENOMEM (the
 * window is lost, and said so in the log). */
int push_window(struct push *p, const struct push_window *w,
		const void *pprof_gz, size_t len);

#endif /* PYPROF_PUSH_H */
