/*
 * conn_impl.h - a client connection's struct, private to conn.c (the
 * connection: buffer, framing, reading, acks, time-outs) and conn_frame.c
 * (each frame checked and applied). Nothing else includes it: the rest of
 * the collector goes through conn.h, which its includers include first
 * (were it included here, the include check would see a cycle, as for
 * proc_impl.h).
 *
 * conn.c calls into conn_frame.c, never the other way (the link check
 * would see a cycle).
 *
 * Runs on the collector's loop thread.
 */
#ifndef PYPROF_CONN_IMPL_H
#define PYPROF_CONN_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procs;
struct proc_session;

enum conn_state {
	CONN_WANT_HELLO,
	CONN_ACTIVE,
	CONN_AFTER_BYE,
	CONN_CONTROLLER, /* sent CTL_REQUEST instead of HELLO (pyprof ctl) */
	CONN_REFUSED	 /* its HELLO said the process is not profiled: no
			   frame may follow (wire.h, WIRE_H_REFUSED) */
};

struct conn {
	int fd;
	pid_t peer_pid;
	uid_t peer_uid;
	enum conn_state state;
	struct procs *reg;
	struct proc_session *session;
	uint64_t pid; /* from HELLO, for log lines */
	uint8_t *buf;
	size_t off, len, cap;
	const char *end_why; /* for the disconnect line */
	uint64_t n_frames;
	const struct conn_ctl_handlers *ctl; /* NULL: control frames are
						refused */
	void *ctl_ctx;			     /* the handlers' first argument */
	char comm[64];			     /* from HELLO, for control answers */
	int hello_sampling;		     /* HELLO's SAMPLING, -1 if not sent */
	int acks;			     /* HELLO had WRITTEN: it takes CTL_WRITTEN */
	uint8_t *obuf;			     /* conn_send's bytes not yet written */
	size_t olen;
	uint64_t born_ns;    /* CLOCK_MONOTONIC at conn_new */
	uint64_t rx_ns;	     /* ... of the last byte received */
	uint64_t frame_ns;   /* ... when the incomplete frame in buf began
				  to arrive; 0: none */
	uint64_t peer_start; /* the opener's start time (/proc stat), 0 if
				  it was gone at accept (opener_gone) */
};

/* Each frame type's name for log lines, indexed by type (wire.h: every
 * type parse_frames lets through has one). conn_frame.c. */
extern const char *const conn_type_names[];

/* One line for a connection that broke the protocol (at warn), and
 * "protocol error" as its end. conn_frame.c. */
void conn_reject(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* pid's start time (field 22 of /proc/PID/stat, clock ticks since boot),
 * 0 if pid is gone or a zombie. conn_frame.c. */
uint64_t conn_start_of(pid_t pid);

/* Whether someone other than the process that opened c holds its other
 * end: the opener has exited and the socket is still open.
 * conn_frame.c. */
int conn_held_by_another(const struct conn *c);

/* Whether c is tied to its opener: a client of another user
 * (--allow-user) speaks for its own process only, so its connection ends
 * with that process. conn_frame.c. */
int conn_tied(const struct conn *c);

/* Checks and applies one whole frame of c (type, its payload): 0, or a
 * negative errno after which c is closed (-EPROTO logged by
 * conn_reject, -ENOMEM logged). conn_frame.c. */
int conn_on_frame(struct conn *c, unsigned type, const uint8_t *payload,
		  size_t len);

#endif
