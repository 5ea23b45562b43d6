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
 * busy client and to the largest frame it sends (at most 4 + 1 MiB), plus
 * its id maps (proc.h limits what it may define).
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_CONN_H
#define PYPROF_CONN_H

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

/* Control (control.h). With ctl set, the connection takes control frames:
 * a controller's CTL_REQUEST (only from the collector's own uid or root)
 * and a library's CTL_REPLY / CTL_STATE, handed to ctl; and it tells ctl
 * when a library said HELLO and when the connection ends. Without it
 * (NULL, the default) control frames are a protocol error. */
struct control;
void conn_set_control(struct conn *c, struct control *ctl);
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

#endif /* PYPROF_CONN_H */
