/*
 * control.h - switching sampling on and off in connected processes, from
 * the collector (processes started dormant, PYPROF_START=off, are
 * profiled only while asked): the API for /debug/pprof/profile?seconds=N
 * (HTTP, collector/daemon/window.c) and for `pyprof ctl` (a controller
 * connection, see below).
 *
 * How to use it (HTTP's profile window, for example):
 *
 *     struct control_settings s = { 0 };          // the processes' own
 *     h = control_start(ctl, pid_or_0, 30 * NS, &s, window_done, w);
 *     ... the window collects samples as they arrive ...
 *     window_done(h, w) is called once, after the N seconds, when every
 *     process it covered has acknowledged (or CONTROL_REPLY_NS passed):
 *     every sample they took inside the window has arrived by then, so
 *     the window can be closed and the profile served at once.
 *     control_cancel(ctl, h) if the HTTP client goes away first.
 *
 * A hold covers every library connection whose pid matches (0: all of
 * them), those connected now and those that say HELLO while it lasts.
 * Holds are counted per process: the first one switches sampling on (a
 * CTL_START with the hold's settings and a lease: its remaining time plus
 * CONTROL_LEASE_MARGIN_NS, so that a collector that dies cannot leave a
 * process sampling), later ones share that session (its settings stay
 * the first hold's, except that a later hold asking for waits switches
 * them on in the session if it has none; a later hold that outlasts the
 * lease renews it), and
 * when the last one ends the process gets CTL_STOP, which sends it back
 * to its own state: off if it was dormant, on with its own settings if it
 * was on by itself (PYPROF_START=on, the toggle signal). A hold that ends
 * while others remain sends CTL_FLUSH instead, so that its window still
 * gets every sample of its time.
 *
 * Controllers (`pyprof ctl`): a client that sends CTL_REQUEST (wire.h)
 * instead of HELLO. start: a hold for the request's seconds (0: until
 * `ctl stop`), answered with every covered process's reply to its
 * CTL_START (or to a CTL_STATUS if it was sampling for another hold
 * already); stop: ends the controllers' holds for that pid (or all of
 * them), then switches off, hard (its own state off too), every covered
 * process that no other hold keeps on; flush, status: passed on. Each
 * process's answer comes back as CTL_ANSWER, then CTL_DONE; a process
 * that does not answer within CONTROL_REPLY_NS is answered NO_REPLY.
 *
 * collector.c owns the one control (struct collector's ctl, made with the
 * loop, freed after the connections) and sets it on every connection
 * (control_attach); hand the same pointer to whatever else asks for
 * sampling (the HTTP server).
 *
 * Windows and timing: a window's samples are those that arrive between
 * its start and its done callback. Sampling in a process starts when its
 * CTL_START arrives (well under a millisecond after control_start, see
 * make bench) and stops at its CTL_STOP or CTL_FLUSH, whose reply comes
 * after every sample taken before it. A process that was already sampling
 * for another hold sends samples from the start.
 *
 * Single-threaded (the collector's loop thread). Callbacks run from the
 * loop, or from inside control_end (when nothing needs waiting for).
 */
#ifndef PYPROF_COLLECTOR_CONTROL_H
#define PYPROF_COLLECTOR_CONTROL_H

#include <stddef.h>
#include <stdint.h>

struct conn;
struct control;
struct control_hold;
struct loop;

#define CONTROL_LEASE_MARGIN_NS (2000000000ull)
#define CONTROL_REPLY_NS (2000000000ull)

/* What a hold asks for; zero fields leave the process's own setting. */
struct control_settings {
	int has_mode;
	unsigned mode;	    /* enum wire_mode, with has_mode              */
	uint64_t period_ns; /* 0: the process's own rate                  */
	uint64_t heap_rate; /* bytes between heap samples; 0: no heap     */
	int native;	    /* 1: ask for native stacks                   */
	uint64_t waits_ns;  /* block and mutex profiles at this rate (ns);
	                       0: the process's own (PYPROF_WAITS)        */
};

/* Called once per hold, when it ended and was acknowledged (see above).
 * The handle is freed when the callback returns. */
typedef void (*control_done_fn)(struct control_hold *h, void *arg);

/* A control over the connections of loop, or NULL (ENOMEM). */
struct control *control_new(struct loop *loop);
/* Frees every hold (no callback runs) and forgets the connections. */
void control_free(struct control *ctl);

/*
 * Switches sampling on in the processes pid covers (0: every process) for
 * duration_ns (0: until control_end), with settings s (NULL: their own).
 * done (may be NULL) is called as said above. Returns the hold, owned by
 * ctl, valid until done returns or control_cancel; NULL on ENOMEM.
 */
struct control_hold *control_start(struct control *ctl, uint64_t pid,
				   uint64_t duration_ns,
				   const struct control_settings *s,
				   control_done_fn done, void *arg);
/* The same over the processes of one user only: those whose connection
 * the kernel gives as uid's (SO_PEERCRED, conn_peer_uid), so that a
 * window a member asks for (--http-members) switches sampling on in that
 * member's processes and no one else's. */
struct control_hold *control_start_uid(struct control *ctl, uint64_t pid,
				       unsigned uid, uint64_t duration_ns,
				       const struct control_settings *s,
				       control_done_fn done, void *arg);
/* Ends h now; done still runs, once the processes acknowledged (possibly
 * before control_end returns). */
void control_end(struct control *ctl, struct control_hold *h);
/* Ends h now; done never runs; the caller must not use h again. */
void control_cancel(struct control *ctl, struct control_hold *h);

/* Processes a hold covers now (live connections). */
size_t control_hold_procs(const struct control *ctl,
			  const struct control_hold *h);
/* Whether process pid samples now, as it last said (HELLO, then every
 * reply and state change): 1, 0 (dormant), or -1 (not connected, or an
 * older library that does not say); *holds (may be NULL) gets how many
 * holds cover it. For an index page. */
int control_proc_sampling(const struct control *ctl, uint64_t pid,
			  unsigned *holds);
/* Holds running now (for an index page). */
size_t control_n_holds(const struct control *ctl);

/* Makes c tell ctl about its control frames, its HELLO and its end
 * (conn.h's conn_set_ctl_handlers): every connection the collector
 * accepts gets it. */
void control_attach(struct control *ctl, struct conn *c);

#endif /* PYPROF_COLLECTOR_CONTROL_H */
