/*
 * test_hello.c - HELLO and BYE decoding (collector/daemon/hello.h) on
 * their own, without a connection.
 *
 * 1. Every HELLO and BYE frame of the wire fixtures (tests/data/wire/,
 *    the malformed-stream fixtures, and tests/fuzz/wire_seeds/, one valid
 *    stream per protocol feature; both written by the independent Python
 *    encoder) decodes as expect.tsv says: the fixtures' own HELLO, or the
 *    line the collector logs for bad-magic and wrong-version.
 * 2. Every truncation of a real HELLO: inside a field it is malformed, at
 *    a field boundary it is either whole or refused for what is missing.
 * 3. Garbled HELLOs: every byte flipped (no crash, a consistent answer),
 *    and one case per rule (order, kinds, repeats, PID, mode, ARG limit,
 *    the tags conn.c takes apart: SAMPLING, WRITTEN, REFUSED).
 * 4. BYE: fields, unknown tags skipped, truncations refused.
 * Each decode reads a buffer of exactly the payload's size, so ASan
 * builds catch a read past its end.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "daemon/hello.h"
#include "pyprof/wire.h"

static char root[PATH_MAX];

/* ---- helpers ------------------------------------------------------------ */

/* Decodes a copy of (p, len) of exactly len bytes; the decoded byte
 * strings point into that copy, kept until the next decode. */
static int decode(const uint8_t *p, size_t len, struct hello *hl, char *err)
{
	static uint8_t *copy;
	free(copy);
	copy = malloc(len ? len : 1);
	if (!copy)
		abort();
	memcpy(copy, p, len);
	return hello_decode(copy, len, hl, err);
}

static int bytes_eq(struct proc_bytes b, const char *s)
{
	return b.len == strlen(s) && memcmp(b.p, s, b.len) == 0;
}

/* A HELLO payload being built. */
struct pl {
	uint8_t b[1u << 20];
	struct wire_out w;
};

static void pl_start(struct pl *pl, int magic)
{
	pl->w = (struct wire_out){ pl->b, pl->b + sizeof(pl->b), 1 };
	if (magic) {
		memcpy(pl->w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
		pl->w.p += WIRE_MAGIC_LEN;
	}
}

static void pl_v(struct pl *pl, uint64_t tag, uint64_t v)
{
	wire_put_varint(&pl->w, tag << 1);
	wire_put_varint(&pl->w, v);
}

static void pl_s(struct pl *pl, uint64_t tag, const char *s)
{
	wire_put_varint(&pl->w, tag << 1 | 1);
	wire_put_bytes(&pl->w, s, strlen(s));
}

static size_t pl_len(const struct pl *pl)
{
	if (!pl->w.ok)
		abort();
	return (size_t)(pl->w.p - pl->b);
}

/* Appends (p, n) to pl: a real HELLO to build variants on. */
static void pl_copy(struct pl *pl, const uint8_t *p, size_t n)
{
	pl->w = (struct wire_out){ pl->b, pl->b + sizeof(pl->b), 1 };
	memcpy(pl->b, p, n);
	pl->w.p += n;
}

/* Decodes pl; 1 if rc is want_rc and (when rc < 0) err has piece. */
static int pl_says(struct pl *pl, int want_rc, const char *piece)
{
	struct hello hl;
	char err[ERR_LEN];
	int rc = decode(pl->b, pl_len(pl), &hl, err);
	int ok = rc == want_rc && (rc == 0 ? err[0] == 0
					   : strstr(err, piece) != NULL);
	if (!ok)
		fprintf(stderr, "  got rc %d, err \"%s\" (wanted %d, \"%s\")\n",
			rc, err, want_rc, piece);
	hello_free(&hl);
	return ok;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	if (!f)
		return NULL;
	*len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return buf;
}

/* The piece of the log line expect.tsv names for fixture name, or "". */
static void expect_piece(const char *name, char *piece, size_t cap)
{
	char path[PATH_MAX + 64], line[512];
	snprintf(path, sizeof(path), "%s/tests/data/wire/expect.tsv", root);
	FILE *f = fopen(path, "r");
	piece[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *t1 = strchr(line, '\t'), *t2;
		if (!t1 || (t2 = strchr(t1 + 1, '\t')) == NULL)
			continue;
		*t1 = 0;
		if (strcmp(line, name))
			continue;
		t2[strcspn(t2, "\n")] = 0;
		snprintf(piece, cap, "%s", t2 + 1);
	}
	fclose(f);
}

/* ---- 1. the fixtures' frames ---------------------------------------------- */

struct seen {
	const char *name;  /* fixture */
	const char *piece; /* expect.tsv's, for a refused HELLO */
	int hellos, refused, byes;
};

static void check_hello_frame(struct seen *sn, const uint8_t *p, size_t n)
{
	struct hello hl;
	char err[ERR_LEN], what[600];
	int rc = decode(p, n, &hl, err);

	sn->hellos++;
	if (!strcmp(sn->name, "bad-magic") ||
	    !strcmp(sn->name, "wrong-version")) {
		snprintf(what, sizeof(what), "1.2 %s: refused as expect.tsv "
					     "says (\"%s\")",
			 sn->name, sn->piece);
		CHECK(rc == -EPROTO && sn->piece[0] &&
			      strstr(err, sn->piece),
		      what);
		if (rc < 0)
			sn->refused++;
		hello_free(&hl);
		return;
	}
	snprintf(what, sizeof(what), "1.3 %s: its HELLO decodes", sn->name);
	CHECK(rc == 0 && err[0] == 0, what);
	if (rc == 0) {
		snprintf(what, sizeof(what), "1.4 %s: version, pid, mode, "
					     "exe, comm",
			 sn->name);
		CHECK(hl.h.version == WIRE_VERSION && hl.h.pid > 0 &&
			      (hl.h.mode == WIRE_MODE_CPU ||
			       hl.h.mode == WIRE_MODE_WALL) &&
			      hl.h.exe.len > 0 && hl.h.comm.len > 0 &&
			      hl.h.args == hl.args && !hl.refused,
		      what);
		if (strncmp(sn->name, "seed:", 5)) {
			/* wire_client.py's hello(): badclient is the
			 * fixtures' own; two-hellos' second is plain */
			const char *comm =
				sn->hellos == 1 ? "badclient" : "python3";
			snprintf(what, sizeof(what), "1.5 %s: pid 4242, comm "
						     "%s, python3 app.py, the rest as sent",
				 sn->name, comm);
			CHECK(hl.h.pid == 4242 && hl.h.ppid == 1 &&
				      bytes_eq(hl.h.comm, comm) &&
				      bytes_eq(hl.h.exe, "/usr/bin/python3") &&
				      bytes_eq(hl.h.pyversion, "3.11.7") &&
				      hl.h.period_ns == 10000000 &&
				      hl.h.max_depth == 1024 &&
				      hl.h.has_start_unix && hl.h.has_start_mono &&
				      hl.h.n_args == 2 &&
				      bytes_eq(hl.args[0], "python3") &&
				      bytes_eq(hl.args[1], "app.py"),
			      what);
		}
	}
	hello_free(&hl);
}

static void check_bye_frame(struct seen *sn, const uint8_t *p, size_t n)
{
	struct proc_bye b;
	char what[600];
	snprintf(what, sizeof(what), "1.6 %s: its BYE decodes", sn->name);
	CHECK(bye_decode(p, n, &b) == 0 && b.has_samples, what);
	sn->byes++;
}

/* Walks one connection's frames until one is unknown or cut short. */
static void walk_frames(struct seen *sn, const uint8_t *p, size_t len)
{
	while (len >= WIRE_HDR_LEN) {
		unsigned type;
		size_t n;
		wire_get_hdr(p, &type, &n);
		if (type == 0 || type > WIRE_HEAP_SNAPSHOT ||
		    n > len - WIRE_HDR_LEN)
			return;
		if (type == WIRE_HELLO)
			check_hello_frame(sn, p + WIRE_HDR_LEN, n);
		else if (type == WIRE_BYE)
			check_bye_frame(sn, p + WIRE_HDR_LEN, n);
		p += WIRE_HDR_LEN + n;
		len -= WIRE_HDR_LEN + n;
	}
}

/* Every .bin of dir, its connections split at the fuzz harness's
 * "@@conn@@". Returns the files read. */
static int walk_dir(const char *dir, const char *prefix, struct seen *total)
{
	static const char sep[] = "@@conn@@";
	char path[PATH_MAX + 300], name[300], piece[256];
	struct dirent *e;
	int files = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len, nl = strlen(e->d_name);
		if (nl < 5 || strcmp(e->d_name + nl - 4, ".bin"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(name, sizeof(name), "%s%.*s", prefix, (int)(nl - 4),
			 e->d_name);
		expect_piece(name, piece, sizeof(piece));
		const uint8_t *p = read_file(path, &len);
		if (!p)
			continue;
		struct seen sn = { name, piece, 0, 0, 0 };
		for (;;) {
			const uint8_t *at = memmem(p, len, sep, strlen(sep));
			size_t n = at ? (size_t)(at - p) : len;
			walk_frames(&sn, p, n);
			if (!at)
				break;
			p = at + strlen(sep);
			len -= n + strlen(sep);
		}
		total->hellos += sn.hellos;
		total->refused += sn.refused;
		total->byes += sn.byes;
		files++;
	}
	closedir(d);
	return files;
}

static void test_fixtures(void)
{
	char dir[PATH_MAX + 64];
	struct seen total = { 0 };
	int fixtures, seeds;

	snprintf(dir, sizeof(dir), "%s/tests/data/wire", root);
	fixtures = walk_dir(dir, "", &total);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/wire_seeds", root);
	seeds = walk_dir(dir, "seed:", &total);
	printf("fixtures: %d files, %d seeds: %d HELLO (%d refused), "
	       "%d BYE\n",
	       fixtures, seeds, total.hellos, total.refused,
	       total.byes);
	CHECK(fixtures >= 30 && seeds >= 6, "1.0 every fixture and seed read");
	CHECK(total.hellos >= fixtures + seeds - 5,
	      "1.1 a HELLO in (nearly) every file");
	CHECK(total.refused == 2, "1.2 bad-magic and wrong-version refused");
	CHECK(total.byes >= 5, "1.6 the seeds' BYEs read");
}

/* ---- 2. truncations ------------------------------------------------------- */

/* A real HELLO: the first frame of a fixture. */
static struct pl base;
static size_t base_len;

static int load_base(void)
{
	char path[PATH_MAX + 64];
	size_t len, n;
	unsigned type;
	snprintf(path, sizeof(path), "%s/tests/data/wire/truncated.bin", root);
	const uint8_t *p = read_file(path, &len);
	if (!p || len < WIRE_HDR_LEN)
		return -1;
	wire_get_hdr(p, &type, &n);
	if (type != WIRE_HELLO || n > len - WIRE_HDR_LEN)
		return -1;
	pl_copy(&base, p + WIRE_HDR_LEN, n);
	base_len = n;
	return 0;
}

/* Where each field of base ends (read independently of hello.c). */
static int field_end(size_t at)
{
	struct wire_in r = { base.b + WIRE_MAGIC_LEN, base.b + base_len, 1 };
	if (at == WIRE_MAGIC_LEN)
		return 1;
	while (r.ok && !wire_at_end(&r)) {
		uint64_t key = wire_get_varint(&r);
		size_t n;
		if (key & 1)
			wire_get_bytes(&r, &n, WIRE_MAX_STRING);
		else
			wire_get_varint(&r);
		if ((size_t)(r.p - base.b) == at)
			return 1;
	}
	return 0;
}

static void test_truncations(void)
{
	struct hello hl;
	char err[ERR_LEN];
	int bad = 0, whole = 0, boundaries = 0;

	for (size_t k = 0; k < base_len; k++) {
		int rc = decode(base.b, k, &hl, err);
		if (k >= WIRE_MAGIC_LEN && field_end(k)) {
			/* whole fields: enough of them, or refused for
			 * what is missing */
			boundaries++;
			whole += rc == 0;
			bad += rc == 0 ? err[0] != 0
				       : rc != -EPROTO || !err[0] ||
						 strstr(err, "malformed");
		} else if (rc != -EPROTO) {
			bad++;
		} else {
			bad += !strstr(err, k < WIRE_MAGIC_LEN
						    ? "magic"
						    : "a field is malformed");
		}
		hello_free(&hl);
	}
	CHECK(bad == 0, "2.1 every truncation refused, for the right reason");
	CHECK(boundaries > 10 && whole > 5 && whole < boundaries,
	      "2.2 cut at a field boundary: whole once VERSION and PID are in");
	CHECK(decode(base.b, base_len, &hl, err) == 0,
	      "2.3 the whole HELLO decodes");
	hello_free(&hl);
}

/* ---- 3. garbled ----------------------------------------------------------- */

/* Every byte of base flipped in turn: no crash, and an answer that holds
 * together (an error with a reason, or a HELLO within the rules). */
static void test_flips(void)
{
	static const uint8_t masks[] = { 0xff, 0x80, 0x01, 0x7f };
	struct pl *g = malloc(sizeof(*g));
	struct hello hl;
	char err[ERR_LEN];
	int bad = 0, refused = 0;

	if (!g)
		abort();
	for (size_t i = 0; i < base_len; i++)
		for (size_t m = 0; m < sizeof(masks); m++) {
			pl_copy(g, base.b, base_len);
			g->b[i] ^= masks[m];
			int rc = decode(g->b, base_len, &hl, err);
			if (rc == 0)
				bad += err[0] != 0 || hl.h.pid == 0 ||
				       hl.h.pid > INT32_MAX ||
				       hl.h.version != WIRE_VERSION ||
				       hl.h.mode > WIRE_MODE_WALL ||
				       hl.h.n_args > WIRE_MAX_ARGS;
			else
				refused++, bad += rc != -EPROTO || !err[0];
			hello_free(&hl);
		}
	CHECK(bad == 0, "3.1 flipped bytes: an error with a reason, or a "
			"HELLO within the rules");
	CHECK(refused > 0, "3.2 some flips refused");
	free(g);
}

/* A minimal HELLO: VERSION, PID. */
static void minimal(struct pl *pl)
{
	pl_start(pl, 1);
	pl_v(pl, WIRE_H_VERSION, WIRE_VERSION);
	pl_v(pl, WIRE_H_PID, 99);
}

static void test_rules(void)
{
	static struct pl pl;
	struct hello hl;
	char err[ERR_LEN];

	pl_start(&pl, 0);
	pl_v(&pl, WIRE_H_VERSION, WIRE_VERSION);
	CHECK(pl_says(&pl, -EPROTO, "HELLO without the PYPROF magic"),
	      "3.3 no magic");
	pl_start(&pl, 1);
	CHECK(pl_says(&pl, -EPROTO, "HELLO without VERSION"),
	      "3.4 magic alone");
	pl_start(&pl, 1);
	pl_v(&pl, WIRE_H_PID, 99);
	pl_v(&pl, WIRE_H_VERSION, WIRE_VERSION);
	CHECK(pl_says(&pl, -EPROTO, "HELLO must start with VERSION (got tag 2)"),
	      "3.5 VERSION not first");
	pl_start(&pl, 1);
	pl_v(&pl, WIRE_H_SAMPLING, 1);
	CHECK(pl_says(&pl, -EPROTO, "must start with VERSION (got tag 20)"),
	      "3.6 SAMPLING first");
	pl_start(&pl, 1);
	pl_v(&pl, WIRE_H_VERSION, 3);
	CHECK(pl_says(&pl, -EPROTO, "protocol version 3 not supported (this "
				    "collector speaks 1)"),
	      "3.7 another version");

	pl_start(&pl, 1);
	pl_v(&pl, WIRE_H_VERSION, WIRE_VERSION);
	CHECK(pl_says(&pl, -EPROTO, "HELLO without a valid PID"), "3.8 no PID");
	pl_v(&pl, WIRE_H_PID, 0);
	CHECK(pl_says(&pl, -EPROTO, "HELLO without a valid PID"), "3.9 PID 0");
	pl_start(&pl, 1);
	pl_v(&pl, WIRE_H_VERSION, WIRE_VERSION);
	pl_v(&pl, WIRE_H_PID, (uint64_t)INT32_MAX + 1);
	CHECK(pl_says(&pl, -EPROTO, "HELLO without a valid PID"),
	      "3.10 PID over INT32_MAX");

	minimal(&pl);
	CHECK(pl_says(&pl, 0, ""), "3.11 VERSION and PID are enough");
	pl_v(&pl, WIRE_H_MODE, 7);
	CHECK(pl_says(&pl, -EPROTO, "HELLO: unknown mode 7"), "3.12 mode 7");
	minimal(&pl);
	pl_v(&pl, WIRE_H_PID, 98);
	CHECK(pl_says(&pl, -EPROTO, "HELLO tag 2 repeated"), "3.13 PID twice");
	minimal(&pl);
	pl_s(&pl, WIRE_H_MODE, "cpu");
	CHECK(pl_says(&pl, -EPROTO, "HELLO tag 6 has the wrong kind"),
	      "3.14 MODE as bytes");
	minimal(&pl);
	pl_v(&pl, WIRE_H_EXE, 5);
	CHECK(pl_says(&pl, -EPROTO, "HELLO tag 10 has the wrong kind"),
	      "3.15 EXE as a varint");
	minimal(&pl);
	wire_put_varint(&pl.w, (uint64_t)WIRE_H_EXE << 1 | 1);
	wire_put_varint(&pl.w, WIRE_MAX_STRING + 1);
	for (int i = 0; i <= WIRE_MAX_STRING; i++)
		wire_put_u8(&pl.w, 'x');
	CHECK(pl_says(&pl, -EPROTO, "HELLO: a field is malformed or longer "
				    "than the frame (or than 65536 bytes)"),
	      "3.16 an EXE over WIRE_MAX_STRING");

	/* ARG repeats, up to WIRE_MAX_ARGS */
	minimal(&pl);
	for (int i = 0; i < WIRE_MAX_ARGS; i++)
		pl_s(&pl, WIRE_H_ARG, i ? "arg" : "first");
	CHECK(decode(pl.b, pl_len(&pl), &hl, err) == 0 &&
		      hl.h.n_args == WIRE_MAX_ARGS && hl.h.args == hl.args &&
		      bytes_eq(hl.args[0], "first") &&
		      bytes_eq(hl.args[WIRE_MAX_ARGS - 1], "arg"),
	      "3.17 WIRE_MAX_ARGS ARGs, in order");
	hello_free(&hl);
	pl_s(&pl, WIRE_H_ARG, "one more");
	CHECK(pl_says(&pl, -EPROTO, "HELLO: more than 1024 ARG fields"),
	      "3.18 one ARG too many");
}

/* Tags past COMM: SAMPLING, WRITTEN, REFUSED, and unknown ones. */
static void test_late_tags(void)
{
	static struct pl pl;
	struct hello hl;
	char err[ERR_LEN];

	pl_copy(&pl, base.b, base_len);
	CHECK(decode(pl.b, pl_len(&pl), &hl, err) == 0 &&
		      hl.sampling == -1 && !hl.h.has_written && !hl.refused,
	      "3.19 the fixture sends no SAMPLING, WRITTEN, REFUSED");
	hello_free(&hl);
	pl_v(&pl, 40, 5);
	pl_s(&pl, 41, "future");
	pl_v(&pl, WIRE_H_SAMPLING, 0);
	pl_v(&pl, WIRE_H_WRITTEN, 1234);
	pl_s(&pl, WIRE_H_WRITTEN, "skipped: wrong kind of a late tag");
	CHECK(decode(pl.b, pl_len(&pl), &hl, err) == 0 && hl.sampling == 0 &&
		      hl.h.has_written && hl.h.written == 1234 && !hl.refused &&
		      hl.h.pid == 4242,
	      "3.20 SAMPLING 0, WRITTEN, unknown tags");
	hello_free(&hl);
	pl_v(&pl, WIRE_H_SAMPLING, 7);
	pl_s(&pl, WIRE_H_REFUSED, "Python 3.16 is not supported");
	pl_v(&pl, WIRE_H_REFUSED, 1); /* the wrong kind: skipped */
	CHECK(decode(pl.b, pl_len(&pl), &hl, err) == 0 && hl.sampling == 1 &&
		      hl.refused &&
		      bytes_eq(hl.refused_why, "Python 3.16 is not supported"),
	      "3.21 SAMPLING (last wins) and REFUSED");
	hello_free(&hl);
}

/* ---- 4. BYE --------------------------------------------------------------- */

static void test_bye(void)
{
	static struct pl pl;
	struct proc_bye b;
	int bad = 0;

	size_t ends[16], n_ends = 0;
	pl_start(&pl, 0);
	pl_v(&pl, WIRE_B_SAMPLES, 100);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_LOST, 2);
	ends[n_ends++] = pl_len(&pl);
	pl_s(&pl, 30, "unknown");
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_END_MONO_NS, 5);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_HANDLER_N, 6);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_HANDLER_NS, 7);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_FAULTS, 8);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_ACHIEVED_NS, 9);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_NATIVE_UNMERGED, 10);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, WIRE_B_CPU_SOURCE, WIRE_CPU_CLOCKS);
	ends[n_ends++] = pl_len(&pl);
	pl_v(&pl, 31, 11);
	CHECK(bye_decode(pl.b, pl_len(&pl), &b) == 0 && b.has_samples &&
		      b.samples == 100 && b.has_lost && b.lost == 2 &&
		      b.has_end_mono && b.end_mono_ns == 5 && b.handler_n == 6 &&
		      b.handler_ns == 7 && b.faults == 8 && b.achieved_ns == 9 &&
		      b.has_native && b.native_unmerged == 10 &&
		      b.cpu_source == WIRE_CPU_CLOCKS,
	      "4.1 every BYE field; unknown ones skipped");
	CHECK(bye_decode(pl.b, 0, &b) == 0 && !b.has_samples && !b.has_lost,
	      "4.2 an empty BYE");
	for (size_t k = 1; k < pl_len(&pl); k++) {
		uint8_t *copy = malloc(k);
		if (!copy)
			abort();
		memcpy(copy, pl.b, k);
		int rc = bye_decode(copy, k, &b), at_end = 0;
		for (size_t e = 0; e < n_ends; e++)
			at_end |= ends[e] == k;
		bad += (rc == 0) != at_end;
		bad += rc != 0 && rc != -EPROTO;
		free(copy);
	}
	CHECK(bad == 0, "4.3 a BYE cut inside a field is refused");
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)argc;
	(void)argv;
	CHECK_OR_RETURN(n > 0, "0.1 /proc/self/exe", check_summary());
	exe[n] = 0;
	/* build/tests/test_hello -> the source tree */
	snprintf(root, sizeof(root), "%s/../..", dirname(exe));
	test_fixtures();
	CHECK_OR_RETURN(load_base() == 0, "0.2 truncated.bin starts with a "
					  "HELLO",
			check_summary());
	test_truncations();
	test_flips();
	test_rules();
	test_late_tags();
	test_bye();
	return check_summary();
}
