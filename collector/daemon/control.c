/*
 * control.c - see control.h. Holds, the processes they cover (peers),
 * and commands waiting for their replies (ops). Loop thread only.
 *
 * Sizes: a few holds at a time, peers as many as connected processes
 * (hundreds): lists, searched linearly.
 */
#include "daemon/control.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "daemon/conn.h"
#include "common/log.h"
#include "pyprof/wire_frames.h"
#include "common/loop.h"
#include "pyprof/wire.h"

/* A library connection. */
struct peer {
	struct conn *conn;
	uint64_t pid;
	unsigned holds;		     /* holds that cover it now          */
	int sampling;		     /* as it last said; -1 unknown      */
	struct control_settings eff; /* what its session runs with       */
	uint64_t lease_end_ns;	     /* UINT64_MAX: no lease (until stop) */
	struct peer *next;
};

struct control_hold {
	struct control *ctl;
	uint64_t pid;	 /* 0: every process                 */
	uint64_t end_ns; /* UINT64_MAX: until control_end    */
	struct control_settings s;
	control_done_fn done;
	void *arg;
	int from_ctl; /* made by a controller's start     */
	int ending;   /* ended, waiting for acks          */
	struct loop_timer *timer;
	struct control_hold *next;
	/* control_start_uid: only the processes of uid */
	int by_uid;
	unsigned uid;
};

enum op_kind { OP_HOLD_END,
	       OP_CTL };

/* Something waiting for replies: a hold's end, or a controller. */
struct op {
	enum op_kind kind;
	struct control_hold *hold; /* OP_HOLD_END                      */
	struct conn *controller;   /* OP_CTL; NULL once it went away   */
	unsigned pending, answered;
	struct loop_timer *timer;
	struct op *next;
};

/* One command sent, waiting for its reply. */
struct wait {
	uint64_t req;
	struct peer *peer;
	struct op *op;
	const char *note; /* the collector's, for the answer   */
	struct wait *next;
};

struct control {
	struct loop *loop;
	struct peer *peers;
	struct control_hold *holds; /* active and ending                */
	struct op *ops;
	struct wait *waits;
	uint64_t next_req;
};

struct control *control_new(struct loop *loop)
{
	struct control *ctl = calloc(1, sizeof(*ctl));
	if (ctl)
		ctl->loop = loop;
	return ctl;
}

void control_free(struct control *ctl)
{
	if (!ctl)
		return;
	while (ctl->waits) {
		struct wait *w = ctl->waits;
		ctl->waits = w->next;
		free(w);
	}
	while (ctl->ops) {
		struct op *o = ctl->ops;
		ctl->ops = o->next;
		loop_del_timer(ctl->loop, o->timer);
		free(o);
	}
	while (ctl->holds) {
		struct control_hold *h = ctl->holds;
		ctl->holds = h->next;
		loop_del_timer(ctl->loop, h->timer);
		free(h);
	}
	while (ctl->peers) {
		struct peer *p = ctl->peers;
		ctl->peers = p->next;
		free(p);
	}
	free(ctl);
}

static int covers(const struct control_hold *h, const struct peer *p)
{
	return !h->ending && (!h->pid || h->pid == p->pid) &&
	       (!h->by_uid || conn_peer_uid(p->conn) == h->uid);
}

/* ---- frames ----------------------------------------------------------- */

struct frame {
	uint8_t b[WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD];
	struct wire_out w;
};

static void frame_begin(struct frame *f)
{
	f->w = wire_tagged_begin(f->b, sizeof(f->b));
}

/* Sends a frame to c, watching for the socket to take the rest. 0 or
 * -errno (the frame did not go). */
static int send_to(struct control *ctl, struct conn *c, struct frame *f,
		   unsigned type)
{
	size_t n = wire_tagged_end(f->b, &f->w, type);
	if (!n)
		return -EMSGSIZE;
	int rc = conn_send(c, f->b, n);
	if (rc == 1)
		loop_mod_fd(ctl->loop, conn_fd(c), EPOLLIN | EPOLLOUT);
	return rc < 0 ? rc : 0;
}

/* ---- ops and waits ---------------------------------------------------- */

static void op_timeout(struct loop *loop, struct loop_timer *t, void *arg);

static struct op *op_new(struct control *ctl, enum op_kind kind)
{
	struct op *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->kind = kind;
	o->next = ctl->ops;
	ctl->ops = o;
	return o;
}

/* An answer for the controller, from a reply payload (or none). */
static void answer(struct control *ctl, struct op *o, struct peer *p,
		   const uint8_t *payload, size_t len, const char *why,
		   const char *note)
{
	struct frame f;
	o->answered++;
	if (!o->controller)
		return;
	frame_begin(&f);
	wire_put_tag_varint(&f.w, WIRE_C_PID, p->pid);
	wire_put_tag_str(&f.w, WIRE_C_COMM, conn_comm(p->conn));
	if (note)
		wire_put_tag_str(&f.w, WIRE_C_MSG, note);
	if (payload) {
		/* the reply's tagged fields, as they came */
		wire_put_fields(&f.w, payload, len);
	} else {
		wire_put_tag_varint(&f.w, WIRE_C_STATUS, WIRE_CTL_NO_REPLY);
		wire_put_tag_str(&f.w, WIRE_C_MSG, why);
	}
	send_to(ctl, o->controller, &f, WIRE_CTL_ANSWER);
}

static void op_finish(struct control *ctl, struct op *o, const char *msg)
{
	struct op **pp;
	for (struct wait **wp = &ctl->waits; *wp;) {
		struct wait *w = *wp;
		if (w->op == o) {
			*wp = w->next;
			free(w);
		} else {
			wp = &w->next;
		}
	}
	for (pp = &ctl->ops; *pp && *pp != o; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = o->next;
	loop_del_timer(ctl->loop, o->timer);
	if (o->kind == OP_CTL && o->controller) {
		struct frame f;
		frame_begin(&f);
		wire_put_tag_varint(&f.w, WIRE_C_N, o->answered);
		if (msg)
			wire_put_tag_str(&f.w, WIRE_C_MSG, msg);
		send_to(ctl, o->controller, &f, WIRE_CTL_DONE);
	}
	if (o->kind == OP_HOLD_END) {
		struct control_hold *h = o->hold, **hp;
		for (hp = &ctl->holds; *hp && *hp != h; hp = &(*hp)->next)
			;
		if (*hp)
			*hp = h->next;
		if (h->done)
			h->done(h, h->arg);
		free(h);
	}
	free(o);
}

/* Arms o's time-out, or finishes it if nothing is pending. */
static void op_launch(struct control *ctl, struct op *o, const char *msg)
{
	if (!o->pending) {
		op_finish(ctl, o, msg);
		return;
	}
	o->timer = loop_add_timer(ctl->loop, CONTROL_REPLY_NS, 0, op_timeout,
				  ctl);
	if (!o->timer) /* no memory for a timer: do not wait at all */
		op_finish(ctl, o, NULL);
}

static void wait_done(struct control *ctl, struct wait *w,
		      const uint8_t *payload, size_t len, const char *why)
{
	struct wait **pp;
	for (pp = &ctl->waits; *pp && *pp != w; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = w->next;
	struct op *o = w->op;
	if (o->kind == OP_CTL)
		answer(ctl, o, w->peer, payload, len, why, w->note);
	free(w);
	if (--o->pending == 0 && o->timer)
		op_finish(ctl, o, NULL);
}

static void op_timeout(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct control *ctl = arg;
	(void)loop;
	/* which op: the one whose timer this is (it is freed by the loop
	 * after this returns, so forget it first) */
	struct op *o;
	for (o = ctl->ops; o && o->timer != t; o = o->next)
		;
	if (!o)
		return;
	o->timer = NULL;
	struct wait *w = ctl->waits, *next;
	for (; w; w = next) {
		next = w->next;
		if (w->op == o) {
			log_info("pid %" PRIu64 " did not answer a control "
				 "request in time",
				 w->peer->pid);
			o->pending++; /* wait_done must not finish it */
			wait_done(ctl, w, NULL, 0, "no answer in time");
			o->pending--;
		}
	}
	op_finish(ctl, o, NULL);
}

/* Sends a command to p; with o, o waits for its reply. */
static void command(struct control *ctl, struct peer *p, unsigned type,
		    struct frame *f, struct op *o)
{
	if (send_to(ctl, p->conn, f, type) < 0) {
		log_warn("pid %" PRIu64 ": cannot send it a control frame "
			 "(it is not reading its socket)",
			 p->pid);
		if (o && o->kind == OP_CTL)
			answer(ctl, o, p, NULL, 0,
			       "not delivered: the process is not reading",
			       NULL);
		return;
	}
	if (!o)
		return;
	struct wait *w = calloc(1, sizeof(*w));
	if (!w)
		return;
	/* the REQ field is the first of every command's frame */
	w->req = ctl->next_req;
	w->peer = p;
	w->op = o;
	w->next = ctl->waits;
	ctl->waits = w;
	o->pending++;
}

static void begin_cmd(struct control *ctl, struct frame *f)
{
	frame_begin(f);
	wire_put_tag_varint(&f->w, WIRE_C_REQ, ++ctl->next_req);
}

static void send_start(struct control *ctl, struct peer *p, uint64_t now,
		       struct op *o)
{
	struct frame f;
	const struct control_settings *s = &p->eff;
	begin_cmd(ctl, &f);
	if (s->has_mode)
		wire_put_tag_varint(&f.w, WIRE_C_MODE, s->mode);
	if (s->period_ns)
		wire_put_tag_varint(&f.w, WIRE_C_PERIOD_NS, s->period_ns);
	if (s->heap_rate)
		wire_put_tag_varint(&f.w, WIRE_C_HEAP_RATE, s->heap_rate);
	if (s->native)
		wire_put_tag_varint(&f.w, WIRE_C_NATIVE, 1);
	if (s->waits_ns)
		wire_put_tag_varint(&f.w, WIRE_C_WAITS_NS, s->waits_ns);
	if (p->lease_end_ns != UINT64_MAX)
		wire_put_tag_varint(&f.w, WIRE_C_LEASE_MS,
				    (p->lease_end_ns - now + 999999) / 1000000);
	command(ctl, p, WIRE_CTL_START, &f, o);
}

static void send_simple(struct control *ctl, struct peer *p, unsigned type,
			int hard, struct op *o)
{
	struct frame f;
	begin_cmd(ctl, &f);
	if (hard)
		wire_put_tag_varint(&f.w, WIRE_C_HARD, 1);
	command(ctl, p, type, &f, o);
}

/* ---- holds ------------------------------------------------------------ */

static int same(const struct control_settings *a,
		const struct control_settings *b)
{
	return a->has_mode == b->has_mode &&
	       (!a->has_mode || a->mode == b->mode) &&
	       a->period_ns == b->period_ns && a->heap_rate == b->heap_rate &&
	       a->native == b->native && a->waits_ns == b->waits_ns;
}

/* h now covers p. With o, o waits for p's answer: to the START if one is
 * sent, else to a STATUS. */
static void peer_hold(struct control *ctl, struct peer *p,
		      const struct control_hold *h, struct op *o)
{
	uint64_t now = loop_now_ns();
	uint64_t lease = h->end_ns == UINT64_MAX
				 ? UINT64_MAX
				 : h->end_ns + CONTROL_LEASE_MARGIN_NS;
	if (p->holds++ == 0) {
		p->eff = h->s;
		p->lease_end_ns = lease;
		send_start(ctl, p, now, o);
		return;
	}
	/* A block or mutex profile needs waits: a session without them
	 * gets them (they stay on until the session ends; the library
	 * switches them without a gap in the CPU samples). */
	int add_waits = h->s.waits_ns && !p->eff.waits_ns;
	if (add_waits)
		p->eff.waits_ns = h->s.waits_ns;
	if (lease > p->lease_end_ns || add_waits) {
		if (lease > p->lease_end_ns)
			p->lease_end_ns = lease; /* same session, longer */
		send_start(ctl, p, now, o);
	} else if (o) {
		send_simple(ctl, p, WIRE_CTL_STATUS, 0, o);
	}
	/* the waiting answer (just queued) says why it is not as asked */
	if (o && ctl->waits && ctl->waits->op == o && !same(&h->s, &p->eff))
		ctl->waits->note = "joined a sampling session already running "
				   "with other settings";
}

static void hold_end(struct control *ctl, struct control_hold *h,
		     int call_done);

static void hold_timer(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct control_hold *h = arg;
	(void)loop;
	(void)t;
	h->timer = NULL; /* one-shot: the loop frees it */
	hold_end(h->ctl, h, 1);
}

/* Ends h: every process it covered loses one hold; the last one ends
 * the session (STOP), others flush. */
static void hold_end(struct control *ctl, struct control_hold *h,
		     int call_done)
{
	if (h->ending)
		return;
	loop_del_timer(ctl->loop, h->timer);
	h->timer = NULL;
	struct op *o = op_new(ctl, OP_HOLD_END);
	for (struct peer *p = ctl->peers; p; p = p->next) {
		if (!covers(h, p) || !p->holds)
			continue;
		if (--p->holds == 0)
			send_simple(ctl, p, WIRE_CTL_STOP, 0, o);
		else
			send_simple(ctl, p, WIRE_CTL_FLUSH, 0, o);
	}
	h->ending = 1;
	if (!call_done)
		h->done = NULL;
	if (!o) { /* no memory to wait: done now */
		struct control_hold **hp;
		for (hp = &ctl->holds; *hp && *hp != h; hp = &(*hp)->next)
			;
		if (*hp)
			*hp = h->next;
		if (h->done)
			h->done(h, h->arg);
		free(h);
		return;
	}
	o->hold = h;
	op_launch(ctl, o, NULL);
}

/* A hold; o (a controller's request) waits for every covered process's
 * answer. */
static struct control_hold *hold_new(struct control *ctl, uint64_t pid,
				     const unsigned *uid, uint64_t duration_ns,
				     const struct control_settings *s,
				     control_done_fn done, void *arg,
				     struct op *o)
{
	struct control_hold *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->ctl = ctl;
	h->pid = pid;
	h->by_uid = uid != NULL;
	h->uid = uid ? *uid : 0;
	if (s)
		h->s = *s;
	h->done = done;
	h->arg = arg;
	h->from_ctl = o != NULL;
	h->end_ns = duration_ns ? loop_now_ns() + duration_ns : UINT64_MAX;
	if (duration_ns) {
		h->timer = loop_add_timer(ctl->loop, duration_ns, 0,
					  hold_timer, h);
		if (!h->timer) {
			free(h);
			return NULL;
		}
	}
	h->next = ctl->holds;
	ctl->holds = h;
	for (struct peer *p = ctl->peers; p; p = p->next)
		if (covers(h, p))
			peer_hold(ctl, p, h, o);
	return h;
}

struct control_hold *control_start(struct control *ctl, uint64_t pid,
				   uint64_t duration_ns,
				   const struct control_settings *s,
				   control_done_fn done, void *arg)
{
	return hold_new(ctl, pid, NULL, duration_ns, s, done, arg, NULL);
}

struct control_hold *control_start_uid(struct control *ctl, uint64_t pid,
				       unsigned uid, uint64_t duration_ns,
				       const struct control_settings *s,
				       control_done_fn done, void *arg)
{
	return hold_new(ctl, pid, &uid, duration_ns, s, done, arg, NULL);
}

void control_end(struct control *ctl, struct control_hold *h)
{
	hold_end(ctl, h, 1);
}

void control_cancel(struct control *ctl, struct control_hold *h)
{
	if (!h->ending) {
		hold_end(ctl, h, 0);
		return;
	}
	/* ending already: its op must not call back, nor free it twice */
	h->done = NULL;
}

size_t control_hold_procs(const struct control *ctl,
			  const struct control_hold *h)
{
	size_t n = 0;
	for (const struct peer *p = ctl->peers; p; p = p->next)
		n += covers(h, p);
	return n;
}

int control_proc_sampling(const struct control *ctl, uint64_t pid,
			  unsigned *holds)
{
	for (const struct peer *p = ctl->peers; p; p = p->next)
		if (p->pid == pid) {
			if (holds)
				*holds = p->holds;
			return p->sampling;
		}
	if (holds)
		*holds = 0;
	return -1;
}

size_t control_n_holds(const struct control *ctl)
{
	size_t n = 0;
	for (const struct control_hold *h = ctl->holds; h; h = h->next)
		n += !h->ending;
	return n;
}

/* ---- connections ------------------------------------------------------- */

static struct peer *find_peer(struct control *ctl, const struct conn *c)
{
	for (struct peer *p = ctl->peers; p; p = p->next)
		if (p->conn == c)
			return p;
	return NULL;
}

static void control_on_hello(struct control *ctl, struct conn *c)
{
	struct peer *p = find_peer(ctl, c);
	if (p)
		return;
	p = calloc(1, sizeof(*p));
	if (!p) {
		log_error("pid %" PRIu64 ": out of memory: no control of it",
			  conn_pid(c));
		return;
	}
	p->conn = c;
	p->pid = conn_pid(c);
	p->sampling = conn_hello_sampling(c);
	p->next = ctl->peers;
	ctl->peers = p;
	for (struct control_hold *h = ctl->holds; h; h = h->next)
		if (covers(h, p))
			peer_hold(ctl, p, h, NULL);
}

struct reply {
	uint64_t req, sampling;
};

static void reply_field(void *ctx, uint64_t tag, uint64_t v)
{
	struct reply *rp = ctx;
	if (tag == WIRE_C_REQ)
		rp->req = v;
	else if (tag == WIRE_C_SAMPLING)
		rp->sampling = v;
}

/* Reads a control payload's REQ and STATUS (and checks the rest is
 * well formed). 0 or -EPROTO. */
static int reply_fields(const uint8_t *p, size_t len, uint64_t *req,
			uint64_t *sampling)
{
	struct reply rp = { 0, *sampling };
	int rc = wire_fields_varints(p, len, WIRE_MAX_CTL_PAYLOAD, reply_field,
				     &rp);
	*req = rp.req;
	*sampling = rp.sampling;
	return rc;
}

static int control_on_reply(struct control *ctl, struct conn *c, unsigned type,
			    const uint8_t *p, size_t len)
{
	uint64_t req, sampling = 0;
	if (reply_fields(p, len, &req, &sampling) < 0)
		return -EPROTO;
	struct peer *pe = find_peer(ctl, c);
	if (!pe)
		return 0;
	pe->sampling = sampling != 0;
	if (type == WIRE_CTL_STATE) {
		log_info("pid %" PRIu64 ": sampling %s (its own toggle or "
			 "lease)",
			 pe->pid, sampling ? "on" : "off");
		return 0;
	}
	for (struct wait *w = ctl->waits; w; w = w->next)
		if (w->peer == pe && w->req == req) {
			wait_done(ctl, w, p, len, NULL);
			break;
		}
	return 0;
}

static void control_on_close(struct control *ctl, struct conn *c)
{
	for (struct op *o = ctl->ops; o; o = o->next)
		if (o->controller == c)
			o->controller = NULL;
	struct peer *p = find_peer(ctl, c), **pp;
	if (!p)
		return;
	for (struct wait *w = ctl->waits, *next; w; w = next) {
		next = w->next;
		if (w->peer == p)
			wait_done(ctl, w, NULL, 0, "disconnected");
	}
	for (pp = &ctl->peers; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p);
}

/* ---- controllers ---------------------------------------------------------- */

struct request {
	uint64_t verb, pid, lease_ms;
	struct control_settings s;
};

static void request_field(void *ctx, uint64_t tag, uint64_t v)
{
	struct request *q = ctx;
	switch (tag) {
	case WIRE_C_VERB:
		q->verb = v;
		break;
	case WIRE_C_PID:
		q->pid = v;
		break;
	case WIRE_C_LEASE_MS:
		q->lease_ms = v;
		break;
	case WIRE_C_MODE:
		q->s.has_mode = 1;
		q->s.mode = (unsigned)v;
		break;
	case WIRE_C_PERIOD_NS:
		q->s.period_ns = v;
		break;
	case WIRE_C_HEAP_RATE:
		q->s.heap_rate = v;
		break;
	case WIRE_C_NATIVE:
		q->s.native = v != 0;
		break;
	case WIRE_C_WAITS_NS:
		q->s.waits_ns = v;
		break;
	default:
		break;
	}
}

/* Reads a CTL_REQUEST payload into *q and checks it. 0 or -EPROTO. */
static int request_fields(const uint8_t *p, size_t len, struct request *q)
{
	memset(q, 0, sizeof(*q));
	if (wire_fields_varints(p, len, WIRE_MAX_CTL_PAYLOAD, request_field,
				q) < 0 ||
	    q->verb < WIRE_VERB_START || q->verb > WIRE_VERB_STATUS ||
	    q->lease_ms > UINT64_MAX / 1000000 / 2)
		return -EPROTO;
	return 0;
}

static const char *const verb_names[] = {
	[WIRE_VERB_START] = "start",
	[WIRE_VERB_STOP] = "stop",
	[WIRE_VERB_FLUSH] = "flush",
	[WIRE_VERB_STATUS] = "status",
};

static int control_on_request(struct control *ctl, struct conn *c,
			      const uint8_t *p, size_t len)
{
	struct request q;
	if (request_fields(p, len, &q) < 0)
		return -EPROTO;
	struct op *o = op_new(ctl, OP_CTL);
	if (!o)
		return 0; /* the controller sees no answer and times out */
	o->controller = c;
	size_t matched = 0;
	for (struct peer *pe = ctl->peers; pe; pe = pe->next)
		matched += !q.pid || q.pid == pe->pid;
	char who[32] = "every process", span[32] = "";
	if (q.pid)
		snprintf(who, sizeof(who), "pid %" PRIu64, q.pid);
	if (q.verb == WIRE_VERB_START && q.lease_ms)
		snprintf(span, sizeof(span), ", for %" PRIu64 " s",
			 q.lease_ms / 1000);
	log_info("control request: %s, %s%s: %zu connected",
		 verb_names[q.verb], who, span, matched);
	switch (q.verb) {
	case WIRE_VERB_START:
		hold_new(ctl, q.pid, NULL, q.lease_ms * 1000000, &q.s, NULL, NULL, o);
		break;
	case WIRE_VERB_STOP:
		for (struct control_hold *h = ctl->holds, *next; h; h = next) {
			next = h->next;
			if (h->from_ctl && !h->ending && (!q.pid || h->pid == q.pid))
				hold_end(ctl, h, 0);
		}
		for (struct peer *pe = ctl->peers; pe; pe = pe->next) {
			if (q.pid && q.pid != pe->pid)
				continue;
			/* still held by another request (HTTP): say so */
			send_simple(ctl, pe, pe->holds ? WIRE_CTL_STATUS : WIRE_CTL_STOP,
				    !pe->holds, o);
		}
		break;
	case WIRE_VERB_FLUSH:
	case WIRE_VERB_STATUS:
		for (struct peer *pe = ctl->peers; pe; pe = pe->next)
			if (!q.pid || q.pid == pe->pid)
				send_simple(ctl, pe,
					    q.verb == WIRE_VERB_FLUSH
						    ? WIRE_CTL_FLUSH
						    : WIRE_CTL_STATUS,
					    0, o);
		break;
	}
	op_launch(ctl, o,
		  matched ? NULL
		  : q.verb == WIRE_VERB_START
			  ? "no process connected yet: the request covers "
			    "those that connect while it lasts"
		  : q.pid ? "no process with that pid is connected"
			  : "no process is connected");
	return 0;
}

/* ---- the connections' side ------------------------------------------------ */

static void hello_cb(void *ctx, struct conn *c)
{
	control_on_hello(ctx, c);
}

static int reply_cb(void *ctx, struct conn *c, unsigned type,
		    const uint8_t *p, size_t len)
{
	return control_on_reply(ctx, c, type, p, len);
}

static int request_cb(void *ctx, struct conn *c, const uint8_t *p,
		      size_t len)
{
	return control_on_request(ctx, c, p, len);
}

static void close_cb(void *ctx, struct conn *c)
{
	control_on_close(ctx, c);
}

static const struct conn_ctl_handlers handlers = {
	.on_hello = hello_cb,
	.on_reply = reply_cb,
	.on_request = request_cb,
	.on_close = close_cb,
};

void control_attach(struct control *ctl, struct conn *c)
{
	conn_set_ctl_handlers(c, &handlers, ctl);
}
