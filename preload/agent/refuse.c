/*
 * refuse.c - the one HELLO of a process the library does not profile (see
 * refuse.h and the WIRE_H_REFUSED paragraph of wire.h).
 *
 * Runs in the library's constructor, on the program's main thread, before
 * main(): no thread of ours exists and nothing else of ours is open. The
 * socket is non-blocking and closed before returning, the send uses
 * MSG_NOSIGNAL, and nothing is retried, so the program waits for at most
 * one connect() and one send() on a local socket, and sees no descriptor,
 * signal or error of ours.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "refuse.h"
#include "transport.h"
#include "pyprof/wire.h"

#define REFUSE_FRAME_CAP 4096

/* A string field, at most 1024 bytes of it. */
static void put_tag_str(struct wire_out *w, unsigned tag, const char *s)
{
	wire_put_tag_bytes(w, tag, s, strnlen(s, 1024));
}

size_t refuse_build_hello(uint8_t *buf, size_t cap, const char *pyversion,
			  const char *exe, const char *comm, const char *why)
{
	if (cap < WIRE_HDR_LEN)
		return 0;
	struct wire_out w = transport_hello_begin(buf, cap);
	if (pyversion && pyversion[0])
		put_tag_str(&w, WIRE_H_PYVERSION, pyversion);
	put_tag_str(&w, WIRE_H_EXE, exe);
	put_tag_str(&w, WIRE_H_COMM, comm);
	wire_put_tag_varint(&w, WIRE_H_UID, (uint64_t)getuid());
	put_tag_str(&w, WIRE_H_REFUSED, why);
	return w.ok ? wire_end_frame(buf, &w, WIRE_HELLO) : 0;
}

/* Reads /proc/self/comm into out (without its newline); "" on failure. */
static void read_comm(char *out, size_t cap)
{
	out[0] = '\0';
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	if (n <= 0)
		n = 0;
	out[n] = '\0';
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
}

int refuse_notify(const char *socket_path, long trust_uid,
		  const char *pyversion, const char *why)
{
	uint8_t frame[REFUSE_FRAME_CAP];
	char exe[1024], comm[64], distrust[400];
	struct sockaddr_un sa;
	int saved = errno, rc = 0;

	if (!socket_path || !socket_path[0] ||
	    strlen(socket_path) >= sizeof sa.sun_path)
		return -EINVAL;
	/* Even a refusal names the executable: only to a collector the
	 * agent itself would talk to (transport.h), silently otherwise. */
	if ((rc = transport_check_dir(socket_path, trust_uid, distrust,
				      sizeof distrust)) < 0) {
		errno = saved;
		return rc;
	}
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = '\0';
	read_comm(comm, sizeof comm);
	size_t len = refuse_build_hello(frame, sizeof frame, pyversion, exe,
					comm, why);
	if (!len)
		return -ENOBUFS;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, socket_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		rc = -errno;
	} else if ((rc = transport_check_peer(fd, trust_uid, distrust,
					      sizeof distrust)) < 0) {
		/* not ours: nothing sent */
	} else {
		ssize_t sent = send(fd, frame, len, MSG_NOSIGNAL);
		if (sent < 0)
			rc = -errno;
		else if ((size_t)sent != len)
			rc = -EAGAIN; /* a partial frame: dropped, logged there */
	}
	close(fd);
out:
	errno = saved; /* the program's errno is not ours to change */
	return rc;
}
