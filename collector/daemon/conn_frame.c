/*
 * conn_frame.c - each frame of a client connection checked and applied
 * (see conn.h): HELLO and BYE (decoded by hello.c) with the checks on
 * who the client says it is, the definitions and LABELS, the record
 * frames (SAMPLES, HEAP, HEAP_SNAPSHOT) decoded twice in batches, and
 * the control frames. A malformed frame changes nothing: each handler
 * decodes (decode.h), checks the cursor ended where the frame did, and
 * only then applies it.
 *
 * It also owns what tells who is at the other end: the opener's start
 * time, whether it has gone, whether another process holds its socket.
 *
 * Called by conn.c's framing (conn_on_frame, conn_impl.h) for each whole
 * frame, and by conn.c for the opener's checks; runs on the collector's
 * loop thread.
 */
#include "daemon/conn.h"
#include "daemon/conn_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/log.h"
#include "common/pidring.h"
#include "daemon/decode.h"
#include "daemon/hello.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

#define CONN_BATCH 256 /* SAMPLES records decoded per proc call */

const char *const conn_type_names[] = {
	[WIRE_HELLO] = "HELLO",
	[WIRE_STRING] = "STRING",
	[WIRE_FUNCTION] = "FUNCTION",
	[WIRE_LOCATION] = "LOCATION",
	[WIRE_NODE] = "NODE",
	[WIRE_THREAD] = "THREAD",
	[WIRE_SAMPLES] = "SAMPLES",
	[WIRE_LOST] = "LOST",
	[WIRE_BYE] = "BYE",
	[WIRE_MAPPING] = "MAPPING",
	[WIRE_ADDRESS] = "ADDRESS",
	[WIRE_CTL_REPLY] = "CTL_REPLY",
	[WIRE_CTL_STATE] = "CTL_STATE",
	[WIRE_CTL_REQUEST] = "CTL_REQUEST",
	[WIRE_HEAP] = "HEAP",
	[WIRE_HEAP_SNAPSHOT] = "HEAP_SNAPSHOT",
	[WIRE_LABELS] = "LABELS",
};

/* ---- the process that opened the connection ---------------------------- */

/* pid's start time (field 22 of /proc/PID/stat, clock ticks since boot):
 * with the pid, it names one process for good, where the pid alone is
 * reused. 0 if pid is gone, or a zombie (it has exited: only its parent
 * holds its number). */
uint64_t conn_start_of(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold anything but this */
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	p += 2; /* field 3, the state; the start time is field 22 */
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}

/* Whether the process that opened c (SO_PEERCRED's pid at accept) has
 * exited since: its pid now names no process or another one. A socket
 * outlives its opener when the opener passed it on (a fork child that
 * connects and exits, its parent keeping the descriptor): what arrives on
 * it then comes from someone else, who must not speak for that pid. */
static int opener_gone(const struct conn *c)
{
	return !c->peer_start || conn_start_of(c->peer_pid) != c->peer_start;
}

/* Whether every descriptor of the other end is closed (what it sent may
 * still wait to be read): a process that sent its HELLO and exited at
 * once, before the collector read it, left nobody behind to speak. */
static int peer_closed(const struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLRDHUP };
	return poll(&p, 1, 0) == 1 &&
	       (p.revents & (POLLRDHUP | POLLHUP)) != 0;
}

/* Whether someone other than the process that opened c holds its other
 * end: the opener has exited and the socket is still open. */
int conn_held_by_another(const struct conn *c)
{
	return opener_gone(c) && !peer_closed(c);
}

/* Whether c is tied to its opener: a client of another user
 * (--allow-user) speaks for its own process only, so its connection ends
 * with that process. */
int conn_tied(const struct conn *c)
{
	return c->peer_uid != geteuid() && c->peer_uid != 0;
}

/* One line for a connection that broke the protocol. */
void conn_reject(struct conn *c, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c->session)
		log_warn("pid %" PRIu64 ": protocol error: %s; closing "
			 "connection",
			 c->pid, why);
	else
		log_warn("client pid %d (uid %u): protocol error: %s; "
			 "closing connection",
			 (int)c->peer_pid,
			 (unsigned)c->peer_uid, why);
	c->end_why = "protocol error";
}

/* A decoder's verdict on a frame's fields (decode.h): too short, or
 * bytes left over after them. */
static int check_end(struct conn *c, const struct wire_in *r, unsigned type,
		     int rc)
{
	if (rc == DECODE_SHORT) {
		conn_reject(c, "%s frame: payload ends early or a field is "
			       "malformed",
			    conn_type_names[type]);
		return -EPROTO;
	}
	if (rc == DECODE_LEFTOVER) {
		conn_reject(c, "%s frame: %td bytes left over after its fields",
			    conn_type_names[type], r->end - r->p);
		return -EPROTO;
	}
	return 0;
}

/* A proc_* call failed: log its reason. */
static int proc_failed(struct conn *c, int rc, const char *err)
{
	if (rc == -ENOMEM) {
		log_error("pid %" PRIu64 ": %s; closing connection", c->pid,
			  err);
		c->end_why = "out of memory";
	} else {
		conn_reject(c, "%s", err);
	}
	return rc;
}

/* ---- HELLO and BYE (decoded by hello.c) ----------------------------------- */

static const char *mode_name(uint64_t mode)
{
	return mode == WIRE_MODE_WALL ? "wall" : "cpu";
}

static void log_connect(struct conn *c, const struct proc_hello *h,
			int resumed)
{
	char exe[256], pyv[64], comm[64];
	log_printable(exe, sizeof(exe), (const char *)h->exe.p, h->exe.len);
	log_printable(pyv, sizeof(pyv), (const char *)h->pyversion.p,
		      h->pyversion.len);
	log_printable(comm, sizeof(comm), (const char *)h->comm.p,
		      h->comm.len);
	log_info("pid %" PRIu64 " connected: %s (%s), Python %s, %s mode at "
		 "%" PRIu64 " Hz%s, parent %" PRIu64 "%s",
		 h->pid, exe[0] ? exe : "?", comm[0] ? comm : "?",
		 pyv[0] ? pyv : "?", mode_name(h->mode), hz_of(h->period_ns),
		 c->hello_sampling == 0 ? " (dormant)" : "", h->ppid,
		 resumed       ? ", reconnected: continuing its profile"
		 : h->conn_seq ? ", reconnected from another collector (or "
				 "after its profile so far was written): "
				 "what was neither written nor received here "
				 "will count as lost when it says BYE"
			       : "");
	if (h->achieved_ns && h->achieved_ns != h->period_ns)
		log_info("pid %" PRIu64 ": sampling rate asked %" PRIu64
			 " Hz, achieved %" PRIu64 " Hz",
			 h->pid, hz_of(h->period_ns), hz_of(h->achieved_ns));
	if (h->pid != (uint64_t)c->peer_pid)
		log_debug("pid %" PRIu64 ": the socket says pid %d (another "
			  "pid namespace?)",
			  h->pid, (int)c->peer_pid);
}

/* Peers refused for a claimed pid: each is logged at warn once, later
 * refusals at debug. Loop thread only. */
static struct pidring refused_pids;

/*
 * The HELLO's pid names the profile and is what control requests aim at.
 * A client of another user (--allow-user) speaks for itself only: its pid
 * must be the one the kernel gave us for the socket (SO_PEERCRED, in our
 * pid namespace), or it could pass its samples off as another process's
 * and take over that process's session. Our own user and root may send
 * another number: a process in a container's pid namespace knows only its
 * number there. 0, or -EPERM (logged, connection to close).
 */
static int check_claimed_pid(struct conn *c, uint64_t pid)
{
	if (!conn_tied(c))
		return 0;
	if (pid == (uint64_t)c->peer_pid && !conn_held_by_another(c))
		return 0;
	if (pid == (uint64_t)c->peer_pid)
		(pidring_seen(&refused_pids, c->peer_pid) ? log_debug
							  : log_warn)(
			"refused client pid %d (uid %u): the process that "
			"opened the connection has exited and another holds "
			"it; a connection of another user speaks only for "
			"the process that opened it",
			(int)c->peer_pid,
			(unsigned)c->peer_uid);
	else
		(pidring_seen(&refused_pids, c->peer_pid) ? log_debug
							  : log_warn)(
			"refused client pid %d (uid %u): its HELLO claims pid "
			"%" PRIu64 "; a client of another user must send its "
			"own pid (one in another pid namespace cannot be "
			"served)",
			(int)c->peer_pid, (unsigned)c->peer_uid,
			pid);
	c->end_why = "refused";
	return -EPERM;
}

/* One pid, one live connection: a connection that owns another process
 * with c's pid and whose opener has exited is stale (that pid was
 * reused, by c's process). It is shut down here and closed by the loop
 * as at any end of file. */
static void end_stale_owner(void *arg, void *owner)
{
	struct conn *c = arg, *o = owner;
	if (o == c || !conn_held_by_another(o))
		return;
	log_warn("pid %" PRIu64 ": an older connection (opened by uid %u) "
		 "spoke for this pid after its process had exited; closing "
		 "it",
		 c->pid, (unsigned)o->peer_uid);
	o->end_why = "its process exited; pid reused";
	shutdown(o->fd, SHUT_RDWR);
}

/* A process that is not profiled says why (wire.h, WIRE_H_REFUSED): no
 * session; it is logged and counted, and nothing may follow. */
static void on_refused(struct conn *c, const struct proc_hello *h,
		       const uint8_t *why, size_t why_len)
{
	char text[PROCS_REFUSED_LEN], exe[256], comm[64];

	log_printable(text, sizeof(text), (const char *)why, why_len);
	log_printable(exe, sizeof(exe), (const char *)h->exe.p, h->exe.len);
	log_printable(comm, sizeof(comm), (const char *)h->comm.p,
		      h->comm.len);
	log_info("pid %" PRIu64 " (%s, %s) is not profiled: %s", h->pid,
		 exe[0] ? exe : "?", comm[0] ? comm : "?",
		 text[0] ? text : "no reason given");
	procs_note_refused(c->reg, text[0] ? text : "no reason given");
	c->pid = h->pid;
	c->state = CONN_REFUSED;
	c->end_why = "not profiled";
}

static int on_hello(struct conn *c, struct wire_in *r)
{
	struct hello hl;
	char err[ERR_LEN];
	int resumed, rc;

	if (c->state != CONN_WANT_HELLO) {
		conn_reject(c, "second HELLO on one connection");
		return -EPROTO;
	}
	rc = hello_decode(r->p, (size_t)(r->end - r->p), &hl, err);
	if (hl.sampling >= 0)
		c->hello_sampling = hl.sampling; /* for control.c */
	if (rc == -ENOMEM)
		log_error("client pid %d: out of memory", (int)c->peer_pid);
	else if (rc < 0)
		conn_reject(c, "%s", err);
	if (rc < 0 || (rc = check_claimed_pid(c, hl.h.pid)) < 0)
		goto out;
	if (hl.refused) {
		on_refused(c, &hl.h, hl.refused_why.p, hl.refused_why.len);
		goto out;
	}
	rc = proc_session_open(c->reg, &hl.h, &c->session, &resumed, err);
	if (rc < 0) {
		log_error("client pid %d: %s", (int)c->peer_pid, err);
		goto out;
	}
	proc_session_set_owner(c->session, c);
	proc_session_set_uid(c->session, (unsigned)c->peer_uid);
	c->acks = hl.h.has_written;
	c->pid = hl.h.pid;
	procs_each_owner(c->reg, hl.h.pid, proc_session_proc(c->session),
			 end_stale_owner, c);
	c->state = CONN_ACTIVE;
	log_printable(c->comm, sizeof(c->comm), (const char *)hl.h.comm.p,
		      hl.h.comm.len);
	log_connect(c, &hl.h, resumed);
	if (c->ctl) /* a request running now covers it too */
		c->ctl->on_hello(c->ctl_ctx, c);
out:
	hello_free(&hl);
	return rc;
}

static int on_bye(struct conn *c, struct wire_in *r)
{
	struct proc_bye b;
	if (bye_decode(r->p, (size_t)(r->end - r->p), &b) < 0) {
		return check_end(c, r, WIRE_BYE, DECODE_SHORT);
	}
	proc_set_bye(c->session, &b);
	c->state = CONN_AFTER_BYE;
	log_debug("pid %" PRIu64 ": BYE: %" PRIu64 " samples taken, %" PRIu64
		  " lost, %" PRIu64 " faulted reads, handler %" PRIu64
		  " ns in %" PRIu64 " runs",
		  c->pid, b.samples, b.lost,
		  b.faults, b.handler_ns, b.handler_n);
	return 0;
}

/* ---- definitions and data ---------------------------------------------- */

static int on_def(struct conn *c, struct wire_in *r, unsigned type)
{
	char err[ERR_LEN];
	int rc;

	switch (type) {
	case WIRE_STRING: {
		struct wire_string f;
		if ((rc = decode_string(r, &f)) == DECODE_SHORT) {
			conn_reject(c, "STRING frame: payload ends early or the "
				       "string is longer than %d bytes",
				    WIRE_MAX_STRING);
			return -EPROTO;
		}
		if ((rc = check_end(c, r, type, rc)) < 0)
			return rc;
		rc = proc_def_string(c->session, f.id, f.s, f.len, err);
		break;
	}
	case WIRE_FUNCTION: {
		struct wire_function f;
		if ((rc = check_end(c, r, type, decode_function(r, &f))) < 0)
			return rc;
		rc = proc_def_function(c->session, f.id, f.name, f.system_name,
				       f.filename, f.start_line, err);
		break;
	}
	case WIRE_LOCATION: {
		struct wire_location f;
		if ((rc = check_end(c, r, type, decode_location(r, &f))) < 0)
			return rc;
		rc = proc_def_location(c->session, f.id, f.function, f.line,
				       err);
		break;
	}
	case WIRE_NODE: {
		struct wire_node f;
		if ((rc = check_end(c, r, type, decode_node(r, &f))) < 0)
			return rc;
		rc = proc_def_node(c->session, f.id, f.parent, f.location, err);
		break;
	}
	case WIRE_THREAD: {
		struct wire_thread f;
		if ((rc = check_end(c, r, type, decode_thread(r, &f))) < 0)
			return rc;
		rc = proc_def_thread(c->session, f.ref, f.tid, f.name, err);
		break;
	}
	case WIRE_LOST: {
		struct wire_lost f;
		if ((rc = check_end(c, r, type, decode_lost(r, &f))) < 0)
			return rc;
		rc = proc_add_lost(c->session, f.reason, f.samples, f.value,
				   err);
		break;
	}
	case WIRE_MAPPING: {
		struct wire_mapping f;
		if ((rc = check_end(c, r, type, decode_mapping(r, &f))) < 0)
			return rc;
		rc = proc_def_mapping(c->session, f.id, f.start, f.limit,
				      f.offset, f.filename, f.build_id,
				      f.build_id_len, err);
		break;
	}
	case WIRE_ADDRESS: {
		struct wire_address f;
		if ((rc = check_end(c, r, type, decode_address(r, &f))) < 0)
			return rc;
		rc = proc_def_address(c->session, f.id, f.mapping, f.address,
				      err);
		break;
	}
	default:
		return -EPROTO; /* not reached: the caller filters types */
	}
	return rc < 0 ? proc_failed(c, rc, err) : 0;
}

/* LABELS: an id, then (key, value) string ids until the payload ends;
 * proc_def_labels checks what they name. */
static int on_labels(struct conn *c, struct wire_in *r)
{
	char err[ERR_LEN];
	uint64_t kv[2 * WIRE_MAX_LABELS];
	struct wire_labels f;
	int rc = decode_labels(r, &f, kv);

	if (rc == DECODE_TOO_MANY) {
		conn_reject(c, "LABELS frame: more than %u pairs", WIRE_MAX_LABELS);
		return -EPROTO;
	}
	if ((rc = check_end(c, r, WIRE_LABELS, rc)) < 0)
		return rc;
	rc = proc_def_labels(c->session, f.id, kv, f.n_pairs, err);
	return rc < 0 ? proc_failed(c, rc, err) : 0;
}

/* ---- record frames: SAMPLES and HEAP ------------------------------------ */

/* A batch of decoded records of one kind. */
union batch {
	struct proc_sample samples[CONN_BATCH];
	struct proc_heap_rec heap[CONN_BATCH];
};

/* Decodes up to CONN_BATCH records from r into recs; *n gets how many.
 * Returns -EPROTO if a record is cut short. */
static int decode_samples(struct wire_in *r, union batch *b, size_t *n)
{
	size_t i = 0;
	int rc = 0;
	while (i < CONN_BATCH && !wire_at_end(r) && rc == 0) {
		struct wire_sample f;
		rc = decode_sample(r, &f);
		b->samples[i++] = (struct proc_sample){
			f.node, f.thread, f.dt_ns, f.count,
			f.value, f.flags, f.opcode, f.labels
		};
	}
	*n = i;
	return rc == 0 ? 0 : -EPROTO;
}

/* Control frames (conn_set_ctl_handlers): a controller's one request, or a
 * library's reply or state change. */
/* What a reply or state says of the process's sampling. */
struct ctl_state {
	uint64_t sampling, period_ns, since_ns;
};

static void ctl_state_field(void *ctx, uint64_t tag, uint64_t v)
{
	struct ctl_state *st = ctx;
	if (tag == WIRE_C_SAMPLING)
		st->sampling = v;
	else if (tag == WIRE_C_PERIOD_NS)
		st->period_ns = v;
	else if (tag == WIRE_C_SINCE_NS)
		st->since_ns = v;
}

static int on_ctl(struct conn *c, unsigned type, const uint8_t *payload,
		  size_t len)
{
	if (!c->ctl) {
		conn_reject(c, "%s frame: this collector takes no control frames",
			    conn_type_names[type]);
		return -EPROTO;
	}
	if (type == WIRE_CTL_REQUEST) {
		if (c->state != CONN_WANT_HELLO) {
			conn_reject(c, "CTL_REQUEST after HELLO");
			return -EPROTO;
		}
		/* Switching sampling on in other processes: the
		 * collector's own user (or root) only, even where
		 * --allow-user lets others send samples. */
		if (c->peer_uid != geteuid() && c->peer_uid != 0) {
			log_warn("client pid %d (uid %u): control requests "
				 "are taken from uid %u only; closing "
				 "connection",
				 (int)c->peer_pid,
				 (unsigned)c->peer_uid, (unsigned)geteuid());
			c->end_why = "refused";
			return -EPERM;
		}
		c->state = CONN_CONTROLLER;
		if (c->ctl->on_request(c->ctl_ctx, c, payload, len) < 0) {
			conn_reject(c, "CTL_REQUEST frame: malformed fields");
			return -EPROTO;
		}
		return 0;
	}
	if (c->state != CONN_ACTIVE) {
		conn_reject(c, "%s frame %s", conn_type_names[type],
			    c->state == CONN_WANT_HELLO ? "before HELLO"
			    : c->state == CONN_REFUSED	? "from a process that is "
							  "not profiled"
							: "after BYE");
		return -EPROTO;
	}
	if (c->ctl->on_reply(c->ctl_ctx, c, type, payload, len) < 0) {
		conn_reject(c, "%s frame: malformed fields", conn_type_names[type]);
		return -EPROTO;
	}
	/* its profile's period and time: what it samples at, and since when
	 * (proc.h); the fields were checked just above */
	struct ctl_state st = { 0, 0, 0 };
	if (c->session &&
	    wire_fields_varints(payload, len, WIRE_MAX_CTL_PAYLOAD,
				ctl_state_field, &st) == 0)
		proc_session_sampling(c->session, st.sampling != 0,
				      st.period_ns, st.since_ns,
				      c->hello_sampling == 0);
	return 0;
}

/* Decodes up to CONN_BATCH HEAP records (wire.h) from r. -EPROTO if one
 * is cut short. */
static int decode_heap(struct wire_in *r, union batch *b, size_t *n)
{
	size_t i = 0;
	int rc = 0;
	while (i < CONN_BATCH && !wire_at_end(r) && rc == 0) {
		struct wire_heap_rec f;
		rc = decode_heap_rec(r, &f);
		struct proc_heap_rec *h = &b->heap[i++];
		h->kind = f.kind;
		h->node = f.node;
		h->thread = f.thread;
		h->size = f.size;
		h->addr = f.addr;
		h->labels = f.labels;
		h->n = f.n;
		h->bytes = f.bytes;
		if (f.kind < WIRE_HEAP_ALLOC || f.kind > WIRE_HEAP_ALLOC_LABELS)
			break; /* proc_check_heap names it */
	}
	*n = i;
	return rc == 0 ? 0 : -EPROTO;
}

static int check_samples(const struct proc_session *s, const union batch *b,
			 size_t n, uint64_t index, char *err)
{
	return proc_check_samples(s, b->samples, n, index, err);
}

static int add_samples(struct proc_session *s, uint64_t *base,
		       const union batch *b, size_t n, char *err)
{
	return proc_add_samples(s, base, b->samples, n, err);
}

static int check_heap(const struct proc_session *s, const union batch *b,
		      size_t n, uint64_t index, char *err)
{
	return proc_check_heap(s, b->heap, n, index, err);
}

static int add_heap(struct proc_session *s, uint64_t *rate,
		    const union batch *b, size_t n, char *err)
{
	return proc_add_heap(s, *rate, b->heap, n, err);
}

/* A frame of records after one leading varint, and its proc.h steps. */
struct record_frame {
	const char *name; /* in log lines: "SAMPLES" */
	const char *lead; /* the leading field: "base_ns" */
	int (*decode)(struct wire_in *r, union batch *b, size_t *n);
	int (*check)(const struct proc_session *s, const union batch *b,
		     size_t n, uint64_t index, char *err);
	int (*add)(struct proc_session *s, uint64_t *lead,
		   const union batch *b, size_t n, char *err);
};

static const struct record_frame samples_frame = {
	"SAMPLES", "base_ns", decode_samples, check_samples, add_samples
};
static const struct record_frame heap_frame = {
	"HEAP", "rate", decode_heap, check_heap, add_heap
};

/* SAMPLES and HEAP: decoded twice, in batches of CONN_BATCH records;
 * every record is checked before any is applied. */
static int on_records(struct conn *c, struct wire_in *r,
		      const struct record_frame *k)
{
	union batch recs;
	char err[ERR_LEN];
	struct wire_in start;
	uint64_t lead, index = 0;
	size_t n;
	int rc;

	if (decode_lead(r, &lead) < 0) {
		conn_reject(c, "%s frame: no %s", k->name, k->lead);
		return -EPROTO;
	}
	start = *r;
	/* Pass 1: every record must decode and be valid. */
	while (!wire_at_end(r)) {
		if (k->decode(r, &recs, &n) < 0) {
			conn_reject(c, "%s record %" PRIu64 ": cut short or "
				       "malformed",
				    k->name,
				    index + (n ? n - 1 : 0));
			return -EPROTO;
		}
		rc = k->check(c->session, &recs, n, index, err);
		if (rc < 0)
			return proc_failed(c, rc, err);
		index += n;
	}
	/* Pass 2: add them. */
	*r = start;
	while (!wire_at_end(r)) {
		k->decode(r, &recs, &n);
		rc = k->add(c->session, &lead, &recs, n, err);
		if (rc < 0)
			return proc_failed(c, rc, err);
	}
	return 0;
}

static int on_heap_snapshot(struct conn *c, struct wire_in *r)
{
	char err[ERR_LEN];
	struct wire_heap_snapshot f;
	int rc = check_end(c, r, WIRE_HEAP_SNAPSHOT,
			   decode_heap_snapshot(r, &f));
	if (rc < 0)
		return rc;
	rc = proc_heap_snapshot(c->session, f.seq, err);
	return rc < 0 ? proc_failed(c, rc, err) : 0;
}

int conn_on_frame(struct conn *c, unsigned type, const uint8_t *payload,
		  size_t len)
{
	struct wire_in r = { payload, payload + len, 1 };

	c->n_frames++;
	if (c->state == CONN_CONTROLLER) {
		conn_reject(c, "%s frame after CTL_REQUEST", conn_type_names[type]);
		return -EPROTO;
	}
	if (type >= WIRE_CTL_FIRST && type <= WIRE_CTL_LAST)
		return on_ctl(c, type, payload, len);
	if (type == WIRE_HELLO)
		return on_hello(c, &r);
	if (c->state == CONN_WANT_HELLO) {
		conn_reject(c, "%s frame before HELLO", conn_type_names[type]);
		return -EPROTO;
	}
	if (c->state == CONN_AFTER_BYE) {
		conn_reject(c, "%s frame after BYE", conn_type_names[type]);
		return -EPROTO;
	}
	if (c->state == CONN_REFUSED) {
		conn_reject(c, "%s frame after a HELLO saying the process is not "
			       "profiled",
			    conn_type_names[type]);
		return -EPROTO;
	}
	switch (type) {
	case WIRE_SAMPLES:
		return on_records(c, &r, &samples_frame);
	case WIRE_BYE:
		return on_bye(c, &r);
	case WIRE_HEAP:
		return on_records(c, &r, &heap_frame);
	case WIRE_HEAP_SNAPSHOT:
		return on_heap_snapshot(c, &r);
	case WIRE_LABELS:
		return on_labels(c, &r);
	default:
		return on_def(c, &r, type);
	}
}
