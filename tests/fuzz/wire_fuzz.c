/*
 * wire_fuzz.c - libFuzzer harness for the collector's wire decoder
 * (collector/daemon/conn.c, proc.c, symtab.c, control.c) and everything a
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
 *   - pprof_build succeeds and refuses nothing (a stack, thread or label
 *     set it would refuse, the decoder must have refused first);
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

#include "daemon/conn.h"
#include "daemon/control.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"

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
		/* a CPU or wall profile: block and mutex records go to
		 * profiles of their own */
		uint64_t want = in->win_samples < (1ull << 62)
					? in->win_samples - in->win_waits
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
		control_attach(ctl, fc[i].c);
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

/* ---- a mutator that knows frames ------------------------------------------
 *
 * Byte-level mutations rarely survive the length prefixes: changing one
 * field of a definition, or dropping one, means fixing the frame's header
 * too, and the collector's interesting states are behind several valid
 * frames. So half of the mutations cut the input into frames (and
 * connections), change one frame as a whole or one varint inside it, and
 * put the headers back; the other half are libFuzzer's own. Anything that
 * does not parse as frames gets libFuzzer's mutations only. */

#ifndef WIRE_FUZZ_NO_MUTATOR
#include "pyprof/wire.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

#define MUT_MAX_FRAMES 4096

struct mut_frame {
	size_t off, len; /* payload, in the scratch copy */
	unsigned type;
	int split;       /* a connection marker comes before it */
};

static uint8_t mut_in[1 << 20], mut_pay[1 << 20];
static struct mut_frame mut_f[MUT_MAX_FRAMES];

static unsigned mut_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/* Cuts mut_in[0..size) into frames; 0 if it is not whole frames. */
static size_t mut_parse(size_t size)
{
	size_t n = 0, off = 0;
	int split = 0;
	while (off < size && n < MUT_MAX_FRAMES) {
		if (size - off >= WIRE_FUZZ_SPLIT_LEN &&
		    !memcmp(mut_in + off, WIRE_FUZZ_SPLIT, WIRE_FUZZ_SPLIT_LEN)) {
			off += WIRE_FUZZ_SPLIT_LEN;
			split = 1;
			continue;
		}
		unsigned type;
		size_t len;
		if (size - off < WIRE_HDR_LEN)
			return 0;
		wire_get_hdr(mut_in + off, &type, &len);
		if (len > size - off - WIRE_HDR_LEN)
			return 0;
		mut_f[n++] = (struct mut_frame){ off + WIRE_HDR_LEN, len, type,
						 split };
		split = 0;
		off += WIRE_HDR_LEN + len;
	}
	return off == size ? n : 0;
}

/* Values that cross the decoder's limits and id rules. */
static uint64_t mut_value(unsigned *seed, uint64_t old)
{
	static const uint64_t special[] = {
		0, 1, 2, 0x7f, 0x80, 255, 256, 65536, 65537, WIRE_MAX_IDS,
		WIRE_MAX_IDS + 1ull, WIRE_MAX_DEPTH, INT32_MAX,
		INT32_MAX + 1ull, INT64_MAX, INT64_MAX + 1ull, UINT64_MAX
	};
	switch (mut_rand(seed) % 5) {
	case 0:
		return old + 1;
	case 1:
		return old - 1;
	case 2:
		return 0; /* "none", or nothing: the commonest edge */
	default:
		return special[mut_rand(seed) %
			       (sizeof(special) / sizeof(special[0]))];
	}
}

/* Rewrites one varint of payload p (len bytes) into out; its new length,
 * or len unchanged (copied) if the payload has no varint at the start of
 * the chosen place. */
static size_t mut_varint(unsigned *seed, const uint8_t *p, size_t len,
			 uint8_t *out, size_t cap)
{
	struct wire_in r = { p, p + len, 1 };
	size_t k = 0, pick, at = 0, end = 0;
	/* count the varints of a payload read as varints only */
	while (!wire_at_end(&r) && r.ok) {
		wire_get_varint(&r);
		k++;
	}
	if (k == 0 || len > cap) {
		memcpy(out, p, len < cap ? len : cap);
		return len < cap ? len : cap;
	}
	pick = mut_rand(seed) % k;
	r = (struct wire_in){ p, p + len, 1 };
	uint64_t v = 0;
	for (size_t i = 0; i <= pick && r.ok; i++) {
		at = (size_t)(r.p - p);
		v = wire_get_varint(&r);
		end = (size_t)(r.p - p);
	}
	struct wire_out w = { out, out + cap, 1 };
	memcpy(out, p, at);
	w.p += at;
	if (mut_rand(seed) % 8) /* else: the varint is dropped */
		wire_put_varint(&w, mut_value(seed, v));
	if ((size_t)(w.end - w.p) < len - end)
		return len < cap ? (memcpy(out, p, len), len) : 0;
	memcpy(w.p, p + end, len - end);
	w.p += len - end;
	return (size_t)(w.p - out);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	size_t n, out = 0, pick, other;
	unsigned op;

	if (size > sizeof(mut_in) || mut_rand(&seed) % 2)
		return LLVMFuzzerMutate(data, size, max_size);
	memcpy(mut_in, data, size);
	n = mut_parse(size);
	if (n == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	pick = mut_rand(&seed) % n;
	other = mut_rand(&seed) % n;
	op = mut_rand(&seed) % 6;
	for (size_t i = 0; i < n; i++) {
		const struct mut_frame *f = &mut_f[i];
		const uint8_t *p = mut_in + f->off;
		size_t len = f->len, reps = 1;
		unsigned type = f->type;
		if (i == pick) {
			switch (op) {
			case 0: /* one varint changed or dropped */
				len = mut_varint(&seed, p, len, mut_pay,
						 sizeof(mut_pay));
				p = mut_pay;
				break;
			case 1: /* bytes of the payload changed */
				memcpy(mut_pay, p, len);
				if (len == 0)
					mut_pay[len++] = (uint8_t)mut_rand(&seed);
				len = LLVMFuzzerMutate(mut_pay, len,
						       sizeof(mut_pay));
				p = mut_pay;
				break;
			case 2: /* dropped */
				reps = 0;
				break;
			case 3: /* sent twice */
				reps = 2;
				break;
			case 4: /* another frame's copy in its place */
				p = mut_in + mut_f[other].off;
				len = mut_f[other].len;
				type = mut_f[other].type;
				break;
			default: /* another type with the same payload */
				type = 1 + mut_rand(&seed) % WIRE_TYPE_MAX;
				break;
			}
		}
		if (f->split && out + WIRE_FUZZ_SPLIT_LEN <= max_size) {
			memcpy(data + out, WIRE_FUZZ_SPLIT, WIRE_FUZZ_SPLIT_LEN);
			out += WIRE_FUZZ_SPLIT_LEN;
		}
		for (size_t k = 0; k < reps; k++) {
			if (out + WIRE_HDR_LEN + len > max_size)
				return out ? out : LLVMFuzzerMutate(data, size,
								    max_size);
			wire_put_hdr_at(data + out, type, len);
			memmove(data + out + WIRE_HDR_LEN, p, len);
			out += WIRE_HDR_LEN + len;
		}
	}
	return out;
}
#endif /* WIRE_FUZZ_NO_MUTATOR */

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
