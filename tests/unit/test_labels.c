/*
 * test_labels.c - label sets from code (wire.h's "Labels"): LABELS frames,
 * WIRE_SF_LABELS samples and HEAP ALLOC_LABELS records, decoded by
 * collector/daemon/conn.h through a real socket pair, and the labels the
 * pprof builder (pprof.h) writes for them, read back with protobuf-c.
 *
 * Part 1 sends valid streams and checks that a sample's set is part of
 * its key and reaches the profile as string labels (an empty value
 * included); part 2 sends each malformed kind and checks that the
 * connection closes and the frame's data stays out; part 3 checks what
 * spans connections and processes: a reconnection's replay, two
 * processes' sets merged by content, and a symtab compaction.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "sample/labels.h"
#include "daemon/agg.h"
#include "daemon/conn.h"
#include "daemon/pprof.h"
#include "daemon/proc.h"
#include "daemon/symtab.h"
#include "profile.pb-c.h"
#include "pyprof/wire.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;

/* ---- stream building -------------------------------------------------------- */

struct buf {
	uint8_t p[1 << 16];
	size_t len;
};

static uint8_t scratch[1 << 16];

static struct wire_out payload(void)
{
	return (struct wire_out){ scratch, scratch + sizeof(scratch), 1 };
}

static void put_frame(struct buf *b, unsigned type, const struct wire_out *w)
{
	size_t n = (size_t)(w->p - scratch);
	if (!w->ok || b->len + WIRE_HDR_LEN + n > sizeof(b->p))
		abort();
	wire_put_hdr_at(b->p + b->len, type, n);
	memcpy(b->p + b->len + WIRE_HDR_LEN, scratch, n);
	b->len += WIRE_HDR_LEN + n;
}

static void frame_v(struct buf *b, unsigned type, const uint64_t *v, size_t n)
{
	struct wire_out w = payload();
	for (size_t i = 0; i < n; i++)
		wire_put_varint(&w, v[i]);
	put_frame(b, type, &w);
}

#define FRAME(b, type, ...)                                 \
	frame_v(b, type, (const uint64_t[]){ __VA_ARGS__ }, \
		sizeof((const uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t))

static void hello(struct buf *b, uint64_t pid, uint64_t seq)
{
	struct wire_out w = payload();
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	wire_put_tag_varint(&w, WIRE_H_VERSION, WIRE_VERSION);
	wire_put_tag_varint(&w, WIRE_H_PID, pid);
	wire_put_tag_varint(&w, WIRE_H_START_UNIX_NS, 1700000000000000000ull);
	wire_put_tag_varint(&w, WIRE_H_START_MONO_NS, 1000);
	wire_put_tag_varint(&w, WIRE_H_PERIOD_NS, 10000000);
	wire_put_tag_varint(&w, WIRE_H_CONN_SEQ, seq);
	put_frame(b, WIRE_HELLO, &w);
}

static void string(struct buf *b, uint64_t id, const char *s)
{
	struct wire_out w = payload();
	wire_put_varint(&w, id);
	wire_put_bytes(&w, s, strlen(s));
	put_frame(b, WIRE_STRING, &w);
}

/* Strings 1..9: "t.py" "main" "work" "MainThread" "endpoint" "/api/users"
 * "/api/items" "" "user"; a function, a location, node 1 and thread 1. */
static void defs(struct buf *b, uint64_t tid)
{
	static const char *const s[] = { "t.py", "main", "work",
					 "MainThread", "endpoint",
					 "/api/users", "/api/items", "",
					 "user" };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		string(b, i + 1, s[i]);
	FRAME(b, WIRE_FUNCTION, 1, 2, 2, 1, 1);
	FRAME(b, WIRE_LOCATION, 1, 1, 3);
	FRAME(b, WIRE_NODE, 1, 0, 1);
	FRAME(b, WIRE_THREAD, 1, tid, 4);
}

/* One SAMPLES record of count n on node 1, thread 1, with set (0: no
 * WIRE_SF_LABELS). */
static void sample(struct buf *b, uint64_t n, uint64_t set)
{
	if (set)
		FRAME(b, WIRE_SAMPLES, 5000, 1, 1, 0, n, n * 10000000,
		      WIRE_SF_LABELS, set);
	else
		FRAME(b, WIRE_SAMPLES, 5000, 1, 1, 0, n, n * 10000000, 0);
}

/* ---- harness ------------------------------------------------------------------ */

struct world {
	struct symtab *st;
	struct procs *reg;
};

struct client {
	int peer;
	struct conn *c;
	int closed;
};

static int world_open(struct world *w)
{
	w->st = symtab_new();
	w->reg = w->st ? procs_new(w->st) : NULL;
	return w->reg ? 0 : -ENOMEM;
}

static void world_close(struct world *w)
{
	struct proc *p;
	while ((p = procs_first(w->reg)))
		procs_remove(w->reg, p);
	procs_free(w->reg);
	symtab_free(w->st);
}

/* A connection to w that is sent b whole. */
static int client_send(struct world *w, struct client *cl,
		       const struct buf *b)
{
	int fds[2];
	memset(cl, 0, sizeof(*cl));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
		return -errno;
	cl->peer = fds[1];
	cl->c = conn_new(fds[0], getpid(), getuid(), w->reg);
	if (!cl->c)
		return -ENOMEM;
	for (size_t off = 0; off < b->len && !cl->closed;) {
		ssize_t n = write(cl->peer, b->p + off, b->len - off);
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (n > 0)
			off += (size_t)n;
		cl->closed = conn_read(cl->c, 1);
	}
	if (!cl->closed)
		cl->closed = conn_read(cl->c, 1);
	return 0;
}

/* Ends the connection; the process stays in the registry. */
static void client_end(struct client *cl)
{
	conn_free(cl->c);
	close(cl->peer);
}

static Profile *build(struct world *w, int heap)
{
	static uint8_t raw[1 << 20];
	const struct proc *procs[8];
	struct pprof_opts po = { .proc_labels = 1, .heap = heap };
	size_t n = 0;
	void *gz = NULL;
	size_t len = 0;
	z_stream zs = { 0 };
	Profile *prof = NULL;

	for (const struct proc *p = procs_first(w->reg); p && n < 8;
	     p = proc_next(p))
		procs[n++] = p;
	if (pprof_build(w->st, procs, n, &po, &gz, &len, NULL) < 0 ||
	    inflateInit2(&zs, 15 + 32) != Z_OK) {
		free(gz);
		return NULL;
	}
	zs.next_in = gz;
	zs.avail_in = (uInt)len;
	zs.next_out = raw;
	zs.avail_out = sizeof(raw);
	if (inflate(&zs, Z_FINISH) == Z_STREAM_END)
		prof = perftools__profiles__profile__unpack(NULL, zs.total_out,
							    raw);
	inflateEnd(&zs);
	free(gz);
	return prof;
}

/* Sample s's string label key, or NULL; *n_key counts labels with it. */
static const char *label(const Profile *prof, const Sample *s,
			 const char *key, size_t *n_key)
{
	const char *v = NULL;
	*n_key = 0;
	for (size_t i = 0; i < s->n_label; i++) {
		if (strcmp(prof->string_table[s->label[i]->key], key))
			continue;
		++*n_key;
		/* index 0 would be read as "no string" (pprof_builder.c) */
		if (s->label[i]->str > 0)
			v = prof->string_table[s->label[i]->str];
	}
	return v;
}

/* The sample whose first value is count, or NULL. */
static const Sample *by_count(const Profile *prof, int64_t count)
{
	for (size_t i = 0; i < prof->n_sample; i++)
		if (prof->sample[i]->value[0] == count)
			return prof->sample[i];
	return NULL;
}

static int has(const Profile *prof, int64_t count, const char *key,
	       const char *value)
{
	const Sample *s = by_count(prof, count);
	size_t n;
	const char *v = s ? label(prof, s, key, &n) : NULL;
	if (!value)
		return s && n == 0;
	return v && n == 1 && !strcmp(v, value);
}

/* ---- 1. valid streams -------------------------------------------------------- */

static void test_samples(void)
{
	struct world w;
	struct client cl;
	struct buf *b = calloc(1, sizeof(*b));
	Profile *prof;

	CHECK_OR_RETURN(b && world_open(&w) == 0, "1.0 harness", );
	hello(b, 100, 0);
	defs(b, 100);
	FRAME(b, WIRE_LABELS, 1, 5, 6);	      /* endpoint=/api/users */
	FRAME(b, WIRE_LABELS, 2, 9, 8, 5, 7); /* user="", endpoint=/api/items */
	sample(b, 3, 1);
	sample(b, 2, 2);
	sample(b, 1, 0);
	sample(b, 4, 1); /* the same key as the first: 3 + 4 */
	CHECK(client_send(&w, &cl, b) == 0 && !cl.closed,
	      "1.1 a labelled stream is taken whole");
	const struct proc *p = procs_first(w.reg);
	CHECK(p && agg_len(proc_agg(p)) == 3 &&
		      agg_total_count(proc_agg(p)) == 10,
	      "1.2 one stack, three sets (none included): three keys");
	prof = build(&w, 0);
	CHECK_OR_RETURN(prof != NULL, "1.3 the profile builds and decodes", );
	CHECK(prof->n_sample == 3, "1.4 three samples");
	CHECK(has(prof, 7, "endpoint", "/api/users") &&
		      has(prof, 7, "user", NULL),
	      "1.5 set 1's one label, on the sample of its 7 counts");
	CHECK(has(prof, 2, "endpoint", "/api/items") &&
		      has(prof, 2, "user", ""),
	      "1.6 set 2's two labels, the empty value a string label");
	CHECK(has(prof, 1, "endpoint", NULL) && has(prof, 1, "user", NULL),
	      "1.7 the unlabelled sample has neither");
	CHECK(has(prof, 2, "thread_name", "MainThread") &&
		      has(prof, 7, "process", NULL) == 0,
	      "1.8 beside the collector's own labels");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	client_end(&cl);
	world_close(&w);
	free(b);
}

static void test_heap(void)
{
	struct world w;
	struct client cl;
	struct buf *b = calloc(1, sizeof(*b));
	Profile *prof;

	CHECK_OR_RETURN(b && world_open(&w) == 0, "1.10 harness", );
	hello(b, 101, 0);
	defs(b, 101);
	FRAME(b, WIRE_LABELS, 1, 5, 6);
	/* rate 1 (every allocation recorded): ALLOC_LABELS 1000 bytes
	 * under set 1, a plain ALLOC of 24 bytes */
	FRAME(b, WIRE_HEAP, 1, WIRE_HEAP_ALLOC_LABELS, 1, 1, 1000, 0x1000, 1,
	      WIRE_HEAP_ALLOC, 1, 1, 24, 0x2000);
	CHECK(client_send(&w, &cl, b) == 0 && !cl.closed,
	      "1.11 HEAP with ALLOC_LABELS is taken whole");
	prof = build(&w, 1);
	CHECK_OR_RETURN(prof != NULL, "1.12 the heap profile builds", );
	const Sample *lab = NULL, *plain = NULL;
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Sample *s = prof->sample[i];
		if (s->n_value == 6 && s->value[1] == 1000)
			lab = s;
		if (s->n_value == 6 && s->value[1] == 24)
			plain = s;
	}
	size_t n1 = 0, n2 = 0;
	const char *v1 = lab ? label(prof, lab, "endpoint", &n1) : NULL;
	if (plain)
		label(prof, plain, "endpoint", &n2);
	CHECK(lab && plain && lab->value[3] == 1000 && v1 &&
		      !strcmp(v1, "/api/users") && n1 == 1 && n2 == 0,
	      "1.13 the labelled allocation is a sample of its own, with "
	      "its label on all six values");
	perftools__profiles__profile__free_unpacked(prof, NULL);
	client_end(&cl);
	world_close(&w);
	free(b);
}

/* ---- 2. refusals ----------------------------------------------------------------- */

/* Sends the valid prefix, then bad (after one good labelled sample): the
 * connection must close, and only the good sample count. */
static void refused(const char *what, void (*bad)(struct buf *b))
{
	struct world w;
	struct client cl;
	struct buf *b = calloc(1, sizeof(*b));

	CHECK_OR_RETURN(b && world_open(&w) == 0, what, );
	hello(b, 102, 0);
	defs(b, 102);
	FRAME(b, WIRE_LABELS, 1, 5, 6);
	sample(b, 1, 1);
	bad(b);
	sample(b, 5, 1); /* never reached */
	CHECK(client_send(&w, &cl, b) == 0 && cl.closed &&
		      procs_first(w.reg) &&
		      proc_info(procs_first(w.reg))->n_samples == 1,
	      what);
	client_end(&cl);
	world_close(&w);
	free(b);
}

static void bad_gap(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 3, 5, 6);
}
static void bad_repeat(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 1, 5, 7);
}
static void bad_none(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 2);
}
static void bad_odd(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 2, 5, 6, 9);
}
static void bad_key(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 2, 50, 6);
}
static void bad_value(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 2, 5, 50);
}
static void bad_empty(struct buf *b)
{
	FRAME(b, WIRE_LABELS, 2, 8, 6);
}
static void bad_twice(struct buf *b)
{
	string(b, 10, "endpoint"); /* another id, the same key */
	FRAME(b, WIRE_LABELS, 2, 5, 6, 9, 7, 10, 7);
}

static void bad_many(struct buf *b)
{
	struct wire_out w = payload();
	char key[16];
	for (unsigned i = 0; i <= WIRE_MAX_LABELS; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		string(b, 10 + i, key);
	}
	wire_put_varint(&w, 2);
	for (unsigned i = 0; i <= WIRE_MAX_LABELS; i++) {
		wire_put_varint(&w, 10 + i);
		wire_put_varint(&w, 6);
	}
	put_frame(b, WIRE_LABELS, &w);
}

static void bad_sample_set(struct buf *b)
{
	sample(b, 2, 2);
}
static void bad_sample_cut(struct buf *b)
{
	FRAME(b, WIRE_SAMPLES, 5000, 1, 1, 0, 1, 10000000, WIRE_SF_LABELS);
}

static void bad_heap_set(struct buf *b)
{
	FRAME(b, WIRE_HEAP, 1, WIRE_HEAP_ALLOC_LABELS, 1, 1, 64, 0x1000, 2);
}

static const char *reserved_key;
static void bad_reserved(struct buf *b)
{
	string(b, 10, reserved_key);
	FRAME(b, WIRE_LABELS, 2, 10, 6);
}

static void test_refusals(void)
{
	static const char *const names[] = { WIRE_RESERVED_LABELS };
	static char what[sizeof(names) / sizeof(names[0])][64];

	refused("2.1 a set id out of order", bad_gap);
	refused("2.2 a set id defined twice", bad_repeat);
	refused("2.3 a set without pairs", bad_none);
	refused("2.4 a key without its value", bad_odd);
	refused("2.5 an undefined key string", bad_key);
	refused("2.6 an undefined value string", bad_value);
	refused("2.7 an empty key", bad_empty);
	refused("2.8 one key twice (two string ids, one content)", bad_twice);
	refused("2.9 more than WIRE_MAX_LABELS pairs", bad_many);
	refused("2.10 a sample naming an undefined set", bad_sample_set);
	refused("2.11 a sample whose set id is cut off", bad_sample_cut);
	refused("2.12 an ALLOC_LABELS naming an undefined set", bad_heap_set);
	/* every reserved name, each on its own connection */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		reserved_key = names[i];
		snprintf(what[i], sizeof(what[i]),
			 "2.13 the reserved key \"%s\"", names[i]);
		refused(what[i], bad_reserved);
	}
}

/* The boundary: exactly WIRE_MAX_LABELS pairs are fine. */
static void test_max(void)
{
	struct world w;
	struct client cl;
	struct buf *b = calloc(1, sizeof(*b));
	struct wire_out o = payload();
	char key[16];

	CHECK_OR_RETURN(b && world_open(&w) == 0, "2.20 harness", );
	hello(b, 103, 0);
	defs(b, 103);
	for (unsigned i = 0; i < WIRE_MAX_LABELS; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		string(b, 10 + i, key);
	}
	wire_put_varint(&o, 1);
	for (unsigned i = 0; i < WIRE_MAX_LABELS; i++) {
		wire_put_varint(&o, 10 + WIRE_MAX_LABELS - 1 - i);
		wire_put_varint(&o, i % 2 ? 8 : 6);
	}
	put_frame(b, WIRE_LABELS, &o);
	sample(b, 1, 1);
	CHECK(client_send(&w, &cl, b) == 0 && !cl.closed,
	      "2.21 a set of WIRE_MAX_LABELS pairs is taken");
	Profile *prof = build(&w, 0);
	/* pair i: key k<N-1-i>, value "" (odd i) or "/api/users" */
	snprintf(key, sizeof(key), "k%u", WIRE_MAX_LABELS - 1);
	const char *v0 = (WIRE_MAX_LABELS - 1) % 2 ? "" : "/api/users";
	CHECK(prof && prof->n_sample == 1 &&
		      prof->sample[0]->n_label >= WIRE_MAX_LABELS + 2 &&
		      has(prof, 1, "k0", v0) && has(prof, 1, key, "/api/users"),
	      "2.22 ... and every pair is a label of its sample");
	if (prof)
		perftools__profiles__profile__free_unpacked(prof, NULL);
	client_end(&cl);
	world_close(&w);
	free(b);
}

/* ---- 3. across connections, processes and compactions ------------------------- */

/* More of a stream on an open connection. */
static void client_more(struct client *cl, const struct buf *b)
{
	if (write(cl->peer, b->p, b->len) != (ssize_t)b->len)
		abort();
	if (!cl->closed)
		cl->closed = conn_read(cl->c, 1);
}

/* The labels of pid's sample of count n: endpoint and user. */
static int both(const Profile *prof, int64_t count)
{
	return has(prof, count, "endpoint", "/api/users") &&
	       has(prof, count, "user", "/api/items");
}

static void test_across(void)
{
	struct world w;
	struct client c0, c1, c2, c3;
	struct buf *b = calloc(1, sizeof(*b));
	Profile *prof;

	CHECK_OR_RETURN(b && world_open(&w) == 0, "3.0 harness", );
	/* process 200 connects; then a process whose set is interned
	 * before 200's and then forgotten, so that a compaction renumbers
	 * the others (200 keeps the registry, and the symtab, from being
	 * emptied when 199 goes) */
	hello(b, 200, 0);
	defs(b, 200);
	CHECK(client_send(&w, &c1, b) == 0 && !c1.closed, "3.1 process 200");
	b->len = 0;
	hello(b, 199, 0);
	defs(b, 199);
	FRAME(b, WIRE_LABELS, 1, 5, 7);
	sample(b, 100, 1);
	CHECK(client_send(&w, &c0, b) == 0 && !c0.closed, "3.2 process 199");
	client_end(&c0);
	procs_remove(w.reg, proc_next(procs_first(w.reg)));
	b->len = 0;
	FRAME(b, WIRE_LABELS, 1, 5, 6, 9, 7);
	sample(b, 3, 1);
	client_more(&c1, b);
	CHECK(!c1.closed, "3.12 process 200's set, after 199's");
	client_end(&c1);
	/* it reconnects and replays from id 1, the pairs in another order */
	b->len = 0;
	hello(b, 200, 1);
	defs(b, 200);
	FRAME(b, WIRE_LABELS, 1, 9, 7, 5, 6);
	sample(b, 4, 1);
	CHECK(client_send(&w, &c2, b) == 0 && !c2.closed,
	      "3.3 its replay is taken");
	/* another process: the same set under other string ids */
	b->len = 0;
	hello(b, 201, 0);
	defs(b, 201);
	string(b, 10, "endpoint");
	string(b, 11, "/api/items");
	FRAME(b, WIRE_LABELS, 1, 11, 8, 9, 11, 10, 6);
	/* set 1 is {"/api/items": "", user, endpoint}: not the same; set 2
	 * is the same as process 200's */
	FRAME(b, WIRE_LABELS, 2, 9, 11, 10, 6);
	sample(b, 5, 2);
	CHECK(client_send(&w, &c3, b) == 0 && !c3.closed, "3.4 process 201");
	CHECK(symtab_n_labels(w.st) == 3,
	      "3.5 sets interned by content: 199's, 200's (twice), 201's "
	      "first, 201's second = 200's");
	const struct proc *p200 = procs_first(w.reg);
	CHECK(p200 && agg_len(proc_agg(p200)) == 1 &&
		      agg_total_count(proc_agg(p200)) == 7,
	      "3.6 the replayed set is the same key: 3 + 4 on one entry");

	prof = build(&w, 0);
	CHECK(prof && prof->n_sample == 2 && both(prof, 7) && both(prof, 5),
	      "3.7 the merged profile labels both processes' samples alike");
	if (prof)
		perftools__profiles__profile__free_unpacked(prof, NULL);

	CHECK(procs_compact(w.reg) == 0 && symtab_n_labels(w.st) == 2,
	      "3.8 a compaction drops the forgotten set");
	/* after it, both open sessions' set ids still name their sets */
	b->len = 0;
	sample(b, 10, 1);
	client_more(&c2, b);
	b->len = 0;
	sample(b, 20, 2);
	client_more(&c3, b);
	CHECK(!c2.closed && !c3.closed, "3.9 the sessions carry on");
	prof = build(&w, 0);
	CHECK(prof && prof->n_sample == 2 && both(prof, 17) && both(prof, 25),
	      "3.10 renumbered sets keep their labels and their keys");
	if (prof)
		perftools__profiles__profile__free_unpacked(prof, NULL);
	client_end(&c2);
	client_end(&c3);
	world_close(&w);
	free(b);
}

/* The set as "k=v,k=v" (the agent's interned strings), for comparing. */
static void set_text(const struct intern *in, uint32_t id, char *out,
		     size_t cap)
{
	size_t at = 0;
	out[0] = 0;
	if (!id)
		return;
	const struct ilabels *l = &in->labels[id - 1];
	for (uint32_t i = 0; i < l->n; i++) {
		const struct istr *k = &in->strs[in->label_kv[l->first + 2 * i] - 1];
		const struct istr *v =
			&in->strs[in->label_kv[l->first + 2 * i + 1] - 1];
		at += (size_t)snprintf(out + at, cap - at, "%s%.*s=%.*s",
				       i ? "," : "", (int)k->len, k->s,
				       (int)v->len, v->s);
	}
}

/* Whether set id reads want ("k=v,k=v"); says what it is if not. */
static int set_is(const struct intern *in, uint32_t id, const char *want)
{
	char got[256];
	set_text(in, id, got, sizeof got);
	if (strcmp(got, want))
		fprintf(stderr, "set %u is \"%s\", not \"%s\"\n", id, got, want);
	return !strcmp(got, want);
}

#define LIT(lit) (const uint8_t *)(lit), sizeof(lit) - 1

/* The agent's sets with an asyncio task's name: task=<name> in its
 * sorted place, replacing the program's own "task", alone when the
 * program set nothing; torn encodings still refused. */
static void test_task_name(void)
{
	struct intern in;
	memset(&in, 0, sizeof in);
	CHECK(set_is(&in, labels_set_id(&in, LIT("a\0x\0z\0y\0"), LIT("worker")),
		     "a=x,task=worker,z=y"),
	      "4.1 task= goes in its sorted place");
	CHECK(set_is(&in,
		     labels_set_id(&in, LIT("a\0x\0task\0mine\0"), LIT("worker")),
		     "a=x,task=worker"),
	      "4.2 ... and replaces the program's own task label");
	CHECK(set_is(&in, labels_set_id(&in, NULL, 0, LIT("Task-7")),
		     "task=Task-7"),
	      "4.3 a task alone");
	CHECK(set_is(&in, labels_set_id(&in, LIT("tab\0v\0"), LIT("t")),
		     "tab=v,task=t"),
	      "4.4 'tab' sorts before 'task'");
	CHECK(labels_set_id(&in, LIT("z\0y\0a\0x\0"), LIT("t")) == 0,
	      "4.5 an unsorted encoding is refused, task or not");
	CHECK(labels_set_id(&in, LIT("a\0"), LIT("t")) == 0,
	      "4.6 a name without a value is refused");
	CHECK(labels_set_id(&in, NULL, 0, NULL, 0) == 0, "4.7 nothing: no set");
	intern_free(&in);
}

int main(void)
{
	test_samples();
	test_heap();
	test_refusals();
	test_max();
	test_across();
	test_task_name();
	return check_summary();
}
