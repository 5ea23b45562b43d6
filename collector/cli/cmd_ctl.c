/*
 * cmd_ctl.c - `pyprof ctl start|stop|flush|status`: switch sampling on and
 * off in processes connected to a running collector.
 *
 * A controller is a client of the collector's own socket that sends one
 * CTL_REQUEST frame instead of HELLO (wire.h); the collector answers with
 * one CTL_ANSWER per process it covers, then CTL_DONE (collector/daemon/control.h
 * says what each verb does). This prints one line per process, as
 * key=value pairs (easy to read and to grep):
 *
 *   pid=4242 comm=python3 status=ok sampling=on origin=request mode=cpu
 *   hz=100 [waits_ns=10000] samples=0 signals=0 armed=2 lease_ms=2999
 *   since_mono_ns=123456789012
 *
 * (samples: taken since the process started; signals: sampling signals it
 * received; armed: threads with a timer; since_mono_ns: its
 * CLOCK_MONOTONIC when sampling last started, or stopped when off)
 * and a note (msg="...") when the process did not do all that was asked.
 *
 * Who it talks to. Before a byte goes out, the same checks as the
 * library's (preload/agent/transport.c), through checked.h: the socket's
 * directory is not a symbolic link, belongs to us, root or
 * PYPROF_COLLECTOR_USER, and is not writable by others unless sticky;
 * the listener's uid (SO_PEERCRED) is one of those. Another user's
 * listener at the default path would otherwise show a forged status.
 *
 * Exit codes: 0 when every covered process answered and did what was
 * asked (ok, or partial: it says what it could not do), 1 when one
 * refused or did not answer, when nothing matched, or when no collector
 * answers on the socket; 2 on a usage error.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pyprof/envcheck.h"
#include "cli/cmd.h"
#include "common/checked.h"
#include "common/log.h"
#include "common/path.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

#define CTL "pyprof ctl" /* for usage_error */

/* The collector waits 2 s for processes (control.h): wait for it longer. */
#define CTL_WAIT_MS 6000

void cmd_ctl_usage(FILE *out)
{
	fprintf(out,
		"Usage: pyprof ctl start|stop|flush|status [OPTIONS]\n"
		"\n"
		"Switches sampling on and off in Python processes connected to "
		"a running\npyprof-collector (for example processes started "
		"with PYPROF_START=off),\nand prints what each process "
		"answered, one line each.\n"
		"\n"
		"  start    sample, for --seconds N (default: until `ctl stop`)"
		"\n"
		"  stop     end what `ctl start` asked, and switch sampling off "
		"(even in\n"
		"           processes that sample by themselves), unless "
		"another request\n"
		"           (an HTTP profile) still needs it\n"
		"  flush    have the processes send every sample taken so far\n"
		"  status   say what they do\n"
		"\n"
		"Options:\n"
		"  --pid P          only process P (default: every connected "
		"one)\n"
		"  --seconds N      start: for N seconds (1 to 86400)\n"
		"  --mode cpu|wall  start: the mode asked for (a process "
		"samples in its own\n"
		"                   PYPROF_MODE and says so if it differs)\n"
		"  --hz N           start: samples per second, 1 to 10000\n"
		"  --heap-rate B    start: heap sampling, one sample per B "
		"bytes allocated\n"
		"  --native         start: native stacks (processes started "
		"with PYPROF_NATIVE)\n"
		"  --waits[=RATE]   start: block and mutex profiles too, at "
		"RATE (default 10us;\n"
		"                   1ns to 1s, such as 100us); `ctl stop` "
		"ends them\n"
		"  --socket PATH    the collector's socket, absolute or from "
		"the current\n"
		"                   directory (default: as PYPROF_SOCKET)\n"
		"\n"
		"Exit status: 0 done; 1 a process refused or did not answer, "
		"nothing matched,\nor no collector; 2 usage error.\n");
}

/* Prints one CTL_ANSWER; returns 1 if it was a failure. */
/* One process's answer, as its fields say. */
struct ctl_answer {
	uint64_t pid, status, sampling, origin, mode, period, achieved;
	uint64_t samples, signals, armed, lease, heap, native, since, waits;
	int has_lease, has_period;
	char comm[64], msg[512];
};

/* Reads the fields of one answer into a; 0, or -1 if malformed. */
static int parse_answer(const uint8_t *p, size_t len, struct ctl_answer *a)
{
	struct wire_in r = { p, p + len, 1 };

	memset(a, 0, sizeof(*a));
	a->status = WIRE_CTL_NO_REPLY;
	strcpy(a->comm, "?");
	while (!wire_at_end(&r)) {
		struct wire_field f;
		if (wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) < 0)
			break;
		const uint8_t *s = f.s;
		size_t n = f.n;
		uint64_t v = f.v;
		if (f.is_bytes) {
			if (f.tag == WIRE_C_COMM)
				log_printable(a->comm, sizeof(a->comm),
					      (const char *)s, n);
			else if (f.tag == WIRE_C_MSG) {
				/* the collector's note, then the process's */
				size_t at = strlen(a->msg);
				if (at && at + 2 < sizeof(a->msg)) {
					memcpy(a->msg + at, "; ", 3);
					at += 2;
				}
				log_printable(a->msg + at, sizeof(a->msg) - at,
					      (const char *)s, n);
			}
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

static int print_answer(const uint8_t *p, size_t len)
{
	static const char *const statuses[] = { "ok", "partial", "refused",
						"no-reply" };
	static const char *const origins[] = { "off", "own", "request" };
	struct ctl_answer a;

	if (parse_answer(p, len, &a) < 0) {
		log_error("ctl: malformed answer from the collector");
		return 1;
	}
	printf("pid=%llu comm=%s status=%s", (unsigned long long)a.pid, a.comm,
	       a.status < 4 ? statuses[a.status] : "?");
	if (a.status != WIRE_CTL_NO_REPLY) {
		printf(" sampling=%s origin=%s mode=%s",
		       a.sampling ? "on" : "off",
		       a.origin < 3 ? origins[a.origin] : "?",
		       a.mode == WIRE_MODE_WALL ? "wall" : "cpu");
		if (a.has_period && a.period)
			printf(" hz=%llu",
			       (unsigned long long)((1000000000u +
						     a.period / 2) /
						    a.period));
		if (a.achieved)
			printf(" achieved_hz=%llu",
			       (unsigned long long)((1000000000u +
						     a.achieved / 2) /
						    a.achieved));
		if (a.heap)
			printf(" heap_rate=%llu", (unsigned long long)a.heap);
		if (a.native)
			printf(" native=on");
		if (a.waits)
			printf(" waits_ns=%llu", (unsigned long long)a.waits);
		printf(" samples=%llu signals=%llu armed=%llu",
		       (unsigned long long)a.samples,
		       (unsigned long long)a.signals,
		       (unsigned long long)a.armed);
		if (a.has_lease)
			printf(" lease_ms=%llu", (unsigned long long)a.lease);
		if (a.since)
			printf(" since_mono_ns=%llu",
			       (unsigned long long)a.since);
	}
	if (a.msg[0])
		printf(" msg=\"%s\"", a.msg);
	printf("\n");
	return a.status == WIRE_CTL_REFUSED || a.status == WIRE_CTL_NO_REPLY;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* PYPROF_COLLECTOR_USER as the library reads it: a uid trusted besides
 * ours and root's, or -1. */
static const char *collector_user_only(const char *name, void *arg)
{
	(void)arg;
	return strcmp(name, "PYPROF_COLLECTOR_USER") == 0 ? getenv(name)
							  : NULL;
}

static long trusted_uid(void)
{
	long uid = -1;
	char err[256];

	if (config_collector_user(collector_user_only, NULL, &uid, err,
				  sizeof(err)) < 0) {
		log_warn("ctl: %s; trusting our own user and root only", err);
		return -1;
	}
	return uid;
}

/* The socket's directory (checked.h, as the library checks it). 0, or 1
 * after one line. */
static int check_dir(const char *path, long trust)
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
	char dir[256], err[1024];
	int fd;

	path_split(path, dir, sizeof(dir));
	fd = checked_open(dir, O_RDONLY, &rules, err, sizeof(err));
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -EPERM)
		log_error("ctl: %s", err);
	else
		log_error("ctl: no collector answers on %s: %s", path,
			  strerror(-fd));
	return 1;
}

/* The listener's user, before anything is sent. 0, or 1 after one line. */
static int check_peer(int fd, const char *path, long trust)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0) {
		log_error("ctl: %s: %s", path, strerror(errno));
		return 1;
	}
	if (cr.uid == geteuid() || cr.uid == 0 ||
	    (trust >= 0 && cr.uid == (uid_t)trust))
		return 0;
	log_error("ctl: refusing the listener on %s: it runs as uid %u, not "
		  "as us (uid %u) or root, and could show a forged status; if "
		  "you trust that user, set PYPROF_COLLECTOR_USER=%u",
		  path,
		  (unsigned)cr.uid, (unsigned)geteuid(), (unsigned)cr.uid);
	return 1;
}

/* The collector closed the connection without answering: most likely
 * because it takes control requests from its own user and root only. */
static void closed_early(int fd)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) == 0 &&
	    cr.uid != geteuid() && geteuid() != 0)
		log_error("ctl: the collector (uid %u) refused the request: it "
			  "takes control requests from its own user and root "
			  "only, not from uid %u; run pyprof ctl as that user",
			  (unsigned)cr.uid, (unsigned)geteuid());
	else
		log_error("ctl: the collector closed the connection (is it "
			  "older than this pyprof?)");
}

/* The collector's last frame (WIRE_CTL_DONE, payload p of plen bytes):
 * its message, if any, said; the exit status, failed as the answers left
 * it. */
static int done_frame(const uint8_t *p, size_t plen, int start_verb,
		      int failed)
{
	struct wire_in r = { p, p + plen, 1 };
	char msg[256] = "";
	struct wire_field f;
	while (!wire_at_end(&r) &&
	       wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) == 0)
		if (f.is_bytes && f.tag == WIRE_C_MSG)
			log_printable(msg, sizeof(msg), (const char *)f.s, f.n);
	/* start: a request nothing matched yet still covers processes that
	 * connect in its time */
	if (msg[0] && start_verb) {
		log_info("ctl: %s", msg);
	} else if (msg[0]) {
		log_error("ctl: %s", msg);
		failed = 1;
	}
	return failed;
}

/* A connection to the collector on path, its directory and its peer
 * checked; -1 (said) if none. */
static int ctl_connect(const char *path)
{
	struct sockaddr_un sa;
	long trust = trusted_uid();
	int fd;

	if (check_dir(path, trust))
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		log_error("ctl: no collector answers on %s: %s", path,
			  strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (check_peer(fd, path, trust)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends the request and prints the answers. Returns the exit status. */
static int exchange(const char *path, const uint8_t *frame, size_t len,
		    int start_verb)
{
	uint8_t buf[2 * (WIRE_HDR_LEN + WIRE_MAX_CTL_PAYLOAD)];
	size_t have = 0;
	int fd, failed = 0, rc = 1, got_answer = 0;

	if ((fd = ctl_connect(path)) < 0)
		return 1;
	if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len) {
		log_error("ctl: cannot send to the collector: %s",
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
				log_error("ctl: unexpected frame (type %u) from "
					  "the collector",
					  type);
				goto out;
			}
			if (have < WIRE_HDR_LEN + plen)
				break;
			got_answer = 1;
			if (type != WIRE_CTL_ANSWER) {
				rc = done_frame(buf + WIRE_HDR_LEN, plen,
						start_verb, failed);
				goto out;
			}
			failed |= print_answer(buf + WIRE_HDR_LEN, plen);
			memmove(buf, buf + WIRE_HDR_LEN + plen,
				have - WIRE_HDR_LEN - plen);
			have -= WIRE_HDR_LEN + plen;
		}
		uint64_t t = now_ms();
		if (t >= deadline) {
			log_error("ctl: the collector did not finish answering "
				  "in time");
			goto out;
		}
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (poll(&pfd, 1, (int)(deadline - t)) <= 0)
			continue;
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (got_answer)
				log_error("ctl: the collector closed the "
					  "connection before it was done");
			else
				closed_early(fd);
			goto out;
		}
		have += (size_t)n;
	}
out:
	close(fd);
	return rc;
}

/* What `pyprof ctl` was asked: the verb and its options. */
struct ctl_req {
	int verb; /* WIRE_VERB_* */
	unsigned long pid, seconds, hz, heap;
	int mode; /* WIRE_MODE_*, or -1: the process's own */
	int native;
	unsigned long long waits; /* --waits: the rate in ns, 0 without */
	const char *sock;	  /* NULL: $PYPROF_SOCKET or the default */
	char sock_abs[108];	  /* --socket PATH made absolute */
};

/* --socket PATH: an absolute path as given, a relative one resolved
 * against the current directory (as the collector's own --socket takes
 * it); either way shorter than sun_path's 108 bytes. */
static int ctl_socket(struct ctl_req *q, const char *val)
{
	char cwd[PATH_MAX];
	int n;

	if (!*val)
		return usage_error(CTL, "--socket expects a path, not ''");
	if (val[0] == '/') {
		if (strlen(val) >= sizeof(q->sock_abs))
			return usage_error(CTL, "--socket expects a path "
						"shorter than 108 bytes, not '%s'",
					   val);
		q->sock = val;
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return usage_error(CTL, "--socket %s: cannot resolve a "
					"relative path: the current directory is "
					"unknown (%s)",
				   val, strerror(errno));
	n = snprintf(q->sock_abs, sizeof(q->sock_abs), "%s%s%s", cwd,
		     strcmp(cwd, "/") ? "/" : "", val);
	if (n < 0 || (size_t)n >= sizeof(q->sock_abs))
		return usage_error(CTL, "--socket %s is %d bytes long once "
					"made absolute (%s/%s); a socket path must "
					"be shorter than 108 bytes",
				   val, n, cwd,
				   val);
	q->sock = q->sock_abs;
	return 0;
}

/* The options that take a number: bounds, what the error line says they
 * expect, and where the value goes. */
static const struct ctl_number {
	const char *name;
	unsigned long hi;
	const char *expects;
	size_t dest; /* offsetof(struct ctl_req, ...) */
} ctl_numbers[] = {
	{ "--pid", 0x7fffffff, "a process id", offsetof(struct ctl_req, pid) },
	{ "--seconds", 86400, "1 to 86400",
	  offsetof(struct ctl_req, seconds) },
	{ "--hz", PYPROF_MAX_HZ, "1 to 10000", offsetof(struct ctl_req, hz) },
	{ "--heap-rate", 1ul << 40, "bytes, 1 or more",
	  offsetof(struct ctl_req, heap) },
};

/* Option a with its value val (never NULL); 0, or the exit status. */
static int ctl_option(struct ctl_req *q, const char *a, const char *val)
{
	for (size_t i = 0; i < sizeof(ctl_numbers) / sizeof(ctl_numbers[0]);
	     i++) {
		const struct ctl_number *n = &ctl_numbers[i];
		if (strcmp(a, n->name))
			continue;
		if (cmd_parse_uint(val, 1, n->hi,
				   (unsigned long *)((char *)q + n->dest)) < 0)
			return usage_error(CTL, "%s expects %s, not '%s'",
					   n->name, n->expects, val);
		return 0;
	}
	if (!strcmp(a, "--mode")) {
		if (!strcmp(val, "cpu"))
			q->mode = WIRE_MODE_CPU;
		else if (!strcmp(val, "wall"))
			q->mode = WIRE_MODE_WALL;
		else
			return usage_error(CTL, "--mode expects cpu or wall, "
						"not '%s'",
					   val);
		return 0;
	}
	if (!strcmp(a, "--socket"))
		return ctl_socket(q, val);
	return usage_error(CTL, "unknown option '%s'", a);
}

static int is_help(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* Fills q from argv; returns -1 to go on, else the exit status (0 after
 * --help). */
static int ctl_parse(struct ctl_req *q, int argc, char **argv)
{
	static const char *const verbs[] = { NULL, "start", "stop", "flush",
					     "status" };
	int rc;

	if (argc >= 2 && is_help(argv[1])) {
		cmd_ctl_usage(stdout);
		return 0;
	}
	if (argc < 2)
		return usage_error(CTL, "start, stop, flush or status expected");
	for (int v = 1; v <= 4; v++)
		if (!strcmp(argv[1], verbs[v]))
			q->verb = v;
	if (!q->verb)
		return usage_error(CTL, "unknown verb '%s'", argv[1]);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--native")) {
			q->native = 1;
			continue;
		}
		if (!strcmp(a, "--waits")) {
			q->waits = PYPROF_DEFAULT_WAITS_NS;
			continue;
		}
		if (!strncmp(a, "--waits=", 8)) {
			if (config_waits_rate(a + 8, &q->waits) < 0 ||
			    !q->waits)
				return usage_error(CTL, "--waits expects a "
							"rate from 1ns to 1s with "
							"its unit (ns, us, ms), "
							"such as 100us, or no "
							"value for 10us; not '%s'",
						   a + 8);
			continue;
		}
		if (is_help(a)) {
			cmd_ctl_usage(stdout);
			return 0;
		}
		if (!val)
			return usage_error(CTL, "%s needs a value", a);
		i++;
		rc = ctl_option(q, a, val);
		if (rc)
			return rc;
	}
	if (q->verb != WIRE_VERB_START &&
	    (q->seconds || q->hz || q->heap || q->native || q->mode >= 0 ||
	     q->waits))
		return usage_error(CTL, "--seconds, --hz, --mode, --heap-rate, "
					"--native and --waits go with start only");
	return -1;
}

/* The CTL_REQUEST frame for q into frame (size n); returns its length. */
static size_t ctl_frame(const struct ctl_req *q, uint8_t *frame, size_t n)
{
	struct wire_out w = wire_tagged_begin(frame, n);

	wire_put_tag_varint(&w, WIRE_C_VERB, (uint64_t)q->verb);
	if (q->pid)
		wire_put_tag_varint(&w, WIRE_C_PID, q->pid);
	if (q->seconds)
		wire_put_tag_varint(&w, WIRE_C_LEASE_MS, q->seconds * 1000);
	if (q->mode >= 0)
		wire_put_tag_varint(&w, WIRE_C_MODE, (uint64_t)q->mode);
	if (q->hz)
		wire_put_tag_varint(&w, WIRE_C_PERIOD_NS, 1000000000ull / q->hz);
	if (q->heap)
		wire_put_tag_varint(&w, WIRE_C_HEAP_RATE, q->heap);
	if (q->native)
		wire_put_tag_varint(&w, WIRE_C_NATIVE, 1);
	if (q->waits)
		wire_put_tag_varint(&w, WIRE_C_WAITS_NS, q->waits);
	return wire_end_frame(frame, &w, WIRE_CTL_REQUEST);
}

int cmd_ctl(int argc, char **argv)
{
	struct ctl_req q = { .mode = -1 };
	uint8_t frame[WIRE_HDR_LEN + 256];
	const char *env = getenv("PYPROF_SOCKET");
	char def[256];
	size_t n;
	int rc;

	rc = ctl_parse(&q, argc, argv);
	if (rc >= 0)
		return rc;
	if (!q.sock && env && *env) {
		q.sock = env;
	} else if (!q.sock) {
		if (pyprof_default_socket(def, sizeof(def)) != 0) {
			log_error("ctl: the default socket path is too long; "
				  "use --socket");
			return 1;
		}
		q.sock = def;
	}
	n = ctl_frame(&q, frame, sizeof(frame));
	fflush(stdout);
	rc = exchange(q.sock, frame, n, q.verb == WIRE_VERB_START);
	fflush(stdout);
	return rc;
}
