/*
 * refuse.h - telling the collector that this process is not profiled.
 *
 * When the constructor decides to stay inert for a reason the user should
 * see (a Python version without a layout, a free-threaded or debug build,
 * PyPy, a failed layout check), refuse_notify sends the one HELLO with
 * WIRE_H_REFUSED that wire.h describes, so that the collector can count
 * and name the process. Constructor only (before any thread of ours
 * exists); never blocks; never retries.
 */
#ifndef PYPROF_REFUSE_H
#define PYPROF_REFUSE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Connects to socket_path (non-blocking), sends HELLO with PID, PPID,
 * PYVERSION (when pyversion is non-NULL and non-empty), EXE, COMM and
 * REFUSED = why, then closes; only when the socket's directory and the
 * listening peer pass transport.h's checks (trust_uid as there: -EPERM,
 * nothing sent, otherwise). The socket is closed before this returns,
 * whatever happens. Returns 0 when the whole frame was sent; -errno
 * otherwise (-ENOENT/-ECONNREFUSED: no collector listens; -EAGAIN: its
 * queue is full): the caller has nothing to do about it.
 */
int refuse_notify(const char *socket_path, long trust_uid,
		  const char *pyversion, const char *why);

/*
 * Builds that HELLO frame (header included) into buf. Returns its length,
 * or 0 when cap is too small. Split out for the unit test.
 */
size_t refuse_build_hello(uint8_t *buf, size_t cap, const char *pyversion,
			  const char *exe, const char *comm, const char *why);

#endif /* PYPROF_REFUSE_H */
