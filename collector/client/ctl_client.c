/*
 * ctl_client.c - a running collector's control requests; see
 * ctl_client.h.
 */
#include "client/ctl_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/trust.h"
#include "common/checked.h"
#include "common/log.h"
#include "common/path.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

/* The collector waits 2 s for processes (control.h): wait for it longer. */
#define CTL_WAIT_MS 6000

static void say(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/* Appends the printable part of s (n bytes) to msg (size cap), after
 * "; " if msg holds something already. */
static void append_msg(char *msg, size_t cap, const uint8_t *s, size_t n)
{
	size_t at = strlen(msg);
	if (at && at + 2 < cap) {
		memcpy(msg + at, "; ", 3);
		at += 2;
	}
	log_printable(msg + at, cap - at, (const char *)s, n);
}

int ctl_answer_parse(const uint8_t *p, size_t len, struct ctl_answer *a)
{
	struct wire_in r = { p, p + len, 1 };

	memset(a, 0, sizeof(*a));
	a->status = WIRE_CTL_NO_REPLY;
	strcpy(a->comm, "?");
	while (!wire_at_end(&r)) {
		struct wire_field f;
		if (wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) < 0)
			break;
		uint64_t v = f.v;
		if (f.is_bytes) {
			if (f.tag == WIRE_C_COMM)
				log_printable(a->comm, sizeof(a->comm),
					      (const char *)f.s, f.n);
			else if (f.tag == WIRE_C_MSG) /* the collector's, then
							* the process's */
				append_msg(a->msg, sizeof(a->msg), f.s, f.n);
			continue;
		}
		switch (f.tag) {
		case WIRE_C_PID:
			a->pid = v;
			break;
		case WIRE_C_STATUS:
			a->status = v;
			break;
		case WIRE_C_SAMPLING:
			a->sampling = v;
			break;
		case WIRE_C_ORIGIN:
			a->origin = v;
			break;
		case WIRE_C_MODE:
			a->mode = v;
			break;
		case WIRE_C_PERIOD_NS:
			a->period = v;
			a->has_period = 1;
			break;
		case WIRE_C_ACHIEVED_NS:
			a->achieved = v;
			break;
		case WIRE_C_SAMPLES:
			a->samples = v;
			break;
		case WIRE_C_SIGNALS:
			a->signals = v;
			break;
		case WIRE_C_ARMED:
			a->armed = v;
			break;
		case WIRE_C_LEASE_LEFT_MS:
			a->lease = v;
			a->has_lease = 1;
			break;
		case WIRE_C_HEAP_RATE:
			a->heap = v;
			break;
		case WIRE_C_NATIVE:
			a->native = v;
			break;
		case WIRE_C_SINCE_NS:
			a->since = v;
			break;
		case WIRE_C_WAITS_NS:
			a->waits = v;
			break;
		default:
			break;
		}
	}
	return r.ok ? 0 : -1;
}

int ctl_answer_failed(const struct ctl_answer *a)
{
	return a->status == WIRE_CTL_REFUSED || a->status == WIRE_CTL_NO_REPLY;
}

const char *ctl_status_name(uint64_t status)
{
	static const char *const names[] = { "ok", "partial", "refused",
					     "no-reply" };
	return status < 4 ? names[status] : "?";
}

const char *ctl_origin_name(uint64_t origin)
{
	static const char *const names[] = { "off", "own", "request" };
	return origin < 3 ? names[origin] : "?";
}

const char *ctl_mode_name(uint64_t mode)
{
	return mode == WIRE_MODE_WALL ? "wall" : "cpu";
}

/* The rate of a period in ns, in Hz, rounded. */
static unsigned long long hz_of_period(uint64_t ns)
{
	return (unsigned long long)((1000000000u + ns / 2) / ns);
}

void ctl_answer_format(const struct ctl_answer *a, char *out, size_t n)
{
	size_t at = 0;
#define PUT(...)                                                               \
	do {                                                                   \
		if (at < n)                                                    \
			at += (size_t)snprintf(out + at, n - at, __VA_ARGS__); \
	} while (0)

	out[0] = '\0';
	PUT("pid=%llu comm=%s status=%s", (unsigned long long)a->pid, a->comm,
	    ctl_status_name(a->status));
	if (a->status != WIRE_CTL_NO_REPLY) {
		PUT(" sampling=%s origin=%s mode=%s", a->sampling ? "on" : "off",
		    ctl_origin_name(a->origin), ctl_mode_name(a->mode));
		if (a->has_period && a->period)
			PUT(" hz=%llu", hz_of_period(a->period));
		if (a->achieved)
			PUT(" achieved_hz=%llu", hz_of_period(a->achieved));
		if (a->heap)
			PUT(" heap_rate=%llu", (unsigned long long)a->heap);
		if (a->native)
			PUT(" native=on");
		if (a->waits)
			PUT(" waits_ns=%llu", (unsigned long long)a->waits);
		PUT(" samples=%llu signals=%llu armed=%llu",
		    (unsigned long long)a->samples,
		    (unsigned long long)a->signals,
		    (unsigned long long)a->armed);
		if (a->has_lease)
			PUT(" lease_ms=%llu", (unsigned long long)a->lease);
		if (a->since)
			PUT(" since_mono_ns=%llu", (unsigned long long)a->since);
	}
	if (a->msg[0])
		PUT(" msg=\"%s\"", a->msg);
#undef PUT
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* PYPROF_COLLECTOR_USER's uid, or -1 (a wrong value warned about). */
static long trusted_uid(void)
{
	char err[256];
	long uid = client_trusted_uid(err, sizeof(err));

	if (err[0])
		log_warn("ctl: %s; trusting our own user and root only", err);
	return uid;
}

/* The socket's directory (checked.h, as the library checks it). 0, or -1
 * with err. */
static int check_dir(const char *path, long trust, char *err, size_t n)
{
	const struct checked_rules rules = {
		.what = "the collector socket's directory",
		.harm = "its listener could show a forged status",
		.fix = "remove that directory, or give --socket (or "
		       "PYPROF_SOCKET, XDG_RUNTIME_DIR) a place of your own; "
		       "PYPROF_COLLECTOR_USER names a user you trust",
		.trust_uid = trust,
		.how = CHECKED_DIR | CHECKED_STICKY_OK | CHECKED_SEARCH_OK,
	};
	char dir[256];
	int fd;

	path_split(path, dir, sizeof(dir));
	fd = checked_open(dir, O_RDONLY, &rules, err, n);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd != -EPERM)
		say(err, n, "no collector answers on %s: %s", path,
		    strerror(-fd));
	return -1;
}

/* The listener's user, before anything is sent. 0, or -1 with err. */
static int check_peer(int fd, const char *path, long trust, char *err,
		      size_t n)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		say(err, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (client_uid_trusted(cr.uid, trust))
		return 0;
	say(err, n,
	    "refusing the listener on %s: it runs as uid %u, not as us (uid "
	    "%u) or root, and could show a forged status; if you trust that "
	    "user, set PYPROF_COLLECTOR_USER=%u",
	    path, (unsigned)cr.uid, (unsigned)geteuid(), (unsigned)cr.uid);
	return -1;
}

/* The collector closed the connection without answering: most likely
 * because it takes control requests from its own user and root only. */
static void closed_early(int fd, char *err, size_t n)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	    cr.uid != geteuid() && geteuid() != 0)
		say(err, n,
		    "the collector (uid %u) refused the request: it takes "
		    "control requests from its own user and root only, not "
		    "from uid %u; run pyprof ctl as that user",
		    (unsigned)cr.uid, (unsigned)geteuid());
	else
		say(err, n, "the collector closed the connection (is it older "
			    "than this pyprof?)");
}

/* A connection to the collector on path, its directory and its peer
 * checked; -1 with err if none. */
static int ctl_connect(const char *path, char *err, size_t n)
{
	struct sockaddr_un sa;
	long trust = trusted_uid();
	int fd;

	if (check_dir(path, trust, err, n))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		say(err, n, "no collector answers on %s: %s", path,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (check_peer(fd, path, trust, err, n)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The CTL_REQUEST frame for q into frame (size n); returns its length. */
static size_t request_frame(const struct ctl_request *q, uint8_t *frame,
			    size_t n)
{
	struct wire_out w = wire_tagged_begin(frame, n);

	wire_put_tag_varint(&w, WIRE_C_VERB, (uint64_t)q->verb);
	if (q->pid)
		wire_put_tag_varint(&w, WIRE_C_PID, q->pid);
	if (q->lease_ms)
		wire_put_tag_varint(&w, WIRE_C_LEASE_MS, q->lease_ms);
	if (q->mode >= 0)
		wire_put_tag_varint(&w, WIRE_C_MODE, (uint64_t)q->mode);
	if (q->period_ns)
		wire_put_tag_varint(&w, WIRE_C_PERIOD_NS, q->period_ns);
	if (q->heap_rate)
		wire_put_tag_varint(&w, WIRE_C_HEAP_RATE, q->heap_rate);
	if (q->native)
		wire_put_tag_varint(&w, WIRE_C_NATIVE, 1);
	if (q->waits_ns)
		wire_put_tag_varint(&w, WIRE_C_WAITS_NS, q->waits_ns);
	return wire_end_frame(frame, &w, WIRE_CTL_REQUEST);
}

/* The collector's last frame (WIRE_CTL_DONE, payload p of plen bytes):
 * its message into res->note. */
static void done_frame(const uint8_t *p, size_t plen, struct ctl_result *res)
{
	struct wire_in r = { p, p + plen, 1 };
	struct wire_field f;
	while (!wire_at_end(&r) &&
	       wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) == 0)
		if (f.is_bytes && f.tag == WIRE_C_MSG)
			log_printable(res->note, sizeof(res->note),
				      (const char *)f.s, f.n);
}

/* One whole frame of the collector's (type, payload p of plen bytes):
 * 1 when it was the last, 0 to read on. */
static int take_frame(unsigned type, const uint8_t *p, size_t plen,
		      ctl_answer_fn fn, void *arg, struct ctl_result *res)
{
	struct ctl_answer a;

	if (type != WIRE_CTL_ANSWER) {
		done_frame(p, plen, res);
		return 1;
	}
	if (ctl_answer_parse(p, plen, &a) < 0) {
		res->malformed++;
		return 0;
	}
	res->answers++;
	if (fn)
		fn(&a, arg);
	return 0;
}

int ctl_send(const char *sock, const struct ctl_request *q,
	     ctl_answer_fn fn, void *arg, struct ctl_result *res, char *err,
	     size_t n)
{
	uint8_t buf[2 * (WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD)];
	uint8_t frame[WIRE_HDR_LEN + 256];
	size_t have = 0, len = request_frame(q, frame, sizeof(frame));
	int fd, rc = -1, got_frame = 0;

	memset(res, 0, sizeof(*res));
	if ((fd = ctl_connect(sock, err, n)) < 0)
		return -1;
	if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len) {
		say(err, n, "cannot send to the collector: %s",
		    strerror(errno));
		goto out;
	}
	uint64_t deadline = now_ms() + CTL_WAIT_MS;
	for (;;) {
		/* every whole frame in buf */
		while (have >= WIRE_HDR_LEN) {
			unsigned type;
			size_t plen;
			wire_get_hdr(buf, &type, &plen);
			if ((type != WIRE_CTL_ANSWER && type != WIRE_CTL_DONE) ||
			    plen > WIRE_MAX_CTL_PAYLOAD) {
				say(err, n,
				    "unexpected frame (type %u) from the "
				    "collector",
				    type);
				goto out;
			}
			if (have < WIRE_HDR_LEN + plen)
				break;
			got_frame = 1;
			if (take_frame(type, buf + WIRE_HDR_LEN, plen, fn, arg,
				       res)) {
				rc = 0;
				goto out;
			}
			memmove(buf, buf + WIRE_HDR_LEN + plen,
				have - WIRE_HDR_LEN - plen);
			have -= WIRE_HDR_LEN + plen;
		}
		uint64_t t = now_ms();
		if (t >= deadline) {
			say(err, n, "the collector did not finish answering "
				    "in time");
			goto out;
		}
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (poll(&pfd, 1, (int)(deadline - t)) <= 0)
			continue;
		ssize_t got = read(fd, buf + have, sizeof(buf) - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			if (got_frame)
				say(err, n, "the collector closed the "
					    "connection before it was done");
			else
				closed_early(fd, err, n);
			goto out;
		}
		have += (size_t)got;
	}
out:
	close(fd);
	return rc;
}
