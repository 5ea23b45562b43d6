/*
 * conn.c - framing and decoding for one client connection (see conn.h).
 *
 * Layout of the read buffer: bytes [off, len) are received and not yet
 * consumed; whole frames are handled in place (no copy), and the tail of a
 * partial frame is moved to the front before the next read. A frame header
 * is checked as soon as its 4 bytes arrive, so an oversized length is
 * rejected without waiting for (or buffering) its payload.
 *
 * Decoding uses wire.h's cursor: each handler reads its fields, then
 * checks that the cursor is still ok (the payload did not end early) and
 * at the end (nothing left over), and only then applies the frame, so a
 * malformed frame changes nothing. SAMPLES is decoded twice, once to check
 * every record and once to add them; the second pass costs less than a
 * partly applied frame would in confusion. HELLO and BYE, the two frames
 * of tagged fields, are decoded by hello.c into structs. Each frame is
 * checked and applied by conn_frame.c (conn_on_frame); this file keeps
 * the connection: its buffer and framing, reading, acks and time-outs.
 *
 * Example: a SAMPLES frame with base_ns 1000 and one record (node 3,
 * thread 1, dt 5, count 1, value 10000000, flags 0):
 *
 *     07 0b 00 00        type 7, payload 11 bytes
 *     e8 07              base_ns 1000
 *     03 01 05 01        node 3, thread 1, dt_ns 5, count 1
 *     80 ad e2 04 00     value 10000000, flags 0
 */
#include "daemon/conn.h"
#include "daemon/conn_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/arith.h"
#include "common/log.h"
#include "common/pidring.h"
#include "daemon/decode.h"
#include "daemon/hello.h"
#include "common/loop.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

#define CONN_BUF_INIT (16u << 10) /* CONN_BUF_BUSY is conn.h's */
#define CONN_READS_PER_EVENT 4

/* Bytes waiting to go to the client (control frames): beyond this the
 * client is not reading, and conn_send refuses. */
#define CONN_OUT_MAX (256u << 10)


struct conn *conn_new(int fd, pid_t peer_pid, uid_t peer_uid,
		      struct procs *reg)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->buf = malloc(CONN_BUF_INIT);
	if (!c->buf) {
		free(c);
		return NULL;
	}
	c->cap = CONN_BUF_INIT;
	c->fd = fd;
	c->peer_pid = peer_pid;
	c->peer_uid = peer_uid;
	c->reg = reg;
	c->state = CONN_WANT_HELLO;
	c->hello_sampling = -1;
	c->born_ns = c->rx_ns = loop_now_ns();
	c->peer_start = conn_start_of(peer_pid);
	return c;
}

int conn_fd(const struct conn *c)
{
	return c->fd;
}

struct proc *conn_free(struct conn *c)
{
	struct proc *p = NULL;
	if (!c)
		return NULL;
	if (c->ctl)
		c->ctl->on_close(c->ctl_ctx, c);
	if (c->session) {
		log_info("pid %" PRIu64 " disconnected (%s): %" PRIu64
			 " samples, %" PRIu64 " lost",
			 c->pid, c->end_why ? c->end_why : "closed",
			 proc_session_samples(c->session),
			 proc_session_lost(c->session));
		p = proc_session_close(c->session);
	}
	close(c->fd);
	free(c->buf);
	free(c->obuf);
	free(c);
	return p;
}

void conn_set_ctl_handlers(struct conn *c, const struct conn_ctl_handlers *h,
			   void *ctx)
{
	c->ctl = h;
	c->ctl_ctx = ctx;
}

uint64_t conn_pid(const struct conn *c)
{
	return c->state == CONN_ACTIVE || c->state == CONN_AFTER_BYE
		       ? c->pid
		       : 0;
}

const char *conn_comm(const struct conn *c)
{
	return c->comm;
}

int conn_hello_sampling(const struct conn *c)
{
	return c->hello_sampling;
}

int conn_flush_out(struct conn *c)
{
	while (c->olen) {
		ssize_t n = send(c->fd, c->obuf, c->olen,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		memmove(c->obuf, c->obuf + n, c->olen - (size_t)n);
		c->olen -= (size_t)n;
	}
	return 0;
}

int conn_send(struct conn *c, const uint8_t *frame, size_t len)
{
	if (c->olen + len > CONN_OUT_MAX)
		return -ENOBUFS;
	if (!c->obuf) {
		c->obuf = malloc(CONN_OUT_MAX);
		if (!c->obuf)
			return -ENOMEM;
	}
	memcpy(c->obuf + c->olen, frame, len);
	c->olen += len;
	return conn_flush_out(c);
}

/* ---- reading and framing -------------------------------------------------- */

/* Handles every whole frame in the buffer. Returns 0, or -EPROTO (logged)
 * if one was malformed. */
static int parse_frames(struct conn *c)
{
	while (c->len - c->off >= WIRE_HDR_LEN) {
		unsigned type;
		size_t plen;
		int rc;

		wire_get_hdr(c->buf + c->off, &type, &plen);
		if (type == 0 || (type > WIRE_TYPE_MAX &&
				  (type < WIRE_CTL_FIRST ||
				   type > WIRE_CTL_LAST))) {
			conn_reject(c, "unknown frame type %u (header %02x %02x "
				       "%02x %02x)",
				    type, c->buf[c->off],
				    c->buf[c->off + 1], c->buf[c->off + 2],
				    c->buf[c->off + 3]);
			return -EPROTO;
		}
		if (plen > WIRE_MAX_PAYLOAD ||
		    (type >= WIRE_CTL_FIRST && plen > WIRE_MAX_CTL_PAYLOAD)) {
			conn_reject(c, "%s frame of %zu bytes, over the limit of %u",
				    conn_type_names[type], plen,
				    type >= WIRE_CTL_FIRST ? WIRE_MAX_CTL_PAYLOAD
							   : WIRE_MAX_PAYLOAD);
			return -EPROTO;
		}
		if (c->len - c->off < WIRE_HDR_LEN + plen)
			break;
		rc = conn_on_frame(c, type, c->buf + c->off + WIRE_HDR_LEN, plen);
		if (rc < 0)
			return rc;
		c->off += WIRE_HDR_LEN + plen;
	}
	return 0;
}

/* Makes room to read: moves the unconsumed tail to the front; grows the
 * buffer to the busy size when the last read filled it, and beyond that
 * only for a frame that does not fit, in steps of the busy size as its
 * bytes arrive (never to the length its header announces before they do:
 * a client that sends half of a 1 MiB frame holds about half of it). */
static int make_room(struct conn *c, int was_full)
{
	size_t want = c->cap;
	if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (was_full && want < CONN_BUF_BUSY)
		want = CONN_BUF_BUSY;
	if (c->len == c->cap && c->len >= WIRE_HDR_LEN) {
		unsigned type;
		size_t plen;
		wire_get_hdr(c->buf, &type, &plen);
		/* parse_frames has checked plen against the limit. */
		size_t frame = WIRE_HDR_LEN + plen;
		size_t next = c->cap + CONN_BUF_BUSY < frame
				      ? c->cap + CONN_BUF_BUSY
				      : frame;
		if (next > want)
			want = next;
	}
	if (want > c->cap) {
		uint8_t *b = realloc(c->buf, want);
		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = want;
	}
	return 0;
}

/* A buffer that grew for one big frame goes back to the busy size once
 * what it holds fits, so a long-lived client holds at most that between
 * big frames. */
static void shrink(struct conn *c)
{
	size_t left = c->len - c->off;
	if (c->cap <= CONN_BUF_BUSY || left > CONN_BUF_BUSY / 2)
		return;
	memmove(c->buf, c->buf + c->off, left);
	c->off = 0;
	c->len = left;
	uint8_t *b = realloc(c->buf, CONN_BUF_BUSY);
	if (b) {
		c->buf = b;
		c->cap = CONN_BUF_BUSY;
	}
}

/* The peer closed its end. A partial frame left over is a truncated
 * frame. */
static void on_eof(struct conn *c)
{
	size_t left = c->len - c->off;
	if (left > 0) {
		conn_reject(c, "connection closed in the middle of a frame (%zu "
			       "bytes of it received)",
			    left);
		c->end_why = "truncated frame";
		return;
	}
	/* Nothing sent at all: a probe (another collector checking whether
	 * the socket is in use, or a script waiting for it), not an error. */
	if (c->state == CONN_WANT_HELLO)
		log_debug("client pid %d connected and closed without sending "
			  "anything (a probe)",
			  (int)c->peer_pid);
	if (!c->end_why)
		c->end_why = c->state == CONN_AFTER_BYE ? "clean" : "EOF";
}

int conn_read(struct conn *c, int drain)
{
	size_t budget = SIZE_MAX, total = 0;
	int was_full = 0, queued;

	/* Draining takes what is queued now (and one read more, to see an
	 * end of stream), so a client that keeps sending cannot hold the
	 * collector's shutdown forever. */
	if (drain && ioctl(c->fd, FIONREAD, &queued) == 0 && queued >= 0)
		budget = (size_t)queued;
	for (int i = 0; drain ? total <= budget : i < CONN_READS_PER_EVENT;
	     i++) {
		ssize_t n;
		if (make_room(c, was_full) < 0) {
			log_error("pid %" PRIu64 ": out of memory for the "
				  "read buffer; closing connection",
				  c->pid);
			c->end_why = "out of memory";
			return 1;
		}
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			log_warn("pid %" PRIu64 ": read: %s; closing "
				 "connection",
				 c->session ? c->pid : (uint64_t)c->peer_pid, strerror(errno));
			c->end_why = "read error";
			return 1;
		}
		if (n == 0) {
			on_eof(c);
			return 1;
		}
		was_full = (size_t)n == c->cap - c->len;
		c->len += (size_t)n;
		total += (size_t)n;
		uint64_t frames_before = c->n_frames;
		c->rx_ns = loop_now_ns();
		if (parse_frames(c) < 0)
			return 1;
		if (c->off == c->len) {
			c->off = c->len = 0;
			c->frame_ns = 0;
		} else if (!c->frame_ns || c->n_frames != frames_before) {
			c->frame_ns = c->rx_ns; /* a new frame began */
		}
		shrink(c);
	}
	return 0;
}

/* ---- written samples ---------------------------------------------------- */

int conn_ack(struct conn *c)
{
	uint8_t frame[WIRE_HDR_LEN + 16];
	uint64_t n;
	int rc;

	if (!c->acks || !c->session || c->state != CONN_ACTIVE ||
	    !proc_session_to_ack(c->session, &n))
		return 0;
	rc = conn_send(c, frame, wire_ctl_written(frame, sizeof frame, n));
	if (rc >= 0)
		proc_session_acked(c->session, n);
	return rc;
}

int conn_ack_later(struct conn *c, uint64_t *n)
{
	if (!c->acks || !c->session || c->state != CONN_ACTIVE ||
	    c->olen > 0) /* a partial frame queued: nothing can follow */
		return -1;
	*n = proc_session_samples(c->session);
	return fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
}

void conn_ack_after(int fd, uint64_t n)
{
	uint8_t frame[WIRE_HDR_LEN + 16];
	if (fd < 0)
		return;
	/* A few bytes into a socket the library reads: they fit, or the
	 * library is not reading and would not see them anyway. */
	if (send(fd, frame, wire_ctl_written(frame, sizeof frame, n),
		 MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("CTL_WRITTEN at exit: %s", strerror(errno));
	close(fd);
}

/* ---- time-outs ---------------------------------------------------------- */

int conn_waits_hello(const struct conn *c)
{
	return c->state == CONN_WANT_HELLO;
}

uint64_t conn_born_ns(const struct conn *c)
{
	return c->born_ns;
}

pid_t conn_peer_pid(const struct conn *c)
{
	return c->peer_pid;
}

unsigned conn_peer_uid(const struct conn *c)
{
	return (unsigned)c->peer_uid;
}

size_t conn_buf_size(const struct conn *c)
{
	return c->cap;
}

int conn_expired(struct conn *c, uint64_t now_ns)
{
	const char *why = NULL;
	int queued = 0;
	size_t held = c->len - c->off;

	if (c->state == CONN_ACTIVE && conn_tied(c) && conn_held_by_another(c)) {
		/* What its process sent before it exited is taken in; then
		 * the connection ends with it (opener_gone). */
		(void)conn_read(c, 1);
		log_info("pid %" PRIu64 " (uid %u): its process has exited "
			 "but its connection stayed open; closing it",
			 c->pid,
			 (unsigned)c->peer_uid);
		c->end_why = "its process exited";
		return 1;
	}
	if (c->state == CONN_WANT_HELLO &&
	    now_ns - c->born_ns > CONN_HELLO_NS)
		why = "no HELLO";
	else if (c->frame_ns && now_ns - c->frame_ns > CONN_FRAME_NS)
		why = "frame incomplete";
	else if (c->frame_ns && c->cap > CONN_BUF_BUSY &&
		 now_ns - c->frame_ns > CONN_BIG_NS)
		why = "big frame too slow";
	/* Bytes waiting in the socket: the delay is ours (a long profile
	 * write), not the client's. */
	if (!why || (ioctl(c->fd, FIONREAD, &queued) == 0 && queued > 0))
		return 0;
	if (c->session)
		log_warn("pid %" PRIu64 ": %s (%zu bytes of a frame held, "
			 "nothing received for %" PRIu64 " ms); closing "
			 "connection",
			 c->pid, why, held,
			 (now_ns - c->rx_ns) / 1000000);
	else
		log_warn("client pid %d (uid %u): %s after %" PRIu64 " ms "
			 "(%zu bytes held); closing connection",
			 (int)c->peer_pid, (unsigned)c->peer_uid, why,
			 (now_ns - c->born_ns) / 1000000, held);
	c->end_why = "timed out";
	return 1;
}
