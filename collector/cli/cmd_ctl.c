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
 * The request and its answers go through collector/client/ctl_client.h
 * (which checks who it talks to first).
 *
 * Exit codes: 0 when every covered process answered and did what was
 * asked (ok, or partial: it says what it could not do), 1 when one
 * refused or did not answer, when nothing matched, or when no collector
 * answers on the socket; 2 on a usage error.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "client/ctl_client.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/envcheck.h"
#include "pyprof/wire.h"

#define CTL "pyprof ctl" /* for usage_error */

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

/* Prints one process's answer as a line of key=value pairs; counts it in
 * *failed (arg) if it refused or did not answer. */
static void print_answer(const struct ctl_answer *a, void *arg)
{
	char line[1024];
	int *failed = arg;

	ctl_answer_format(a, line, sizeof(line));
	printf("%s\n", line);
	*failed |= ctl_answer_failed(a);
}

/* Sends q to the collector on sock and prints the answers. Returns the
 * exit status. */
static int exchange(const char *sock, const struct ctl_request *q)
{
	struct ctl_result res;
	char err[ERR_LEN];
	int failed = 0;

	if (ctl_send(sock, q, print_answer, &failed, &res, err,
		     sizeof(err)) < 0) {
		log_error("ctl: %s", err);
		return 1;
	}
	if (res.malformed) {
		log_error("ctl: malformed answer from the collector");
		failed = 1;
	}
	/* start: a request nothing matched yet still covers processes that
	 * connect in its time */
	if (res.note[0] && q->verb == WIRE_VERB_START) {
		log_info("ctl: %s", res.note);
	} else if (res.note[0]) {
		log_error("ctl: %s", res.note);
		failed = 1;
	}
	return failed;
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

/* The request q's options make. */
static struct ctl_request ctl_of(const struct ctl_req *q)
{
	struct ctl_request r = {
		.verb = q->verb,
		.pid = q->pid,
		.lease_ms = (uint64_t)q->seconds * 1000u,
		.mode = q->mode,
		.period_ns = q->hz ? 1000000000ull / q->hz : 0,
		.heap_rate = q->heap,
		.native = q->native,
		.waits_ns = q->waits,
	};
	return r;
}

int cmd_ctl(int argc, char **argv)
{
	struct ctl_req q = { .mode = -1 };
	struct ctl_request r;
	const char *env = getenv("PYPROF_SOCKET");
	char def[256];
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
	r = ctl_of(&q);
	fflush(stdout);
	rc = exchange(q.sock, &r);
	fflush(stdout);
	return rc;
}
