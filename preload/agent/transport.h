/*
 * transport.h - the agent's connection to the collector, and its buffer.
 *
 * The buffer holds bytes for the current connection: HELLO and definition
 * frames (which belong to one connection and are regenerated for the next)
 * and data frames (SAMPLES, LOST, BYE), which must survive a reconnect. The
 * buffer marks where each data frame starts; when the connection breaks,
 * every data frame not fully sent is kept (whole: the collector discards a
 * partial frame) and everything else is dropped. On the next connection the
 * agent sends HELLO, replays every definition from id 1, then the kept
 * data. Data waiting while no collector listens is capped
 * (TRANSPORT_DATA_CAP); beyond it the caller drops samples and counts them.
 *
 * Sockets are non-blocking and sends use MSG_NOSIGNAL: no application
 * thread ever waits on the collector, and a vanished collector raises no
 * SIGPIPE. Reconnects back off from 50 ms to 1 s.
 *
 * Who may hear us: before anything is sent on a new connection, the
 * socket's directory must be a real directory (lstat: not a symbolic
 * link) owned by us, root or the one collector user trusted besides
 * (PYPROF_COLLECTOR_USER), not writable by others unless sticky (as
 * /tmp), and the listening peer (SO_PEERCRED) must be one of those users
 * too. Otherwise another local user who sits at the path (a pre-created
 * /tmp/pyprof-<uid>/) would receive the command line and code names and
 * could switch sampling on. A socket that fails is refused for good: one
 * line on stderr, nothing kept, no more attempts. A directory that does
 * not exist yet is only a collector not started yet: we keep trying.
 *
 * Agent thread only.
 */
#ifndef PYPROF_TRANSPORT_H
#define PYPROF_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/fdutil.h"

#include "base/intern.h"
#include "pyprof/wire.h"

#define TRANSPORT_DATA_CAP (16u << 20)
#define TRANSPORT_PATH_CAP 108 /* sun_path */

struct transport {
	char path[TRANSPORT_PATH_CAP];
	long trust_uid;	      /* a collector user trusted besides us
	                           and root, -1 none                      */
	int refused;	      /* the socket failed the checks above:
	                           never connect again                    */
	int fd;		      /* -1 when not connected                 */
	struct fd_id id;      /* what fd named when we opened it       */
	uint32_t conn_seq;    /* connections made so far               */
	uint64_t next_try_ns; /* CLOCK_MONOTONIC of the next attempt   */
	uint64_t backoff_ns;

	/* an unconnected socket made by transport_prepare, high, or -1 */
	int spare;
	struct fd_id spare_id;

	uint8_t *buf; /* pending bytes [off, len)              */
	size_t len, off, cap;
	struct tmark {
		size_t start, len;
	} * marks; /* data frames in buf */
	size_t n_marks, cap_marks, first_mark;
	size_t data_bytes; /* bytes of data frames in buf           */

	uint32_t sent[7];    /* definitions sent on this connection:
	                           strings, funcs, locs, nodes, threads,
	                           mappings, label sets                   */
	uint32_t thread_gen; /* renames to resend                     */

	/* frames from the collector (control.h), whole ones handed to
	 * on_frame as they arrive; a partial one waits here */
	void (*on_frame)(unsigned type, const uint8_t *p, size_t len,
			 void *arg);
	void *frame_arg;
	uint8_t rbuf[WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD];
	size_t rlen;
};

/* The checks above, for transport_connect and for refuse.c's one HELLO.
 * transport_check_dir: 0 when path's directory is safe; -EPERM with the
 * reason in why when it is not; another -errno (no such directory yet)
 * to try later. transport_check_peer: 0 when the collector listening on
 * the connected fd runs as a trusted user; -EPERM with the reason in why;
 * another -errno to try later. trust_uid as below. */
int transport_check_dir(const char *path, long trust_uid, char *why,
			size_t cap);
int transport_check_peer(int fd, long trust_uid, char *why, size_t cap);

/* trust_uid: a uid whose collector is trusted besides ours and root's,
 * or -1. */
void transport_init(struct transport *t, const char *path, long trust_uid);
void transport_fini(struct transport *t);

/* Makes the socket the next connection will use, parked high (fdutil.h),
 * if there is none: called before the agent's thread starts (the
 * constructor, a fork child before fork returns), when no code of the
 * program runs beside it. socket() takes the lowest free number for a
 * moment; made later, on the agent's thread, that moment fell inside the
 * program's start-up, where a program listing its descriptors saw it
 * (test_subprocess's test_pass_fds on 3.15: "fd to be closed passed",
 * one run in about ten). A failed connect keeps the socket for the next
 * try; only a reconnection after a connection ends makes a new one on
 * the agent's thread. */
void transport_prepare(struct transport *t);

/* Tries to connect if it is time. hello(buf, cap, conn_seq) writes the
 * HELLO frame and returns its length (0 on failure). Returns 1 when a new
 * connection was made, else 0; -EPERM (once) when the socket fails the
 * checks above: the line is printed, everything queued is dropped, and
 * from then on nothing is queued or sent (t->refused). */
int transport_connect(struct transport *t, uint64_t now_ns,
		      size_t (*hello)(uint8_t *buf, size_t cap, uint32_t seq,
				      void *arg),
		      void *arg, const struct intern *in);

/* Appends frames for definitions made since the last call (connected
 * only; when disconnected they wait for the replay). 0 or -ENOMEM. */
int transport_put_defs(struct transport *t, const struct intern *in);

/* Marks one thread's definition for resending (it was renamed). */
int transport_put_thread(struct transport *t, const struct intern *in,
			 uint32_t ref);

/* Appends one whole data frame (header included). -ENOSPC when the data
 * cap is reached (the frame is not queued), -ENOMEM. Refused: dropped,
 * 0. */
int transport_put_data(struct transport *t, const uint8_t *frame,
		       size_t len);

/* Ends the data frame of type that w wrote after the header's room at
 * frame (wire_end_frame) and appends it as transport_put_data does; with
 * in, after the definitions it may refer to (transport_put_defs). */
int transport_put_frame(struct transport *t, const struct intern *in,
			uint8_t *frame, const struct wire_out *w,
			unsigned type);

/* The fields every HELLO starts with (magic, VERSION, PID, PPID), for the
 * agent's HELLO and refuse.c's: returns the cursor over frame's payload,
 * those fields written, for the caller's fields. Any thread. */
struct wire_out transport_hello_begin(uint8_t *frame, size_t cap);

/* Appends one frame that belongs to this connection only (a control
 * reply): dropped, not replayed, if the connection breaks. -ENOTCONN when
 * not connected, -ENOMEM. */
int transport_put_ctl(struct transport *t, const uint8_t *frame,
		      size_t len);

/* Sends what it can without blocking; reads what the collector sent and
 * hands each whole control frame (types WIRE_CTL_DOWN_FIRST..LAST, at
 * most WIRE_MAX_CTL_PAYLOAD) to on_frame, if set. Drops the connection on
 * error, EOF or a frame of another type or size. */
void transport_pump(struct transport *t, uint64_t now_ns);

/* Drops the connection (a command the agent could not handle). */
void transport_drop(struct transport *t, uint64_t now_ns, const char *why);

/* Bytes still to send. */
size_t transport_pending(const struct transport *t);

#endif /* PYPROF_TRANSPORT_H */
