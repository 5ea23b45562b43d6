/*
 * conn.h - one client connection: its socket, read buffer, framing and
 * decoding of every frame (wire.h), and its session in proc.h.
 *
 * The collector (collector.c) accepts a client, checks its credentials and
 * hands the socket to conn_new. On each readable event it calls
 * conn_read; that reads a bounded amount (so a fast client cannot starve
 * the others), cuts the bytes into frames, decodes each one strictly and
 * applies it through proc.h. The first malformed frame ends the
 * connection: conn logs one line naming the client's pid and the reason,
 * and the data accepted before it stays in the process's aggregate.
 *
 * Per connection memory: the read buffer, 16 KiB growing to 256 KiB for a
 * busy client and, while a bigger frame arrives, with its bytes up to that
 * frame (at most 4 + 1 MiB), plus its id maps (proc.h limits what it may
 * define). A client cannot hold that memory by sending nothing: the
 * collector calls conn_expired every second, which ends a connection
 * without HELLO after CONN_HELLO_NS, one with a frame incomplete for
 * CONN_FRAME_NS, and one whose incomplete frame needed a buffer larger
 * than CONN_BUF_BUSY and is not whole CONN_BIG_NS after its first byte
 * (trickling a byte a second does not keep a megabyte held). The library
 * sends whole frames at once, none larger than about CONN_BUF_BUSY, so
 * none of these happens to it unless its process is stopped mid-send; it
 * then reconnects and sends the frame again.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_CONN_H
#define PYPROF_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct conn;
struct procs;
struct proc;

/* A connection on the non-blocking socket fd (taken over: conn_free closes
 * it) from a client whose credentials were peer_pid/peer_uid, feeding reg.
 * NULL on ENOMEM (fd is then still the caller's). */
struct conn *conn_new(int fd, pid_t peer_pid, uid_t peer_uid,
		      struct procs *reg);

/* Reads and applies what the socket has. With drain == 0 it stops after a
 * fair share (a few reads) and relies on the loop calling it again; with
 * drain != 0 it reads what was queued when called, until the socket
 * would block (used at shutdown).
 * Returns 0 while the connection stays open, 1 once it is over (end of
 * stream, read error or protocol error; already logged): then the caller
 * calls conn_free. */
int conn_read(struct conn *c, int drain);

/* Closes the socket, logs the disconnect line for a client that had said
 * HELLO, ends its session and frees c. Returns the client's process if no
 * other connection holds it (for the caller to write or keep), else NULL.
 * NULL c is fine. */
struct proc *conn_free(struct conn *c);

int conn_fd(const struct conn *c);

/* Time-outs (see the top): HELLO within 10 s of connecting, a frame
 * whole within 30 s of its first byte, and within 2 s if it needs more
 * than the busy buffer. */
#define CONN_HELLO_NS (10 * 1000000000ull)
#define CONN_FRAME_NS (30 * 1000000000ull)
#define CONN_BIG_NS (2 * 1000000000ull)
#define CONN_BUF_BUSY (256u << 10)
/* Whether c broke a time-out at now_ns (loop_now_ns's clock); if so, logs
 * why and returns 1: the caller then calls conn_free. Bytes waiting
 * unread in the socket excuse everything (the wait was the collector's). */
int conn_expired(struct conn *c, uint64_t now_ns);
/* Whether c has said neither HELLO nor CTL_REQUEST yet. */
int conn_waits_hello(const struct conn *c);
/* loop_now_ns() at conn_new. */
uint64_t conn_born_ns(const struct conn *c);
/* The client's uid (SO_PEERCRED at accept). */
unsigned conn_peer_uid(const struct conn *c);
/* The client's pid as the kernel gave it at accept (0: not in our pid
 * namespace). */
pid_t conn_peer_pid(const struct conn *c);
/* Bytes of read buffer it holds now. */
size_t conn_buf_size(const struct conn *c);

/* Control frames. A connection does not know who switches sampling: with
 * handlers set (control.h's control_attach sets its own) it takes a
 * controller's CTL_REQUEST (only from the collector's own uid or root)
 * and a library's CTL_REPLY / CTL_STATE and hands them over, and it says
 * when a library said HELLO and when the connection ends. Without
 * handlers (the default) control frames are a protocol error. Each
 * handler gets the ctx given with them; on_reply and on_request return 0,
 * or -EPROTO for a malformed payload (the connection then ends). */
struct conn_ctl_handlers {
	void (*on_hello)(void *ctx, struct conn *c);
	int (*on_reply)(void *ctx, struct conn *c, unsigned type,
			const uint8_t *p, size_t len);
	int (*on_request)(void *ctx, struct conn *c, const uint8_t *p,
			  size_t len);
	void (*on_close)(void *ctx, struct conn *c);
};
void conn_set_ctl_handlers(struct conn *c, const struct conn_ctl_handlers *h,
			   void *ctx);
/* The library's pid from HELLO; 0 before HELLO and for a controller. */
uint64_t conn_pid(const struct conn *c);
/* Its process name from HELLO ("" if none), printable. */
const char *conn_comm(const struct conn *c);
/* Whether it sampled as it connected (HELLO's SAMPLING), -1 if unsaid. */
int conn_hello_sampling(const struct conn *c);
/* Queues a whole frame to the client and writes what the socket takes.
 * Returns 0 when everything queued is written, 1 when some waits (the
 * caller watches EPOLLOUT and calls conn_flush_out), -ENOBUFS when the
 * client has CONN_OUT_MAX bytes waiting already (the frame is dropped),
 * or another -errno (the connection is broken; its reads will say so). */
int conn_send(struct conn *c, const uint8_t *frame, size_t len);
int conn_flush_out(struct conn *c);

/* Tells a library that takes them (HELLO's WRITTEN) how many of the
 * samples it sent on this connection are in a written profile, if that
 * grew (proc.h's proc_mark_written): one CTL_WRITTEN frame. Returns
 * conn_send's result (1: the caller watches EPOLLOUT), or 0 when there
 * was nothing to say. A frame refused (-ENOBUFS) is tried again by the
 * next call. */
int conn_ack(struct conn *c);
/* At exit the collector closes every connection before it writes the
 * last profiles (proc.h's sessions must be closed first), so the last
 * CTL_WRITTEN has to outlive the connection: conn_ack_later returns a
 * duplicate of c's socket (close-on-exec) and in *n the samples received
 * on it, or -1 when c takes no CTL_WRITTEN (or has a frame half sent);
 * once those profiles are written, conn_ack_after sends CTL_WRITTEN n on
 * fd, without waiting, and closes fd (-1 is fine). */
int conn_ack_later(struct conn *c, uint64_t *n);
void conn_ack_after(int fd, uint64_t n);

#endif /* PYPROF_CONN_H */
