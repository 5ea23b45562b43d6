/*
 * wire_fuzz.c - libFuzzer harness for the collector's wire decoder
 * (collector/conn.c, proc.c, symtab.c, control.c) and everything a
 * client's bytes reach after it: the aggregates, heap profiles, symtab
 * compaction and the pprof builder (pprof.c). Built and run by
 * `make fuzz-wire` (long) and `make check-fuzz-wire` (a short fixed
 * budget, part of `make check`); tests/unit/test_wire_fuzz.c includes
 * this file and replays the corpus and every saved finding through
 * wire_fuzz_one.
 *
 * An input is what clients send, as they would send it: the bytes of one
 * connection, or of several connections separated by WIRE_FUZZ_SPLIT (so
 * that a second session of the same process, or a controller beside a
 * library, is reachable). Each input gets a fresh registry, symtab and
 * control state; every stream goes through a real socketpair into
 * conn_read, all connections open at once, in order. Then the harness
 * compacts the symtab, builds the profiles the collector would write (each
 * process's CPU profile, its heap profile, the snapshots asked for, and the
 * merged profile of all of them), closes the connections and frees
 * everything. A crash, a sanitizer report or an assert() is a finding; so
 * is a broken invariant (abort()):
 *   - pprof_build succeeds and refuses nothing (what it would refuse, the
 *     decoder must have refused first);
 *   - a profile holds exactly the samples the process's window counted.
 *
 * Runs on one thread; the collector's log is silenced below LOG_ERROR.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "control.h"
#include "log.h"
#include "loop.h"
#include "pprof.h"
#include "proc.h"
#include "symtab.h"

#define WIRE_FUZZ_SPLIT "@@conn@@"
#define WIRE_FUZZ_SPLIT_LEN (sizeof(WIRE_FUZZ_SPLIT) - 1)
#define WIRE_FUZZ_MAX_CONNS 4

struct fuzz_conn {
	struct conn *c;
	int peer;
	int closed;
};

/* Writes len bytes into the connection's peer end, letting conn_read take
 * them as they come, until all are sent or the collector closed it. */
static void feed(struct fuzz_conn *fc, const uint8_t *d, size_t len)
{
	size_t off = 0;
	while (off < len && !fc->closed) {
		ssize_t w = write(fc->peer, d + off, len - off);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			break;
		if (w > 0)
			off += (size_t)w;
		if (conn_read(fc->c, 1))
			fc->closed = 1;
	}
	if (!fc->closed && conn_read(fc->c, 1))
		fc->closed = 1;
}

/* Builds one profile; NULL, or the invariant it broke. */
static const char *build(const struct symtab *st, const struct proc *const *ps,
			 size_t n, const struct pprof_opts *po,
			 uint64_t want_samples)
{
	struct pprof_stats stats = { 0 };
	void *out = NULL;
	size_t len = 0;
	int rc = pprof_build(st, ps, n, po, &out, &len, &stats);
	free(out);
	if (rc == -ENOMEM)
		return NULL; /* not the decoder's business */
	if (rc < 0)
		return "pprof_build failed";
	if (stats.n_refused)
		return "pprof_build refused what the decoder accepted";
	if (want_samples != UINT64_MAX && stats.samples != want_samples)
		return "a profile's samples differ from what was accepted";
	return NULL;
}

static const char *build_all(struct symtab *st, struct procs *reg)
{
	const struct proc *all[64];
	struct pprof_opts heap = { .heap = 1 }, merged = { .proc_labels = 1 };
	uint64_t total = 0, seq;
	const char *why = NULL;
	struct proc *p;
	size_t n = 0;

	for (p = procs_first(reg); p && !why; p = proc_next(p)) {
		const struct proc_info *in = proc_info(p);
		/* sums that saturated are not comparable */
		uint64_t want = in->win_samples < (1ull << 62) ? in->win_samples
							       : UINT64_MAX;
		why = build(st, (const struct proc *const *)&p, 1, NULL, want);
		if (!why && proc_heap(p))
			why = build(st, (const struct proc *const *)&p, 1,
				    &heap, UINT64_MAX);
		if (n < sizeof(all) / sizeof(all[0]))
			all[n++] = p;
		total = want == UINT64_MAX || total == UINT64_MAX
				? UINT64_MAX
				: total + want;
	}
	if (!why && n)
		why = build(st, all, n, &merged,
			    total < (1ull << 62) ? total : UINT64_MAX);
	while (!why && (p = procs_next_snapshot(reg, &seq)))
		why = build(st, (const struct proc *const *)&p, 1, &heap,
			    UINT64_MAX);
	return why;
}

/* Runs one input; NULL, or the invariant it broke. */
static const char *wire_fuzz_one(const uint8_t *data, size_t size)
{
	struct fuzz_conn fc[WIRE_FUZZ_MAX_CONNS];
	const uint8_t *part[WIRE_FUZZ_MAX_CONNS];
	size_t part_len[WIRE_FUZZ_MAX_CONNS];
	struct symtab *st = symtab_new();
	struct procs *reg = st ? procs_new(st) : NULL;
	struct loop *loop = loop_new();
	struct control *ctl = loop ? control_new(loop) : NULL;
	const char *why = NULL;
	size_t n = 0;

	memset(fc, 0, sizeof(fc));
	if (!reg || !ctl)
		goto out;
	/* The streams, split at the marker. */
	while (n < WIRE_FUZZ_MAX_CONNS) {
		const uint8_t *cut = n + 1 < WIRE_FUZZ_MAX_CONNS
			? memmem(data, size, WIRE_FUZZ_SPLIT,
				 WIRE_FUZZ_SPLIT_LEN)
			: NULL;
		part[n] = data;
		part_len[n] = cut ? (size_t)(cut - data) : size;
		n++;
		if (!cut)
			break;
		size -= (size_t)(cut - data) + WIRE_FUZZ_SPLIT_LEN;
		data = cut + WIRE_FUZZ_SPLIT_LEN;
	}
	for (size_t i = 0; i < n; i++) {
		int fds[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
				       SOCK_CLOEXEC, 0, fds) < 0)
			goto out;
		fc[i].peer = fds[1];
		fc[i].c = conn_new(fds[0], getpid(), getuid(), reg);
		if (!fc[i].c) {
			close(fds[0]);
			goto out;
		}
		conn_set_control(fc[i].c, ctl);
	}
	for (size_t i = 0; i < n; i++)
		feed(&fc[i], part[i], part_len[i]);
	/* What compaction keeps must still build the same profiles. */
	procs_compact(reg);
	why = build_all(st, reg);
out:
	for (size_t i = 0; i < n; i++) {
		struct proc *p = conn_free(fc[i].c);
		if (p)
			procs_remove(reg, p);
		if (fc[i].peer > 0)
			close(fc[i].peer);
	}
	control_free(ctl);
	loop_free(loop);
	procs_free(reg);
	symtab_free(st);
	return why;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = wire_fuzz_one(data, size);
	if (why) {
		log_error("wire_fuzz: %s", why);
		abort();
	}
	return 0;
}
