/*
 * ctl_client.h - a running collector's control requests, as a library:
 * one CTL_REQUEST sent over the collector's own socket, one answer per
 * process it covers handed back as a struct, then the collector's
 * closing note (include/pyprof/wire.h, collector/daemon/control.h).
 *
 * `pyprof ctl` prints the answers; `pyprof attach` and `pyprof top --pid`
 * read the one process's answer they asked for. No command runs another
 * command's main or reads its printed text.
 *
 * Who it talks to: before a byte goes out, the same checks as the
 * library's (preload/agent/transport.c), through common/checked.h: the
 * socket's directory is not a symbolic link, belongs to us, root or
 * PYPROF_COLLECTOR_USER, and is not writable by others unless sticky;
 * the listener's uid (SO_PEERCRED) is one of those. Another user's
 * listener at the default path would otherwise show a forged status.
 *
 * Single-threaded; writes nothing to stdout or stderr but a warning about
 * a wrong PYPROF_COLLECTOR_USER.
 */
#ifndef PYPROF_CLIENT_CTL_CLIENT_H
#define PYPROF_CLIENT_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* What is asked: a verb (WIRE_VERB_*) and its options; 0 leaves one out,
 * mode -1 leaves the process its own. */
struct ctl_request {
	int verb;
	uint64_t pid;	    /* only this process                        */
	uint64_t lease_ms;  /* start: for this long                     */
	int mode;	    /* start: WIRE_MODE_*, or -1                */
	uint64_t period_ns; /* start: the sampling period               */
	uint64_t heap_rate; /* start: bytes per heap sample             */
	int native;	    /* start: native stacks                     */
	uint64_t waits_ns;  /* start: block and mutex profiles' rate    */
};

/* One process's answer, as its fields say. */
struct ctl_answer {
	uint64_t pid, status, sampling, origin, mode, period, achieved;
	uint64_t samples, signals, armed, lease, heap, native, since, waits;
	int has_lease, has_period;
	char comm[64], msg[512]; /* msg: the collector's note, then the
				  * process's ("" if none) */
};

/* The collector's word once every answer came. */
struct ctl_result {
	unsigned answers;   /* answers handed to the callback        */
	unsigned malformed; /* answers that could not be read        */
	char note[256];	    /* CTL_DONE's message ("" if none): for
			     * start, a request nothing matched yet */
};

typedef void (*ctl_answer_fn)(const struct ctl_answer *a, void *arg);

/* Sends q to the collector on sock and hands each answer to fn (may be
 * NULL). 0 once the collector said it was done (res filled); -1 with one
 * line in err (size n): no collector, one not to be trusted, one that
 * refused or stopped answering. */
int ctl_send(const char *sock, const struct ctl_request *q,
	     ctl_answer_fn fn, void *arg, struct ctl_result *res, char *err,
	     size_t n);

/* Reads the fields of one CTL_ANSWER payload p (len bytes) into a; 0, or
 * -1 if malformed. */
int ctl_answer_parse(const uint8_t *p, size_t len, struct ctl_answer *a);

/* a as `pyprof ctl` prints it, key=value pairs on one line (no newline),
 * into out (size n; 1 KiB holds any):
 *
 *   pid=4242 comm=python3 status=ok sampling=on origin=request mode=cpu
 *   hz=100 [waits_ns=10000] samples=0 signals=0 armed=2 lease_ms=2999
 *   since_mono_ns=123456789012 [msg="..."]
 */
void ctl_answer_format(const struct ctl_answer *a, char *out, size_t n);

/* Whether a says its process refused or did not answer. */
int ctl_answer_failed(const struct ctl_answer *a);

/* The names `pyprof ctl` prints: status ("ok", "partial", "refused",
 * "no-reply"), origin ("off", "own", "request"), mode ("cpu", "wall");
 * "?" for a value it does not know. */
const char *ctl_status_name(uint64_t status);
const char *ctl_origin_name(uint64_t origin);
const char *ctl_mode_name(uint64_t mode);

#endif /* PYPROF_CLIENT_CTL_CLIENT_H */
