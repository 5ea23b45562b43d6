/*
 * push.c - the push queue and thread (see push.h for the behaviour).
 *
 * The queue. A FIFO of requests (sequence number, path and query, body)
 * under mu: the loop thread appends (push_window), the push thread
 * takes from the head. Sequence numbers are given by the loop thread in
 * the order windows end and go on from the spool's largest, so the
 * oldest window is always the smaller of the queue's head and the
 * spool's oldest; while anything is spooled the thread moves the queue
 * to the spool first (so that it survives a crash too) and sends from
 * the spool alone.
 *
 * State of the push thread (its own, no lock): whether an outage is
 * running, its back-off and counts; the windows held in memory when the
 * spool cannot take them (sent in seq order with the spool's: the oldest
 * of the two goes first); the counts logged at exit.
 */
#include "push/push.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/clock.h"
#include "common/log.h"
#include "push/otlp_request.h"
#include "push/push_http.h"
#include "push/pyroscope.h"
#include "push/spool.h"

#define PUSH_BACKOFF_FIRST_NS 1000000000ull
#define PUSH_SECRET_MAX 4096

struct item {
	struct item *next;
	uint64_t seq;
	char *query;
	void *body;
	size_t len;
};

struct push {
	const struct push_opts *opts;
	enum push_dest dest;
	const char *url;  /* the destination's base URL */
	const char *name; /* "pyroscope", "otlp" */
	struct spool *spool;
	struct push_http *http;
	char dir[4096];
	pthread_t thread;
	int started;
	uint64_t next_seq;	       /* loop thread only */
	char *last_query[PUSH_KINDS];  /* loop thread: per kind, the last */
	uint64_t last_pid[PUSH_KINDS]; /* window's request and pid */
	int warned_same;

	pthread_mutex_t mu; /* guards the block below */
	pthread_cond_t cv;  /* signalled on a new item, and stop */
	struct item *head, *tail;
	size_t queued_bytes;
	int stopping;
	uint64_t spilled, spilled_bytes; /* spooled by the loop thread */
	_Atomic uint64_t deadline_ns;	 /* 0, or when uploads give up */
	_Atomic uint64_t n_lost;	 /* could not be spooled (either
					    thread): gone, and said so */

	/* the push thread's own */
	int outage;
	uint64_t outage_start_ns, backoff_ns, next_try_ns;
	uint64_t out_windows, out_bytes, out_dropped, out_lost_at, out_held;
	struct item *held; /* windows the spool could not take (a
				       full disk), by seq, sent from memory
				       in their turn; at most
				       PUSH_QUEUE_MAX bytes */
	size_t held_bytes;
	int refused_logged;
	uint64_t n_sent, n_refused, n_dropped, n_set_aside;
	unsigned seed;
};

static void item_free(struct item *it)
{
	if (!it)
		return;
	free(it->query);
	free(it->body);
	free(it);
}

/* ---- the push thread ----------------------------------------------------- */

/* Called by libcurl during a request: cut it short once exiting and past
 * the deadline. Pairs with the release store in push_free. */
static int should_abort(void *arg)
{
	struct push *p = arg;
	uint64_t d = atomic_load_explicit(&p->deadline_ns,
					  memory_order_acquire);
	return d && now_mono_ns() > d;
}

/* A delay in [d/2, d]: windows of many collectors do not retry in step. */
static uint64_t jitter(struct push *p, uint64_t d)
{
	return d / 2 + (uint64_t)rand_r(&p->seed) % (d / 2 + 1);
}

static void note_dropped(struct push *p)
{
	uint64_t bytes, n = spool_take_dropped(p->spool, &bytes);
	p->n_set_aside += spool_take_set_aside(p->spool);
	if (!n)
		return;
	p->n_dropped += n;
	p->out_dropped += n;
	log_warn("push: the spool is full (--spool-max %" PRIu64 " bytes): "
		 "dropped the %" PRIu64 " oldest window%s (%" PRIu64 " bytes); "
		 "%" PRIu64 " dropped so far",
		 p->opts->spool_max, n,
		 n == 1 ? "" : "s", bytes, p->n_dropped);
}

/* A window that could not be written to the spool (a full disk): it is
 * gone; counted, so that no line says "all sent" afterwards. Either
 * thread. */
static void lost(struct push *p, int rc)
{
	uint64_t n = atomic_fetch_add(&p->n_lost, 1) + 1;
	log_error("push: cannot spool a window in %s: %s: it is lost (%" PRIu64
		  " lost so far)",
		  p->dir, strerror(-rc), n);
}

/* Keeps a window the spool could not take in memory, in seq order, to
 * be sent in its turn (as output.c holds profiles on a full disk); past
 * PUSH_QUEUE_MAX bytes held, it is lost. Takes it. Push thread. */
static void hold(struct push *p, struct item *it, int rc)
{
	struct item **at = &p->held;

	if (p->held_bytes + it->len > PUSH_QUEUE_MAX) {
		lost(p, rc);
		item_free(it);
		return;
	}
	while (*at && (*at)->seq < it->seq)
		at = &(*at)->next;
	it->next = *at;
	*at = it;
	p->held_bytes += it->len;
	if (!p->out_held++)
		log_warn("push: cannot spool a window in %s: %s: holding it "
			 "in memory until it is sent (up to %u MiB)",
			 p->dir,
			 strerror(-rc), PUSH_QUEUE_MAX >> 20);
}

/* Spools a window of the push thread: takes it. */
static void to_spool(struct push *p, struct item *it)
{
	int rc = spool_add(p->spool, it->seq, p->name, p->url, it->query,
			   it->body, it->len);
	if (rc < 0 && rc != -EFBIG) {
		note_dropped(p);
		hold(p, it, rc);
		return;
	}
	if (rc == 0) {
		p->out_windows++;
		p->out_bytes += it->len;
	}
	note_dropped(p);
	item_free(it);
}

/* When to try again: the back-off with jitter, or later if the server
 * asked so (Retry-After). */
static void schedule_retry(struct push *p)
{
	uint64_t now = now_mono_ns();
	uint64_t asked = push_http_retry_after(p->http) * 1000000000ull;
	uint64_t wait = jitter(p, p->backoff_ns);

	p->next_try_ns = now + (asked > wait ? asked : wait);
}

static void start_outage(struct push *p, const char *why)
{
	char asked[64] = "";
	unsigned ra = push_http_retry_after(p->http);

	p->outage = 1;
	p->outage_start_ns = now_mono_ns();
	p->out_windows = p->out_bytes = p->out_dropped = p->out_held = 0;
	p->out_lost_at = atomic_load(&p->n_lost);
	p->backoff_ns = PUSH_BACKOFF_FIRST_NS;
	schedule_retry(p);
	if (ra)
		snprintf(asked, sizeof(asked), ", the first after %u s as "
					       "the server asks",
			 ra);
	log_warn("push: cannot send to %s (%s): keeping windows in %s and "
		 "trying again with back-off%s",
		 p->url, why, p->dir, asked);
}

static void end_outage(struct push *p)
{
	uint64_t s = (now_mono_ns() - p->outage_start_ns) / 1000000000u;
	uint64_t gone = atomic_load(&p->n_lost) - p->out_lost_at;
	char dropped[192] = "", lost_text[128] = "";
	int at = 0;

	p->outage = 0;
	if (p->out_held)
		at = snprintf(dropped, sizeof(dropped), " (%" PRIu64 " held in "
							"memory: the spool could not be written)",
			      p->out_held);
	if (p->out_dropped)
		snprintf(dropped + at, sizeof(dropped) - (size_t)at, "; %" PRIu64 " older dropped (spool full)", p->out_dropped);
	if (gone)
		snprintf(lost_text, sizeof(lost_text), "; %" PRIu64 " more "
						       "lost: they could not be written to the spool",
			 gone);
	if (gone)
		log_warn("push: %s takes windows again after %" PRIu64 " s: %" PRIu64 " window%s (%" PRIu64 " bytes) were spooled "
			 "and sent%s%s",
			 p->url, s, p->out_windows,
			 p->out_windows == 1 ? "" : "s", p->out_bytes, dropped,
			 lost_text);
	else
		log_info("push: %s takes windows again after %" PRIu64 " s: %" PRIu64 " window%s (%" PRIu64 " bytes) were spooled, "
			 "all sent%s",
			 p->url, s, p->out_windows,
			 p->out_windows == 1 ? "" : "s", p->out_bytes, dropped);
}

static void refused(struct push *p, const char *why)
{
	p->n_refused++;
	if (!p->refused_logged)
		log_error("push: %s refused a window (%s): it is dropped, not "
			  "sent again; so is every window it refuses until "
			  "one passes",
			  p->url, why);
	else
		log_debug("push: refused again (%s)", why);
	p->refused_logged = 1;
}

/* One try at sending a window (path and query, gzipped pprof) to the
 * destination: for OTLP the request is made from it first. */
static enum push_result post(struct push *p, const char *query,
			     const void *body, size_t len, char *why,
			     size_t why_len)
{
	void *req = NULL;
	size_t req_len = 0;
	int status, rc;
	enum push_result r;

	if (p->dest == PUSH_PYROSCOPE) {
		char ctype[128];
		return push_http_post(p->http, query,
				      pyroscope_content_type(body, len, ctype,
							     sizeof(ctype)),
				      body, len, &status, why, why_len);
	}
	rc = otlp_request_body(query, body, len, &req, &req_len, why,
			       why_len);
	if (rc == -ENOMEM)
		snprintf(why, why_len, "out of memory");
	if (rc < 0) /* nothing was sent: not the server's refusal */
		return rc == -ENOMEM ? PUSH_RETRY : PUSH_INVALID;
	r = push_http_post(p->http, OTLP_REQUEST_PATH, OTLP_REQUEST_CTYPE,
			   req, req_len, &status, why, why_len);
	free(req);
	return r;
}

/* A window that cannot be sent from here (post said PUSH_INVALID): no
 * server saw it. A spooled one is set aside by the caller. */
static void invalid(struct push *p, const char *why)
{
	log_error("push: a window for %s cannot be sent (%s): it was not "
		  "sent, and is not tried again",
		  p->url, why);
}

/* Sends a window taken from the queue (no outage, nothing spooled). */
static void send_item(struct push *p, struct item *it)
{
	char why[512];
	enum push_result r = post(p, it->query, it->body, it->len, why,
				  sizeof(why));
	if (r == PUSH_RETRY && should_abort(p))
		snprintf(why, sizeof(why), "still sending when the collector "
					   "exits");
	if (r == PUSH_SENT) {
		p->n_sent++;
		p->refused_logged = 0;
	} else if (r == PUSH_REFUSED) {
		refused(p, why);
	} else if (r == PUSH_INVALID) {
		invalid(p, why);
		p->n_set_aside++;
	} else {
		start_outage(p, why);
		to_spool(p, it);
		return;
	}
	item_free(it);
}

/* Whether a spooled window was made for this destination: spooled for
 * it (by name, and by URL since version 2 of the file), and a request
 * path of its API. NULL, or why not. A spool file is never followed
 * elsewhere (docs/security.md). */
static const char *not_ours(const struct push *p,
			    const struct spool_item *si, char *buf,
			    size_t cap)
{
	const char *path = p->dest == PUSH_OTLP ? OTLP_REQUEST_PATH "?"
						: "/ingest?";
	if (strcmp(si->dest, p->name) != 0) {
		snprintf(buf, cap, "spooled for %s, not %s", si->dest,
			 p->name);
		return buf;
	}
	if (si->url[0] && strcmp(si->url, p->url) != 0) {
		snprintf(buf, cap, "spooled for %.200s, not %.200s", si->url,
			 p->url);
		return buf;
	}
	if (strncmp(si->query, path, strlen(path)) != 0) {
		snprintf(buf, cap, "its request path is not %s...", path);
		return buf;
	}
	return NULL;
}

/* A waiting window is gone (sent, refused, set aside): counts taken, and
 * the outage ends with the spool and the held windows. */
static void spool_went_down(struct push *p)
{
	note_dropped(p);
	if (!spool_oldest(p->spool) && !p->held && p->outage)
		end_outage(p);
}

/* The oldest waiting window failed again: back off. */
static void retry_later(struct push *p, const char *why)
{
	if (!p->outage) {
		start_outage(p, why);
		return;
	}
	if (p->backoff_ns < PUSH_BACKOFF_MAX_NS / 2)
		p->backoff_ns *= 2;
	else
		p->backoff_ns = PUSH_BACKOFF_MAX_NS;
	schedule_retry(p);
	log_debug("push: still failing (%s); next try in %" PRIu64 " ms", why,
		  (p->next_try_ns - now_mono_ns()) / 1000000u);
}

/* A window was answered (sent or refused): counted. */
static void answered(struct push *p, enum push_result r, const char *why)
{
	if (r == PUSH_SENT) {
		p->n_sent++;
		p->refused_logged = 0;
		p->backoff_ns = PUSH_BACKOFF_FIRST_NS;
	} else {
		refused(p, why);
	}
}

/* Whether the oldest waiting window is one held in memory. */
static int held_first(struct push *p)
{
	uint64_t seq = spool_oldest(p->spool);
	return p->held && (!seq || p->held->seq < seq);
}

/* Tries the oldest held window (held_first). */
static void send_held(struct push *p)
{
	struct item *it = p->held;
	char why[512];
	enum push_result r = post(p, it->query, it->body, it->len, why,
				  sizeof(why));

	if (r == PUSH_RETRY) {
		retry_later(p, why);
		return;
	}
	p->held = it->next;
	p->held_bytes -= it->len;
	item_free(it);
	if (r == PUSH_INVALID) {
		invalid(p, why);
		p->n_set_aside++;
	} else {
		answered(p, r, why);
	}
	spool_went_down(p);
}

/* Tries the oldest waiting window: held in memory, or spooled. */
static void send_spooled(struct push *p)
{
	struct spool_item si;
	char why[512];
	int rc;
	uint64_t seq = spool_oldest(p->spool);
	enum push_result r;

	if (held_first(p)) {
		send_held(p);
		return;
	}
	if (!seq)
		return;
	rc = spool_read(p->spool, seq, &si);
	if (rc < 0) {
		/* -EINVAL: set aside by spool_read, which said why */
		if (rc != -ENOENT && rc != -EINVAL) {
			log_warn("push: spooled window %016" PRIx64 " in %s "
				 "cannot be read (%s): dropped",
				 seq, p->dir,
				 strerror(-rc));
			spool_remove(p->spool, seq);
		}
		spool_went_down(p);
		return;
	}
	if (not_ours(p, &si, why, sizeof(why))) {
		spool_item_free(&si);
		spool_set_aside(p->spool, seq, why);
		spool_went_down(p);
		return;
	}
	r = post(p, si.query, si.body, si.len, why, sizeof(why));
	spool_item_free(&si);
	if (r == PUSH_INVALID) {
		invalid(p, why);
		spool_set_aside(p->spool, seq, why);
		spool_went_down(p);
		return;
	}
	if (r == PUSH_RETRY) {
		retry_later(p, why);
		return;
	}
	spool_remove(p->spool, seq);
	answered(p, r, why);
	spool_went_down(p);
}

/* Takes the queue's head (there is one); mu held. */
static struct item *pop_item(struct push *p)
{
	struct item *it = p->head;
	p->head = it->next;
	if (!p->head)
		p->tail = NULL;
	p->queued_bytes -= it->len;
	return it;
}

/* Moves the queue to the spool. Called and returns with mu held. */
static void spool_queue(struct push *p)
{
	while (p->head) {
		struct item *it = pop_item(p);
		pthread_mutex_unlock(&p->mu);
		to_spool(p, it);
		pthread_mutex_lock(&p->mu);
	}
	p->out_windows += p->spilled;
	p->out_bytes += p->spilled_bytes;
	p->spilled = p->spilled_bytes = 0;
}

static void wait_until(struct push *p, uint64_t mono_ns)
{
	struct timespec ts;
	uint64_t now = now_mono_ns(), d = mono_ns > now ? mono_ns - now : 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(d / 1000000000u);
	ts.tv_nsec += (long)(d % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

static void *run(void *arg)
{
	struct push *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		int waiting = p->held || spool_oldest(p->spool);
		if (!p->outage && p->head && !waiting) {
			struct item *it = pop_item(p);
			pthread_mutex_unlock(&p->mu);
			send_item(p, it);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (p->outage || waiting) {
			spool_queue(p);
			if (p->stopping)
				break;
			if (now_mono_ns() >= p->next_try_ns) {
				pthread_mutex_unlock(&p->mu);
				send_spooled(p);
				pthread_mutex_lock(&p->mu);
			} else {
				wait_until(p, p->next_try_ns);
			}
			continue;
		}
		if (p->stopping)
			break;
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- set-up ------------------------------------------------------------ */

/* The first line of file, into a malloc'd string; NULL after logging.
 * The file is checked as ssh checks its keys (checked.h): a regular
 * file of ours or root's, no link, no access for others, and opened
 * without blocking (a FIFO is refused, not waited on). */
static char *read_secret(const char *file, const char *what)
{
	const struct checked_rules rules = {
		.what = what,
		.harm = "another user could read or change the secret",
		.fix = "make it a regular file of yours (or root's), mode 0600 "
		       "or 0400, not a symbolic link",
		.trust_uid = -1,
		.how = CHECKED_FILE | CHECKED_SECRET,
	};
	char buf[PUSH_SECRET_MAX + 2], err[4400];
	int fd = checked_open(file, O_RDONLY, &rules, err, sizeof(err));
	size_t n = 0;
	ssize_t got = 0;

	if (fd < 0) {
		log_error("%s", err);
		return NULL;
	}
	while (n < sizeof(buf) - 1 &&
	       ((got = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0 ||
		(got < 0 && errno == EINTR)))
		n += got > 0 ? (size_t)got : 0;
	close(fd);
	buf[n] = 0;
	buf[strcspn(buf, "\r\n")] = 0;
	if (got < 0 || !buf[0] || strlen(buf) > PUSH_SECRET_MAX) {
		log_error("%s %s: wants one line of 1 to %d characters", what,
			  file, PUSH_SECRET_MAX);
		return NULL;
	}
	return strdup(buf);
}

/* --spool-dir, else DIR/spool beside the profiles, else a private
 * directory of the user's ($XDG_STATE_HOME or ~/.local/state); then the
 * destination's subdirectory. */
static int spool_path(const struct push_opts *o, const char *output_dir,
		      const char *name, char *out, size_t cap)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	struct passwd *pw;
	int n;

	if (o->spool_dir)
		n = snprintf(out, cap, "%s/%s", o->spool_dir, name);
	else if (output_dir)
		n = snprintf(out, cap, "%s/spool/%s", output_dir, name);
	else if (state && state[0] == '/')
		n = snprintf(out, cap, "%s/pyprof/spool/%s", state, name);
	else if ((home && home[0] == '/') ||
		 ((pw = getpwuid(getuid())) && (home = pw->pw_dir)))
		n = snprintf(out, cap, "%s/.local/state/pyprof/spool/%s",
			     home, name);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Opens the spool and reads the secrets; 0 or -1 after logging. */
static int prepare(struct push *p, const char *output_dir, char **password,
		   char **token)
{
	const struct push_opts *o = p->opts;
	const char *env = getenv("PYPROF_PUSH_PASSWORD");
	char err[4400];
	size_t n;
	uint64_t bytes;

	if (spool_path(o, output_dir, p->name, p->dir, sizeof(p->dir)) < 0) {
		log_error("push: no place for the spool: give --spool-dir");
		return -1;
	}
	p->spool = spool_open(p->dir, o->spool_max, err, sizeof(err));
	if (!p->spool) {
		log_error("push: spool: %s", err);
		return -1;
	}
	if (o->basic_user && o->password_file &&
	    !(*password = read_secret(o->password_file,
				      "--push-password-file")))
		return -1;
	if (o->basic_user && !o->password_file &&
	    !(*password = strdup(env ? env : "")))
		return -1;
	if (o->bearer_file &&
	    !(*token = read_secret(o->bearer_file, "--push-bearer-token-file")))
		return -1;
	p->next_seq = spool_last_seq(p->spool) + 1; /* <= SPOOL_SEQ_MAX + 1 */
	p->n_set_aside += spool_take_set_aside(p->spool);
	spool_usage(p->spool, &n, &bytes);
	log_info("push: windows go to %s%s; spool %s (at most %" PRIu64
		 " bytes)%s",
		 p->url, p->dest == PUSH_OTLP ? OTLP_REQUEST_PATH : "/ingest", p->dir, o->spool_max, n ? "" : ", empty");
	if (n)
		log_info("push: %zu window%s (%" PRIu64 " bytes) spooled by "
			 "an earlier run: sent first",
			 n, n == 1 ? "" : "s",
			 bytes);
	return 0;
}

struct push *push_new(const struct push_opts *o, enum push_dest dest,
		      const char *output_dir)
{
	struct push *p = calloc(1, sizeof(*p));
	char *password = NULL, *token = NULL;
	sigset_t all, old;

	if (!p) {
		log_error("push: out of memory");
		return NULL;
	}
	p->opts = o;
	p->dest = dest;
	p->url = dest == PUSH_OTLP ? o->otlp_url : o->pyroscope_url;
	p->name = dest == PUSH_OTLP ? "otlp" : "pyroscope";
	pthread_mutex_init(&p->mu, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (getrandom(&p->seed, sizeof(p->seed), 0) < 0)
		p->seed = (unsigned)now_mono_ns();
	if (prepare(p, output_dir, &password, &token) < 0)
		goto fail;
	p->http = push_http_new(o, p->url, password, token, should_abort, p);
	if (!p->http)
		goto fail;
	/* The collector takes SIGTERM through its signalfd: the thread
	 * must never be the one it is delivered to. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	p->started = pthread_create(&p->thread, NULL, run, p) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!p->started) {
		log_error("push: cannot start its thread");
		goto fail;
	}
	free(password);
	free(token);
	return p;
fail:
	free(password);
	free(token);
	push_free(p);
	return NULL;
}

/* At exit: the windows held in memory get one more try at the spool
 * (there may be room now), else they are lost, and counted. */
static void spool_held(struct push *p)
{
	while (p->held) {
		struct item *it = p->held;
		int rc = spool_add(p->spool, it->seq, p->name, p->url,
				   it->query, it->body, it->len);
		p->held = it->next;
		if (rc < 0 && rc != -EFBIG)
			lost(p, rc);
		item_free(it);
	}
	p->held_bytes = 0;
}

void push_free(struct push *p)
{
	size_t n = 0;
	uint64_t bytes = 0;

	if (!p)
		return;
	if (p->started) {
		atomic_store_explicit(&p->deadline_ns,
				      now_mono_ns() + PUSH_EXIT_NS,
				      memory_order_release);
		pthread_mutex_lock(&p->mu);
		p->stopping = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
		spool_held(p);
		spool_usage(p->spool, &n, &bytes);
		note_dropped(p);
		log_info("push: %" PRIu64 " window%s sent, %" PRIu64
			 " refused, %" PRIu64 " dropped (spool full), %" PRIu64
			 " lost (not written to the spool), %" PRIu64 " set "
			 "aside (cannot be sent); %zu (%" PRIu64 " bytes) left "
			 "in %s for the next run",
			 p->n_sent,
			 p->n_sent == 1 ? "" : "s", p->n_refused, p->n_dropped,
			 atomic_load(&p->n_lost), p->n_set_aside, n, bytes,
			 p->dir);
	}
	while (p->head) {
		struct item *it = p->head;
		p->head = it->next;
		item_free(it);
	}
	for (int k = 0; k < PUSH_KINDS; k++)
		free(p->last_query[k]);
	push_http_free(p->http);
	spool_close(p->spool);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* ---- the loop thread's side -------------------------------------------- */

/* Pyroscope keeps one profile per series and timestamp: processes of one
 * service pushed per process, in the same window, would be taken for
 * duplicates of each other. Says so once (docs/fleet.md). */
static void check_same_series(struct push *p, const struct push_window *w,
			      const char *query)
{
	unsigned k = (unsigned)w->kind % PUSH_KINDS;

	if (p->dest != PUSH_PYROSCOPE)
		return;
	if (!p->warned_same && p->last_query[k] && w->pid &&
	    w->pid != p->last_pid[k] && strcmp(p->last_query[k], query) == 0) {
		log_warn("push: pids %" PRIu64 " and %" PRIu64 " send the same "
			 "series for the same window; Pyroscope keeps one "
			 "profile per series and time: give them --merge, or "
			 "tell them apart (--service-name)",
			 p->last_pid[k],
			 w->pid);
		p->warned_same = 1;
	}
	free(p->last_query[k]);
	p->last_query[k] = strdup(query);
	p->last_pid[k] = w->pid;
}

int push_window(struct push *p, const struct push_window *w,
		const void *pprof_gz, size_t len)
{
	struct item *it = calloc(1, sizeof(*it));
	int spill;

	int form = p->dest == PUSH_PYROSCOPE &&
		   (w->kind == PUSH_BLOCK || w->kind == PUSH_MUTEX);

	if (it) {
		it->query = p->dest == PUSH_OTLP ? otlp_request_query(p->opts, w)
						 : pyroscope_query(p->opts, w);
		if (form && pyroscope_form(w->kind, pprof_gz, len, &it->body,
					   &len) < 0)
			it->body = NULL;
		else if (!form && (it->body = malloc(len ? len : 1)))
			memcpy(it->body, pprof_gz, len);
	}
	if (!it || !it->query || !it->body) {
		log_error("push: out of memory: a window of pid %" PRIu64
			  " is not sent",
			  w->pid);
		item_free(it);
		return -ENOMEM;
	}
	check_same_series(p, w, it->query);
	it->len = len;
	it->seq = p->next_seq++;
	pthread_mutex_lock(&p->mu);
	spill = p->queued_bytes + len > PUSH_QUEUE_MAX;
	if (!spill) {
		if (p->tail)
			p->tail->next = it;
		else
			p->head = it;
		p->tail = it;
		p->queued_bytes += len;
		pthread_cond_signal(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	if (spill) {
		/* The thread is stuck on the network: to disk, in order. */
		int rc = spool_add(p->spool, it->seq, p->name, p->url,
				   it->query, it->body, it->len);
		if (rc < 0 && rc != -EFBIG)
			lost(p, rc);
		pthread_mutex_lock(&p->mu);
		if (rc == 0) {
			p->spilled++;
			p->spilled_bytes += len;
		}
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		item_free(it);
	}
	return 0;
}
