/*
 * window.c - profiles of the next N seconds (see window.h).
 *
 * Each open window keeps a small table from source process to its
 * copy (proc.h), in the order processes first sent a sample in the
 * window; samples come in batches from one process at a time, so a
 * one-entry cache in front of the table's linear search answers almost
 * every lookup. A process that is freed (it ended and was written) is
 * forgotten by the table through the tap's gone callback, so a new
 * process at the same address is never taken for it; its copy stays.
 *
 * Closing never happens inside a tap callback (those run in the middle
 * of proc_add_samples): the tap only reschedules the window's timer to
 * fire at once, and the timer builds and answers.
 *
 * Standbys (scrapes that tile, window.h) live in the same list as open
 * windows, with no end (end_ns UINT64_MAX) and a timer that drops them
 * at their gap bound; adoption turns one into an open window in place,
 * so the samples it holds stay where they are. A window and its standby
 * point at each other until either goes. Lost-sample reports are split
 * by arrival between a window (before its end) and its standby (from
 * its start, the same instant), so none is counted twice.
 *
 * Runs on the collector's loop thread.
 */
#include "daemon/window.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/dlist.h"
#include "common/grow.h"
#include "daemon/control.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"
#include "pyprof/defaults.h"
#include "pyprof/wire.h"

struct win_proc {
	const struct proc *src; /* NULL once the process is freed */
	struct proc *copy;
};

struct window {
	struct windows *ws;
	struct window *prev, *next;
	struct window_filter f;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; a standby's
					     end is UINT64_MAX */
	uint64_t start_unix_ns, end_unix_ns;
	unsigned seconds;
	char *key;		  /* scrape key; NULL: a one-off */
	int standby;		  /* waiting for key's next request */
	uint64_t gap_ns;	  /* standby: adopted until start +
					     gap_ns */
	struct window *succ;	  /* our standby, NULL if none */
	struct window *parent;	  /* standby: the window it follows */
	const struct proc *named; /* cache of window_names_match: */
	int named_ok;		  /* the last process and its answer */
	struct win_proc *procs;
	size_t n_procs, procs_cap;
	size_t last;		    /* cache: index of the last hit */
	const struct proc *crossed; /* last process seen past the end */
	struct loop_timer *timer;
	struct control_hold *hold; /* sampling switched on for us */
	int hold_done;		   /* its processes acknowledged the
					     end: every sample is in */
	int closing;		   /* past end_ns, waiting for data */
	int oom;		   /* a sample could not be added */
	window_done_fn done;
	void *arg;
};

struct windows {
	struct loop *loop;
	struct control *ctl; /* NULL: no sampling on demand */
	struct symtab *st;
	struct procs *reg;
	struct window *head;
	size_t n;	  /* open windows */
	size_t n_standby; /* standbys */
};

/* ---- sampling on demand (control.h) -------------------------------------- */

static void on_timer(struct loop *loop, struct loop_timer *t, void *arg);
static void reschedule(struct window *w, uint64_t delay_ns);

/* The processes acknowledged the hold's end (a CTL_STOP or CTL_FLUSH
 * reply comes after every sample taken before it), or did not within
 * CONTROL_REPLY_NS: nothing more will come for this window. Closes it
 * from the loop, not from inside control.c's callback. */
static void on_hold_done(struct control_hold *h, void *arg)
{
	struct window *w = arg;
	(void)h;
	w->hold = NULL; /* freed when we return */
	w->hold_done = 1;
	if (w->closing)
		reschedule(w, 0);
}

/* Processes that started dormant (PYPROF_START=off) sample while a
 * window covers them: a hold for the window's pid (0: every process) and
 * duration, with the processes' own settings (their mode, rate). A hold
 * covers processes that connect while it lasts too, and when the last
 * hold on a process ends it goes back to its own state. Without a
 * control (tests), or without memory for a hold, processes sample as
 * they would anyway. */
static void window_sampling_on(struct window *w, uint64_t duration_ns)
{
	struct control_settings s = { 0 };
	if (!w->ws->ctl)
		return;
	if (w->f.waits) /* block and mutex records need waits on */
		s.waits_ns = w->f.waits_ns ? w->f.waits_ns
					   : PYPROF_DEFAULT_WAITS_NS;
	w->hold = w->f.own ? control_start_uid(w->ws->ctl, w->f.pid, w->f.uid,
					       duration_ns, &s, on_hold_done, w)
			   : control_start(w->ws->ctl, w->f.pid, duration_ns, &s,
					   on_hold_done, w);
	if (!w->hold)
		log_warn("window of %u s: out of memory to switch sampling on",
			 w->seconds);
}

/* The window is closed or cancelled: its hold ends now (without a
 * callback), switching off what it alone kept on. */
static void window_sampling_off(struct window *w)
{
	if (w->hold)
		control_cancel(w->ws->ctl, w->hold);
	w->hold = NULL;
}

/* ---- matching and lookup --------------------------------------------------- */

/* Whether needle occurs in p's command line: its arguments joined by
 * spaces (its name when it sent none). */
static int command_has(const struct symtab *st, const struct proc_info *in,
		       const char *needle)
{
	size_t len = 1;
	char *line, *at;
	int found;

	if (!in->n_args)
		return strstr(symtab_string(st, in->comm_sid), needle) != NULL;
	for (size_t i = 0; i < in->n_args; i++)
		len += strlen(symtab_string(st, in->arg_sids[i])) + 1;
	line = malloc(len);
	if (!line)
		return 0; /* out of memory: left out, as if it did not match */
	at = line;
	for (size_t i = 0; i < in->n_args; i++) {
		const char *a = symtab_string(st, in->arg_sids[i]);
		size_t n = strlen(a);
		if (i)
			*at++ = ' ';
		memcpy(at, a, n);
		at += n;
	}
	*at = 0;
	found = strstr(line, needle) != NULL;
	free(line);
	return found;
}

int window_names_match(const struct symtab *st, const struct window_filter *f,
		       const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	if (f->own && in->peer_uid != f->uid)
		return 0;
	if (f->service[0] &&
	    strcmp(symtab_string(st, in->comm_sid), f->service) != 0)
		return 0;
	return !f->command[0] || command_has(st, in, f->command);
}

/* Whether w takes p's samples. Names are compared once per process in a
 * row (samples come in batches from one process). */
static int matches(struct window *w, const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	if ((!w->f.waits && in->mode != w->f.mode) ||
	    (w->f.pid && in->pid != w->f.pid) ||
	    (w->f.own && in->peer_uid != w->f.uid))
		return 0;
	if (!w->f.service[0] && !w->f.command[0])
		return 1;
	if (w->named != p) {
		w->named = p;
		w->named_ok = window_names_match(w->ws->st, &w->f, p);
	}
	return w->named_ok;
}

/* p's copy in w, made on first use; NULL when out of memory. */
static struct proc *copy_of(struct window *w, const struct proc *p)
{
	if (w->last < w->n_procs && w->procs[w->last].src == p)
		return w->procs[w->last].copy;
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].src == p) {
			w->last = i;
			return w->procs[i].copy;
		}
	if (grow_array(&w->procs, &w->procs_cap, w->n_procs + 1,
		       sizeof(*w->procs), 8) < 0)
		return NULL;
	struct proc *copy = proc_copy_new(p);
	if (!copy)
		return NULL;
	w->procs[w->n_procs] = (struct win_proc){ p, copy };
	w->last = w->n_procs++;
	return copy;
}

/* Whether nothing more is to be expected for the window: every matching
 * live process has sent a sample stamped at or after the end (except the
 * one being tapped, which just did), or had gone quiet before it. Quiet:
 * its latest sample is older than WINDOW_QUIET_NS plus one sampling
 * period before the end. The agent sends every 20 ms while its process
 * runs, so a process we heard nothing from for that long was idle (a CPU
 * profile has no samples to send then) or is so starved of CPU that
 * waiting for it would hold up everyone's answer. */
static int caught_up(struct window *w, const struct proc *except)
{
	for (const struct proc *p = procs_first(w->ws->reg); p;
	     p = proc_next(p)) {
		if (p == except || !proc_is_live(p) || !matches(w, p))
			continue;
		uint64_t last = proc_last_mono_ns(p);
		uint64_t quiet = WINDOW_QUIET_NS + proc_info(p)->period_ns;
		if (last < w->end_ns && last + quiet >= w->end_ns)
			return 0;
	}
	return 1;
}

/* Makes the window's timer fire after delay_ns instead. */
static void reschedule(struct window *w, uint64_t delay_ns)
{
	struct loop *loop = w->ws->loop;
	struct loop_timer *t = loop_add_timer(loop, delay_ns, 0, on_timer, w);
	if (!t)
		return; /* the old one still fires, at worst a little late */
	loop_del_timer(loop, w->timer);
	w->timer = t;
}

/* ---- the tap ------------------------------------------------------------------ */

static void tap_sample(void *arg, const struct proc *p, uint32_t node,
		       uint32_t thread, uint32_t flags, uint32_t labels,
		       uint64_t count, uint64_t value, uint64_t t)
{
	struct windows *ws = arg;
	for (struct window *w = ws->head; w; w = w->next) {
		if (!matches(w, p))
			continue;
		if (t >= w->start_ns && t < w->end_ns) { /* standby: no end */
			struct proc *copy = copy_of(w, p);
			if (!copy || proc_copy_add(copy, p, node, thread,
						   flags, labels, count,
						   value, t) < 0)
				w->oom = 1;
		} else if (t >= w->end_ns && w->closing && w->crossed != p) {
			w->crossed = p;
			if (caught_up(w, p))
				reschedule(w, 0);
		}
	}
}

static void tap_lost(void *arg, const struct proc *p, unsigned reason,
		     uint64_t samples, uint64_t value)
{
	struct windows *ws = arg;
	uint64_t now = loop_now_ns();
	/* By arrival: a window's before its end, its standby's from then. */
	for (struct window *w = ws->head; w; w = w->next) {
		if (w->closing || now < w->start_ns || now >= w->end_ns ||
		    !matches(w, p))
			continue;
		struct proc *copy = copy_of(w, p);
		if (copy)
			proc_copy_add_lost(copy, reason, samples, value);
		else
			w->oom = 1;
	}
}

static void tap_gone(void *arg, const struct proc *p)
{
	struct windows *ws = arg;
	for (struct window *w = ws->head; w; w = w->next) {
		for (size_t i = 0; i < w->n_procs; i++)
			if (w->procs[i].src == p) {
				proc_copy_sync(w->procs[i].copy, p);
				w->procs[i].src = NULL;
			}
		if (w->crossed == p)
			w->crossed = NULL;
		if (w->named == p)
			w->named = NULL;
	}
}

/* ---- open and close --------------------------------------------------------- */

static void unlink_free(struct window *w)
{
	struct windows *ws = w->ws;
	DLIST_UNLINK(ws->head, w);
	if (w->standby)
		ws->n_standby--;
	else
		ws->n--;
	if (w->succ)
		w->succ->parent = NULL;
	if (w->parent)
		w->parent->succ = NULL;
	loop_del_timer(ws->loop, w->timer);
	window_sampling_off(w);
	for (size_t i = 0; i < w->n_procs; i++)
		proc_copy_free(w->procs[i].copy);
	free(w->procs);
	free(w->key);
	free(w);
}

static void finish(struct window *w)
{
	struct pprof_opts o = {
		.proc_labels = 1,
		.start_unix_ns = w->start_unix_ns,
		.end_unix_ns = w->end_unix_ns,
		.empty_wall = !w->f.waits && w->f.mode == WIRE_MODE_WALL,
		.waits = w->f.waits,
	};
	const struct proc **copies = NULL;
	void *data = NULL;
	size_t len = 0;
	struct pprof_stats stats;
	int rc = -ENOMEM;

	w->timer = NULL; /* one-shot: the loop frees it after this */
	if (w->oom)
		goto out;
	copies = malloc((w->n_procs ? w->n_procs : 1) * sizeof(*copies));
	if (!copies)
		goto out;
	for (size_t i = 0; i < w->n_procs; i++) {
		if (w->procs[i].src)
			proc_copy_sync(w->procs[i].copy, w->procs[i].src);
		copies[i] = w->procs[i].copy;
	}
	rc = pprof_build(w->ws->st, copies, w->n_procs, &o, &data, &len,
			 &stats);
	if (rc == 0)
		log_debug("window of %.3f s (pid %" PRIu64 ", %s): %zu "
			  "processes, %" PRIu64 " samples, %zu bytes, "
			  "%.1f ms after its end",
			  (double)(w->end_ns - w->start_ns) / 1e9, w->f.pid,
			  w->f.waits == PPROF_WAITS_BLOCK   ? "block"
			  : w->f.waits == PPROF_WAITS_MUTEX ? "mutex"
			  : w->f.mode == WIRE_MODE_WALL	    ? "wall"
							    : "cpu",
			  w->n_procs, stats.samples, len,
			  (double)(loop_now_ns() - w->end_ns) / 1e6);
out:
	free(copies);
	if (rc < 0)
		log_warn("window of %u s: cannot build its profile: %s",
			 w->seconds, strerror(-rc));
	window_done_fn done = w->done;
	void *arg = w->arg;
	struct window_filter f = w->f;
	unlink_free(w);
	done(arg, rc, data, len, &f);
}

static void on_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct window *w = arg;
	(void)loop;
	(void)t;
	if (w->standby) {	 /* nobody came for it within its bound */
		w->timer = NULL; /* this one is freed on return */
		unlink_free(w);
		return;
	}
	if (!w->closing) {
		w->closing = 1;
		/* Wait for late samples unless nothing more can come: with
		 * a hold, until its processes acknowledge its end (at most
		 * WINDOW_HOLD_WAIT_NS), else WINDOW_GRACE_NS. */
		if (!w->hold_done && !caught_up(w, NULL)) {
			w->timer = NULL; /* this one is freed on return */
			w->timer = loop_add_timer(w->ws->loop,
						  w->hold ? WINDOW_HOLD_WAIT_NS
							  : WINDOW_GRACE_NS,
						  0, on_timer, w);
			if (w->timer)
				return;
		}
	}
	finish(w);
}

#define NS 1000000000ull

/* Drops the oldest standby (the earliest start) to make room. */
static void evict_standby(struct windows *ws)
{
	struct window *old = NULL;
	for (struct window *w = ws->head; w; w = w->next)
		if (w->standby && (!old || w->start_ns < old->start_ns))
			old = w;
	if (old) {
		log_debug("scrape standby dropped: %d waiting already",
			  WINDOW_STANDBY_MAX);
		unlink_free(old);
	}
}

/* Leaves w's standby: from w's end on, keyed like it, adopted within
 * its bound. Without memory w simply has none (the key's next request
 * covers its next N seconds). With hold (w continued a standby: its key
 * is a scraper's, not a one-off), the standby keeps sampling on in
 * dormant processes until it is adopted or dropped; a one-off's standby
 * does not, so that `go tool pprof` leaves dormant processes dormant
 * after its window (the first gap of a scraper's series then holds
 * only the processes that sample by themselves). */
static void standby_new(struct window *w, const char *key, int hold)
{
	struct windows *ws = w->ws;
	uint64_t now = loop_now_ns();
	unsigned gap_s = w->seconds < WINDOW_GAP_MAX_SECONDS
				 ? w->seconds
				 : WINDOW_GAP_MAX_SECONDS;
	struct window *s;

	if (ws->n_standby >= WINDOW_STANDBY_MAX)
		evict_standby(ws);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->key = strdup(key)))
		goto fail;
	s->ws = ws;
	s->f = w->f;
	s->standby = 1;
	s->seconds = w->seconds;
	s->start_ns = w->end_ns;
	s->end_ns = UINT64_MAX;
	s->start_unix_ns = w->end_unix_ns;
	s->gap_ns = (uint64_t)gap_s * NS;
	s->timer = loop_add_timer(ws->loop, w->end_ns + s->gap_ns - now, 0,
				  on_timer, s);
	if (!s->timer)
		goto fail;
	s->parent = w;
	w->succ = s;
	DLIST_PUSH(ws->head, s);
	ws->n_standby++;
	/* Overlapping w's hold, so that sampling carries on at w's end. */
	if (hold)
		window_sampling_on(s, w->end_ns - now + s->gap_ns + NS);
	return;
fail:
	if (s)
		free(s->key);
	free(s);
	log_debug("scrape standby: out of memory");
}

/* The standby of key and filter f that a request now continues: the
 * latest one started at or before now, within its bound; NULL if none. */
static struct window *standby_find(struct windows *ws, const char *key,
				   const struct window_filter *f, uint64_t now)
{
	struct window *best = NULL;
	for (struct window *w = ws->head; w; w = w->next) {
		if (!w->standby || w->start_ns > now ||
		    now - w->start_ns > w->gap_ns || strcmp(w->key, key) != 0 ||
		    w->f.pid != f->pid || w->f.mode != f->mode ||
		    w->f.waits != f->waits || w->f.waits_ns != f->waits_ns ||
		    strcmp(w->f.service, f->service) != 0 ||
		    strcmp(w->f.command, f->command) != 0 ||
		    w->f.own != f->own || w->f.uid != f->uid)
			continue;
		if (!best || w->start_ns > best->start_ns)
			best = w;
	}
	return best;
}

/* Turns standby s into an open window ending seconds from now; the
 * key's other standbys that started before now are dropped (they cover
 * time s covers). 0 or -ENOMEM (s unchanged). */
static int standby_adopt(struct window *s, unsigned seconds, uint64_t now,
			 window_done_fn done, void *arg)
{
	struct windows *ws = s->ws;
	struct loop_timer *t;
	struct control_hold *old = s->hold;
	uint64_t end = now + (uint64_t)seconds * NS;

	t = loop_add_timer(ws->loop, end - now, 0, on_timer, s);
	if (!t)
		return -ENOMEM;
	loop_del_timer(ws->loop, s->timer);
	s->timer = t;
	for (struct window *w = ws->head, *next; w; w = next) {
		next = w->next;
		if (w != s && w->standby && w->start_ns <= now &&
		    strcmp(w->key, s->key) == 0)
			unlink_free(w);
	}
	if (s->parent)
		s->parent->succ = NULL;
	s->parent = NULL;
	s->standby = 0;
	ws->n_standby--;
	ws->n++;
	s->seconds = seconds;
	s->end_ns = end;
	s->end_unix_ns = s->start_unix_ns + (end - s->start_ns);
	s->done = done;
	s->arg = arg;
	s->hold = NULL;
	s->hold_done = 0;
	window_sampling_on(s, end - now); /* first: no switch-off between */
	if (old)
		control_cancel(ws->ctl, old);
	return 0;
}

/* A window of seconds from now. NULL (ENOMEM). */
static struct window *window_new(struct windows *ws,
				 const struct window_filter *f,
				 unsigned seconds, window_done_fn done,
				 void *arg)
{
	struct window *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->ws = ws;
	w->f = *f;
	w->seconds = seconds;
	w->start_ns = loop_now_ns();
	w->end_ns = w->start_ns + (uint64_t)seconds * NS;
	w->start_unix_ns = now_unix_ns();
	w->end_unix_ns = w->start_unix_ns + (uint64_t)seconds * NS;
	w->done = done;
	w->arg = arg;
	w->timer = loop_add_timer(ws->loop, w->end_ns - w->start_ns, 0,
				  on_timer, w);
	if (!w->timer) {
		free(w);
		return NULL;
	}
	DLIST_PUSH(ws->head, w);
	ws->n++;
	window_sampling_on(w, (uint64_t)seconds * NS);
	return w;
}

struct window *window_open(struct windows *ws, const struct window_filter *f,
			   unsigned seconds, const char *key,
			   window_done_fn done, void *arg)
{
	struct window *w = NULL;
	uint64_t now = loop_now_ns();
	int adopted = 0;

	assert(seconds >= 1 && seconds <= WINDOW_MAX_SECONDS);
	if (ws->n >= WINDOW_MAX) {
		errno = EBUSY;
		return NULL;
	}
	if (key) {
		w = standby_find(ws, key, f, now);
		if (w && standby_adopt(w, seconds, now, done, arg) < 0)
			w = NULL;
		adopted = w != NULL;
		if (w)
			log_debug("scrape continues: %.3f s since the last "
				  "one's end",
				  (double)(now - w->start_ns) / 1e9);
	}
	if (!w)
		w = window_new(ws, f, seconds, done, arg);
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	if (key)
		standby_new(w, key, adopted);
	return w;
}

void window_cancel(struct window *w)
{
	if (!w)
		return;
	if (w->succ)
		unlink_free(w->succ);
	unlink_free(w);
}

void window_span(const struct window *w, uint64_t *start_unix_ns,
		 uint64_t *end_unix_ns)
{
	*start_unix_ns = w->start_unix_ns;
	*end_unix_ns = w->end_unix_ns;
}

size_t windows_standbys(const struct windows *ws)
{
	return ws->n_standby;
}

size_t windows_len(const struct windows *ws)
{
	return ws->n;
}

struct windows *windows_new(struct loop *loop, struct symtab *st,
			    struct procs *reg, struct control *ctl)
{
	struct windows *ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->loop = loop;
	ws->ctl = ctl;
	ws->st = st;
	ws->reg = reg;
	struct procs_tap tap = { tap_sample, tap_lost, tap_gone, ws };
	procs_set_tap(reg, &tap);
	return ws;
}

void windows_free(struct windows *ws)
{
	if (!ws)
		return;
	while (ws->head)
		unlink_free(ws->head);
	procs_set_tap(ws->reg, NULL);
	free(ws);
}
