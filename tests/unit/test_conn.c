/*
 * test_conn.c - decoding and validation of client streams (collector/
 * conn.h and proc.h), through a real socket pair.
 *
 * Each case builds a byte stream with wire.h's encoder, writes it into one
 * end of a socketpair, and lets conn_read take it from the other; then it
 * looks at the process state through proc.h. Valid streams must be taken
 * whole however they are cut into reads; each malformed kind must close
 * the connection (conn_read returns 1) and leave the frame's data out.
 * (The end-to-end test sends the same kinds from an independent Python
 * encoder and checks the log lines.)
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/agg.h"
#include "check.h"
#include "agent/refuse.h"
#include "daemon/conn.h"
#include "daemon/heapagg.h"
#include "common/log.h"
#include "daemon/proc.h"
#include "daemon/pprof.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

/* ---- stream building -------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* Up to 2 MiB of payload, enough for the oversized cases. */
static uint8_t scratch[2u << 20];

static struct wire_out payload(void)
{
	return (struct wire_out){ scratch, scratch + sizeof(scratch), 1 };
}

static void put_frame(struct buf *b, unsigned type, struct wire_out *w)
{
	uint8_t hdr[WIRE_HDR_LEN];
	size_t n = (size_t)(w->p - scratch);
	if (!w->ok)
		abort();
	wire_put_hdr_at(hdr, type, n);
	buf_put(b, hdr, sizeof(hdr));
	buf_put(b, scratch, n);
}

static void tag_v(struct wire_out *w, unsigned tag, uint64_t v)
{
	wire_put_varint(w, (uint64_t)tag << 1);
	wire_put_varint(w, v);
}

static void tag_s(struct wire_out *w, unsigned tag, const char *s)
{
	wire_put_varint(w, (uint64_t)tag << 1 | 1);
	wire_put_bytes(w, s, strlen(s));
}

#define PID 777
#define START_NS 1700000000000000000ull

static void hello(struct buf *b, uint64_t seq)
{
	struct wire_out w = payload();
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tag_v(&w, WIRE_H_VERSION, WIRE_VERSION);
	tag_v(&w, WIRE_H_PID, PID);
	tag_v(&w, WIRE_H_START_UNIX_NS, START_NS);
	tag_v(&w, WIRE_H_START_MONO_NS, 1000);
	tag_v(&w, WIRE_H_MODE, WIRE_MODE_CPU);
	tag_v(&w, WIRE_H_PERIOD_NS, 10000000);
	tag_s(&w, WIRE_H_EXE, "/usr/bin/python3");
	tag_s(&w, WIRE_H_ARG, "python3");
	tag_s(&w, WIRE_H_ARG, "t.py");
	tag_v(&w, WIRE_H_CONN_SEQ, seq);
	tag_v(&w, 40, 5); /* unknown tags: skipped */
	tag_s(&w, 41, "future");
	put_frame(b, WIRE_HELLO, &w);
}

static void string(struct buf *b, uint64_t id, const char *s)
{
	struct wire_out w = payload();
	wire_put_varint(&w, id);
	wire_put_bytes(&w, s, strlen(s));
	put_frame(b, WIRE_STRING, &w);
}

static void frame3(struct buf *b, unsigned type, uint64_t x, uint64_t y,
		   uint64_t z)
{
	struct wire_out w = payload();
	wire_put_varint(&w, x);
	wire_put_varint(&w, y);
	wire_put_varint(&w, z);
	put_frame(b, type, &w);
}

static void function(struct buf *b, uint64_t id, uint64_t name,
		     uint64_t file, uint64_t line)
{
	struct wire_out w = payload();
	wire_put_varint(&w, id);
	wire_put_varint(&w, name);
	wire_put_varint(&w, name);
	wire_put_varint(&w, file);
	wire_put_varint(&w, line);
	put_frame(b, WIRE_FUNCTION, &w);
}

/* n records on node, thread ref; the record at index bad_at (if < n)
 * names node 999 instead. */
static void samples(struct buf *b, uint64_t node, uint64_t thread, size_t n,
		    size_t bad_at)
{
	struct wire_out w = payload();
	wire_put_varint(&w, 5000);
	for (size_t i = 0; i < n; i++) {
		wire_put_varint(&w, i == bad_at ? 999 : node);
		wire_put_varint(&w, thread);
		wire_put_varint(&w, 10);
		wire_put_varint(&w, 1);
		wire_put_varint(&w, 10000000);
		wire_put_varint(&w, 0);
	}
	put_frame(b, WIRE_SAMPLES, &w);
}

/* Strings 1 "t.py", 2 "main", 3 "work", 4 "MainThread"; functions 1 main,
 * 2 work; locations 1, 2; nodes 1 (main), 2 (main>work); thread ref 1. */
static void defs(struct buf *b)
{
	string(b, 1, "t.py");
	string(b, 2, "main");
	string(b, 3, "work");
	string(b, 4, "MainThread");
	function(b, 1, 2, 1, 1);
	function(b, 2, 3, 1, 5);
	frame3(b, WIRE_LOCATION, 1, 1, 3);
	frame3(b, WIRE_LOCATION, 2, 2, 7);
	frame3(b, WIRE_NODE, 1, 0, 1);
	frame3(b, WIRE_NODE, 2, 1, 2);
	frame3(b, WIRE_THREAD, 1, PID, 4);
}

/* PYPROF_NATIVE's MAPPING. */
static void mapping(struct buf *b, uint64_t id, uint64_t start, uint64_t limit,
		    uint64_t offset, uint64_t file, const uint8_t *bid,
		    size_t bid_len)
{
	struct wire_out w = payload();
	wire_put_varint(&w, id);
	wire_put_varint(&w, start);
	wire_put_varint(&w, limit);
	wire_put_varint(&w, offset);
	wire_put_varint(&w, file);
	wire_put_bytes(&w, bid, bid_len);
	put_frame(b, WIRE_MAPPING, &w);
}

static void bye(struct buf *b)
{
	struct wire_out w = payload();
	tag_v(&w, WIRE_B_SAMPLES, 1);
	tag_v(&w, WIRE_B_END_MONO_NS, 99999);
	put_frame(b, WIRE_BYE, &w);
}

/* ---- harness ----------------------------------------------------------------- */

struct harness {
	int peer; /* our end */
	struct symtab *st;
	struct procs *reg;
	struct conn *c;
	int closed; /* conn_read returned 1 */
};

static int h_open(struct harness *h)
{
	int fds[2];
	memset(h, 0, sizeof(*h));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
		return -errno;
	h->peer = fds[1];
	h->st = symtab_new();
	h->reg = procs_new(h->st);
	h->c = conn_new(fds[0], getpid(), getuid(), h->reg);
	return h->c ? 0 : -ENOMEM;
}

static void h_read(struct harness *h)
{
	if (!h->closed && conn_read(h->c, 1))
		h->closed = 1;
}

/* Writes the stream in pieces of `chunk` bytes, letting the connection
 * read after each. Stops early once the connection closed. */
static void h_feed(struct harness *h, const struct buf *b, size_t chunk)
{
	size_t off = 0;
	while (off < b->len && !h->closed) {
		size_t n = b->len - off < chunk ? b->len - off : chunk;
		ssize_t w = write(h->peer, b->p + off, n);
		if (w < 0 && errno != EAGAIN)
			break;
		if (w > 0)
			off += (size_t)w;
		h_read(h);
	}
	h_read(h);
}

/* Ends the stream from the client side, as a process exiting does. */
static void h_eof(struct harness *h)
{
	shutdown(h->peer, SHUT_WR);
	h_read(h);
}

static void h_close(struct harness *h)
{
	struct proc *p = conn_free(h->c);
	if (p)
		procs_remove(h->reg, p);
	close(h->peer);
	procs_free(h->reg);
	symtab_free(h->st);
}

static uint64_t h_samples(const struct harness *h)
{
	struct proc *p = procs_first(h->reg);
	return p ? proc_info(p)->n_samples : 0;
}

/* ---- cases -------------------------------------------------------------------- */

static void test_valid(size_t chunk, const char *what)
{
	struct harness h;
	struct buf b = { 0 };
	struct proc *p;

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	samples(&b, 2, 1, 300, SIZE_MAX); /* crosses a decode batch */
	samples(&b, 1, 1, 5, SIZE_MAX);
	frame3(&b, WIRE_LOST, WIRE_LOST_RING_FULL, 4, 40000000);
	bye(&b);
	h_feed(&h, &b, chunk);
	CHECK(!h.closed, what);
	p = procs_first(h.reg);
	CHECK(p != NULL && procs_len(h.reg) == 1, "1.1 one process");
	if (p) {
		const struct proc_info *in = proc_info(p);
		uint64_t lost, value;
		CHECK(in->pid == PID && in->start_unix_ns == START_NS,
		      "1.2 identity from HELLO");
		CHECK(in->n_samples == 305, "1.3 all 305 samples counted");
		CHECK(agg_total_count(proc_agg(p)) == 305,
		      "1.4 aggregate holds 305");
		CHECK(agg_len(proc_agg(p)) == 2, "1.5 two distinct stacks");
		proc_lost(p, WIRE_LOST_RING_FULL, &lost, &value);
		CHECK(lost == 4 && value == 40000000, "1.6 lost counted");
		CHECK(in->has_bye && in->bye.end_mono_ns == 99999,
		      "1.7 BYE recorded");
		CHECK(in->n_args == 2 &&
			      strcmp(symtab_string(h.st, in->arg_sids[1]),
				     "t.py") == 0,
		      "1.8 argv kept");
		/* The last sample is at base 5000 + 5 * 10 ns; BYE's end
		 * (99999) is later and wins: 99999 - 1000 after start. */
		CHECK(proc_end_unix_ns(p) == START_NS + 98999,
		      "1.9 end time from the BYE's monotonic clock");
	}
	h_eof(&h);
	CHECK(h.closed, "1.10 EOF after BYE closes");
	h_close(&h);
	free(b.p);
}

static void test_big_frame(void)
{
	struct harness h;
	struct buf b = { 0 };
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	samples(&b, 2, 1, 50000, SIZE_MAX); /* ~500 KB in one frame */
	h_feed(&h, &b, 65536);
	CHECK(!h.closed && h_samples(&h) == 50000,
	      "2.1 a 500 KB SAMPLES frame is taken whole");
	h_close(&h);
	free(b.p);
}

typedef void (*bad_fn)(struct buf *b);

static void bad_sample_mid_frame(struct buf *b)
{
	samples(b, 2, 1, 400, 299);
}
static void bad_string_gap(struct buf *b)
{
	string(b, 6, "x");
}
static void bad_string_zero(struct buf *b)
{
	string(b, 0, "x");
}
static void bad_function_ref(struct buf *b)
{
	function(b, 3, 9, 1, 1);
}
static void bad_function_zero_name(struct buf *b)
{
	function(b, 3, 0, 1, 1);
}
static void bad_location_ref(struct buf *b)
{
	frame3(b, WIRE_LOCATION, 3, 5, 1);
}
static void bad_node_forward(struct buf *b)
{
	frame3(b, WIRE_NODE, 3, 4, 1);
}
static void bad_node_self(struct buf *b)
{
	frame3(b, WIRE_NODE, 3, 3, 1);
}
static void bad_node_loc(struct buf *b)
{
	frame3(b, WIRE_NODE, 3, 1, 9);
}
static void bad_thread_gap(struct buf *b)
{
	frame3(b, WIRE_THREAD, 3, 5, 0);
}
static void bad_thread_name(struct buf *b)
{
	frame3(b, WIRE_THREAD, 2, 5, 77);
}
static void bad_lost_reason(struct buf *b)
{
	frame3(b, WIRE_LOST, 0, 1, 1);
}
static void bad_second_hello(struct buf *b)
{
	hello(b, 0);
}
static void bad_type(struct buf *b)
{
	uint8_t hdr[4];
	wire_put_hdr_at(hdr, 10, 0);
	buf_put(b, hdr, 4);
}
static void bad_oversized(struct buf *b)
{
	uint8_t hdr[4];
	wire_put_hdr_at(hdr, WIRE_SAMPLES, WIRE_MAX_PAYLOAD + 1);
	buf_put(b, hdr, 4);
}
static void bad_leftover(struct buf *b)
{
	struct wire_out w = payload();
	wire_put_varint(&w, 3);
	wire_put_varint(&w, 1);
	wire_put_varint(&w, 1);
	wire_put_u8(&w, 0);
	put_frame(b, WIRE_LOCATION, &w);
}
static void bad_short(struct buf *b)
{
	struct wire_out w = payload();
	wire_put_varint(&w, 3);
	put_frame(b, WIRE_LOCATION, &w);
}
static void bad_record_cut(struct buf *b)
{
	struct wire_out w = payload();
	wire_put_varint(&w, 1);
	for (int i = 0; i < 4; i++) /* 4 of a record's 6 fields */
		wire_put_varint(&w, 1);
	put_frame(b, WIRE_SAMPLES, &w);
}
/* a wait record is a block wait or a holder's charge, never both */
static void bad_wait_flags(struct buf *b)
{
	struct wire_out w = payload();
	uint64_t rec[6] = { 1, 1, 0, 1, 1,
			    WIRE_SF_WAIT_BLOCK | WIRE_SF_WAIT_MUTEX };
	wire_put_varint(&w, 1);
	for (int i = 0; i < 6; i++)
		wire_put_varint(&w, rec[i]);
	put_frame(b, WIRE_SAMPLES, &w);
}
static void bad_flags(struct buf *b)
{
	struct wire_out w = payload();
	uint64_t rec[6] = { 1, 1, 0, 1, 1, 1u << 6 };
	wire_put_varint(&w, 1);
	for (int i = 0; i < 6; i++)
		wire_put_varint(&w, rec[i]);
	put_frame(b, WIRE_SAMPLES, &w);
}
static void bad_count_range(struct buf *b)
{
	struct wire_out w = payload();
	uint64_t rec[6] = { 1, 1, 0, (uint64_t)INT64_MAX + 1, 1, 0 };
	wire_put_varint(&w, 1);
	for (int i = 0; i < 6; i++)
		wire_put_varint(&w, rec[i]);
	put_frame(b, WIRE_SAMPLES, &w);
}
static void bad_after_bye(struct buf *b)
{
	bye(b);
	samples(b, 1, 1, 1, SIZE_MAX);
}
static void bad_long_string(struct buf *b)
{
	static char s[WIRE_MAX_STRING + 2];
	memset(s, 'a', WIRE_MAX_STRING + 1);
	string(b, 5, s);
}

/* PYPROF_NATIVE: MAPPING and ADDRESS (the prefix defined locations 1-2
 * and strings 1-4). */
static void bad_map_range(struct buf *b)
{
	mapping(b, 1, 0x2000, 0x1000, 0, 1, NULL, 0);
}
static void bad_map_file(struct buf *b)
{
	mapping(b, 1, 0x1000, 0x2000, 0, 99, NULL, 0);
}
static void bad_map_gap(struct buf *b)
{
	mapping(b, 2, 0x1000, 0x2000, 0, 1, NULL, 0);
}
static void bad_map_build_id(struct buf *b)
{
	static const uint8_t id[WIRE_MAX_BUILD_ID + 1];
	mapping(b, 1, 0x1000, 0x2000, 0, 1, id, sizeof(id));
}
static void bad_addr_mapping(struct buf *b)
{
	frame3(b, WIRE_ADDRESS, 3, 5, 0x1234);
}
static void bad_addr_outside(struct buf *b)
{
	mapping(b, 1, 0x1000, 0x2000, 0, 1, NULL, 0);
	frame3(b, WIRE_ADDRESS, 3, 1, 0x2000);
}
static void bad_addr_gap(struct buf *b)
{
	frame3(b, WIRE_ADDRESS, 4, 0, 0x1234);
}
static void bad_addr_shared_ids(struct buf *b)
{
	frame3(b, WIRE_ADDRESS, 3, 0, 0x1234);
	frame3(b, WIRE_LOCATION, 3, 1, 3); /* 4 is next: one id space */
}

static void bad_addr_zero(struct buf *b)
{
	frame3(b, WIRE_ADDRESS, 3, 0, 0);
}
static void bad_addr_zero_mapped(struct buf *b)
{
	mapping(b, 1, 0, 0x2000, 0, 1, NULL, 0);
	frame3(b, WIRE_ADDRESS, 3, 1, 0);
}

static void test_bad(void)
{
	static const struct {
		const char *name;
		bad_fn fn;
	} cases[] = {
		{ "3.1 bad record mid-frame", bad_sample_mid_frame },
		{ "3.2 STRING id gap", bad_string_gap },
		{ "3.3 STRING id 0", bad_string_zero },
		{ "3.4 FUNCTION undefined name", bad_function_ref },
		{ "3.5 FUNCTION name 0", bad_function_zero_name },
		{ "3.6 LOCATION undefined function", bad_location_ref },
		{ "3.7 NODE forward parent", bad_node_forward },
		{ "3.8 NODE own parent", bad_node_self },
		{ "3.9 NODE undefined location", bad_node_loc },
		{ "3.10 THREAD ref gap", bad_thread_gap },
		{ "3.11 THREAD undefined name", bad_thread_name },
		{ "3.12 LOST reason 0", bad_lost_reason },
		{ "3.13 second HELLO", bad_second_hello },
		{ "3.14 unknown frame type", bad_type },
		{ "3.15 oversized length", bad_oversized },
		{ "3.16 leftover bytes", bad_leftover },
		{ "3.17 payload too short", bad_short },
		{ "3.18 record cut short", bad_record_cut },
		{ "3.19 unknown flag bits", bad_flags },
		{ "3.20 count out of range", bad_count_range },
		{ "3.21 frame after BYE", bad_after_bye },
		{ "3.22 string over the limit", bad_long_string },
		{ "3.23 MAPPING start not below limit", bad_map_range },
		{ "3.24 MAPPING undefined filename", bad_map_file },
		{ "3.25 MAPPING id gap", bad_map_gap },
		{ "3.26 MAPPING build id over the limit", bad_map_build_id },
		{ "3.27 ADDRESS undefined mapping", bad_addr_mapping },
		{ "3.28 ADDRESS outside its mapping", bad_addr_outside },
		{ "3.29 ADDRESS location id gap", bad_addr_gap },
		{ "3.30 LOCATION and ADDRESS share ids", bad_addr_shared_ids },
		{ "3.31 ADDRESS 0 in no mapping", bad_addr_zero },
		{ "3.32 ADDRESS 0 in a mapping from 0", bad_addr_zero_mapped },
		{ "3.33 SAMPLES both WAIT_BLOCK and WAIT_MUTEX", bad_wait_flags },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct harness h;
		struct buf b = { 0 };
		CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
		hello(&b, 0);
		defs(&b);
		samples(&b, 2, 1, 10, SIZE_MAX);
		h_feed(&h, &b, 1 << 20);
		CHECK(!h.closed && h_samples(&h) == 10, "3.0 valid prefix");
		b.len = 0;
		cases[i].fn(&b);
		h_feed(&h, &b, 1 << 20);
		CHECK(h.closed, cases[i].name);
		CHECK(h_samples(&h) == 10,
		      "3.x the bad frame added no samples");
		h_close(&h);
		free(b.p);
	}
}

static void test_before_hello(void)
{
	struct harness h;
	struct buf b = { 0 };
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	string(&b, 1, "x");
	h_feed(&h, &b, 64);
	CHECK(h.closed && procs_len(h.reg) == 0,
	      "4.1 STRING before HELLO closes, no process");
	h_close(&h);
	free(b.p);

	/* HELLO must carry VERSION first and a PID. */
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	b = (struct buf){ 0 };
	struct wire_out w = payload();
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tag_v(&w, WIRE_H_PID, 5);
	tag_v(&w, WIRE_H_VERSION, WIRE_VERSION);
	put_frame(&b, WIRE_HELLO, &w);
	h_feed(&h, &b, 64);
	CHECK(h.closed, "4.2 HELLO not starting with VERSION");
	h_close(&h);
	free(b.p);

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	b = (struct buf){ 0 };
	w = payload();
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tag_v(&w, WIRE_H_VERSION, WIRE_VERSION);
	tag_v(&w, WIRE_H_MODE, 0);
	put_frame(&b, WIRE_HELLO, &w);
	h_feed(&h, &b, 64);
	CHECK(h.closed && procs_len(h.reg) == 0, "4.3 HELLO without PID");
	h_close(&h);
	free(b.p);

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	b = (struct buf){ 0 };
	hello(&b, 0);
	b.len -= 3; /* cut the HELLO */
	h_feed(&h, &b, 64);
	CHECK(!h.closed, "4.4 a partial frame waits for more");
	h_eof(&h);
	CHECK(h.closed && procs_len(h.reg) == 0,
	      "4.5 EOF mid-frame closes without a process");
	h_close(&h);
	free(b.p);
}

/* A reconnect continues the same process; its ids start over. */
static void test_reconnect(void)
{
	struct harness h;
	struct buf b = { 0 };
	int fds[2];
	struct conn *c2;
	struct proc *p;

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	samples(&b, 2, 1, 10, SIZE_MAX);
	h_feed(&h, &b, 4096);
	h_eof(&h);
	p = conn_free(h.c);
	CHECK(p != NULL, "5.1 first connection ends, process is free");
	close(h.peer);

	CHECK_OR_RETURN(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
				   fds) == 0,
			"socketpair", );
	c2 = conn_new(fds[0], getpid(), getuid(), h.reg);
	h.c = c2;
	h.peer = fds[1];
	h.closed = 0;
	b.len = 0;
	hello(&b, 1);
	defs(&b); /* the replay, from id 1 */
	samples(&b, 1, 1, 5, SIZE_MAX);
	h_feed(&h, &b, 4096);
	CHECK(!h.closed, "5.2 replayed definitions accepted");
	CHECK(procs_len(h.reg) == 1, "5.3 still one process");
	CHECK(h_samples(&h) == 15, "5.4 samples continue: 10 + 5");
	CHECK(proc_info(procs_first(h.reg))->n_connects == 2,
	      "5.5 two connections counted");
	CHECK(symtab_n_nodes(h.st) == 2, "5.6 replay interned nothing new");
	h_close(&h);
	free(b.p);
}

/* Renaming a thread keeps the old name on the earlier samples. */
static void test_thread_rename(void)
{
	struct harness h;
	struct buf b = { 0 };
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	samples(&b, 2, 1, 3, SIZE_MAX);
	string(&b, 5, "renamed");
	frame3(&b, WIRE_THREAD, 1, PID, 5);
	samples(&b, 2, 1, 2, SIZE_MAX);
	h_feed(&h, &b, 4096);
	CHECK(!h.closed, "6.1 rename accepted");
	struct proc *p = procs_first(h.reg);
	CHECK_OR_RETURN(p && proc_n_threads(p) == 2, "6.2 two thread entries", );
	const struct agg_entry *e;
	size_t pos = 0;
	int ok = 1;
	while ((e = agg_next(proc_agg(p), &pos))) {
		uint64_t tid;
		uint32_t name;
		proc_thread(p, e->thread, &tid, &name);
		const char *s = symtab_string(h.st, name);
		if (!(tid == PID &&
		      ((e->count == 3 && strcmp(s, "MainThread") == 0) ||
		       (e->count == 2 && strcmp(s, "renamed") == 0))))
			ok = 0;
	}
	CHECK(ok, "6.3 3 samples as MainThread, 2 as renamed");
	h_close(&h);
	free(b.p);
}

/* WIRE_MAX_DEPTH nodes deep is fine; one more is not. */
static void test_depth(void)
{
	struct harness h;
	struct buf b = { 0 };
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b); /* node 2 has depth 2 */
	for (uint64_t id = 3; id <= WIRE_MAX_DEPTH; id++)
		frame3(&b, WIRE_NODE, id, id - 1, 1 + (id & 1));
	samples(&b, WIRE_MAX_DEPTH, 1, 1, SIZE_MAX);
	h_feed(&h, &b, 1 << 16);
	CHECK(!h.closed && h_samples(&h) == 1, "7.1 depth 8192 accepted");
	b.len = 0;
	frame3(&b, WIRE_NODE, WIRE_MAX_DEPTH + 1, WIRE_MAX_DEPTH, 1);
	h_feed(&h, &b, 1 << 16);
	CHECK(h.closed, "7.2 depth 8193 rejected");
	h_close(&h);
	free(b.p);
}

/* Strings are stored as valid UTF-8 without NUL, whatever was sent. */
static void test_string_repair(void)
{
	struct symtab *st = symtab_new();
	uint32_t a, b2, c;
	CHECK_OR_RETURN(st != NULL, "symtab", );
	symtab_intern_string(st, "ok\xc3\xa9", 4, &a);
	symtab_intern_string(st, "x\xff\x00y", 4, &b2);
	symtab_intern_string(st, "\xed\xa0\x80", 3, &c); /* a surrogate */
	CHECK(strcmp(symtab_string(st, a), "ok\xc3\xa9") == 0,
	      "8.1 valid UTF-8 kept");
	CHECK(strcmp(symtab_string(st, b2), "x\xef\xbf\xbd\xef\xbf\xbdy") ==
		      0,
	      "8.2 bad byte and NUL replaced by U+FFFD");
	CHECK(strcmp(symtab_string(st, c),
		     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") == 0,
	      "8.3 surrogate replaced");
	uint32_t again;
	symtab_intern_string(st, "ok\xc3\xa9", 4, &again);
	CHECK(again == a, "8.4 interned once");
	symtab_free(st);
}

/* Where this test's own code is mapped, as the library reports it. */
struct self_map {
	uintptr_t addr;
	uint64_t start, limit, offset;
	char path[4096];
	uint8_t id[64];
	size_t id_len;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_map *m = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || m->addr < lo ||
		    m->addr >= lo + ph->p_memsz)
			continue;
		m->start = lo;
		m->limit = lo + ph->p_memsz;
		m->offset = ph->p_offset;
		ssize_t n = readlink("/proc/self/exe", m->path,
				     sizeof(m->path) - 1);
		m->path[n > 0 ? n : 0] = 0;
		for (int j = 0; j < info->dlpi_phnum; j++) {
			const ElfW(Phdr) *nh = &info->dlpi_phdr[j];
			const uint8_t *p = (const uint8_t *)(info->dlpi_addr +
							     nh->p_vaddr);
			if (nh->p_type != PT_NOTE || nh->p_memsz < 16 + 4)
				continue;
			ElfW(Nhdr) h;
			memcpy(&h, p, sizeof(h));
			if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 &&
			    h.n_descsz <= 64 && 16 + h.n_descsz <= nh->p_memsz) {
				memcpy(m->id, p + 16, h.n_descsz);
				m->id_len = h.n_descsz;
			}
		}
		return 1;
	}
	return 0;
}

/* A native frame in this very program is named from its symbol table:
 * MAPPING, ADDRESS at h_open + 1, a node and a sample on it. */
static void test_native(void)
{
	struct harness h;
	struct buf b = { 0 };
	struct self_map m;
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)&h_open;
	CHECK_OR_RETURN(dl_iterate_phdr(find_self, &m) == 1,
			"5.0 our code is mapped", );
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	string(&b, 5, m.path);
	mapping(&b, 1, m.start, m.limit, m.offset, 5, m.id, m.id_len);
	frame3(&b, WIRE_ADDRESS, 3, 1, m.addr + 1);
	frame3(&b, WIRE_ADDRESS, 4, 0, 0x1234); /* in no mapping */
	frame3(&b, WIRE_NODE, 3, 2, 3);
	frame3(&b, WIRE_NODE, 4, 3, 4);
	samples(&b, 4, 1, 3, SIZE_MAX);
	h_feed(&h, &b, 1 << 20);
	CHECK(!h.closed && h_samples(&h) == 3,
	      "5.1 MAPPING and ADDRESS frames accepted");
	const struct agg_entry *e;
	size_t pos = 0;
	struct proc *p = procs_first(h.reg);
	int named = 0, unnamed = 0, mapped = 0;
	while (p && (e = agg_next(proc_agg(p), &pos))) {
		uint32_t nid = e->node, parent, lid, fid, mid, n, sys, file;
		uint64_t addr;
		int64_t line, start;
		struct symtab_mapping sm;
		symtab_node(h.st, nid, &parent, &lid);
		symtab_location(h.st, lid, &fid, &line);
		symtab_location_native(h.st, lid, &mid, &addr);
		unnamed += fid == 0 && mid == 0 && addr == 0x1234;
		symtab_node(h.st, parent, &parent, &lid);
		symtab_location(h.st, lid, &fid, &line);
		symtab_location_native(h.st, lid, &mid, &addr);
		if (fid) {
			symtab_function(h.st, fid, &n, &sys, &file, &start);
			named = !strcmp(symtab_string(h.st, n), "h_open") &&
				addr == m.addr + 1;
		}
		if (mid) {
			symtab_mapping(h.st, mid, &sm);
			mapped = sm.start == m.start && sm.limit == m.limit &&
				 sm.offset == m.offset &&
				 (sm.flags & SYMTAB_MAP_FUNCTIONS) &&
				 !strcmp(symtab_string(h.st, sm.file), m.path);
		}
	}
	CHECK(named, "5.2 the address is named h_open from our .symtab");
	CHECK(mapped, "5.3 its mapping is kept, with has-functions");
	CHECK(unnamed, "5.4 an address in no mapping stays a bare address");
	h_close(&h);
	free(b.p);
}

/* ---- streams that crashed the collector ------------------------------------ */

/* Builds every process's profile as the collector does when it writes
 * them; 1 if all built and none left a stack out. */
static int h_profiles_ok(const struct harness *h)
{
	int ok = 1;
	for (struct proc *p = procs_first(h->reg); p; p = proc_next(p)) {
		const struct proc *one = p;
		struct pprof_stats stats;
		void *gz = NULL;
		size_t len;
		ok &= pprof_build(h->st, &one, 1, NULL, &gz, &len, &stats) ==
			      0 &&
		      stats.n_refused == 0;
		free(gz);
	}
	return ok;
}

/* An ADDRESS with mapping 0 and address 0, a node on it and a sample on
 * that node: the location named nothing, the symtab stored it like a
 * Python location with function 0, and building the profile read a
 * function that was never defined (SIGSEGV). The ADDRESS must close the
 * connection; what came before stays, and the profile builds. */
static void test_address_zero(void)
{
	struct harness h;
	struct buf b = { 0 };
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	hello(&b, 0);
	defs(&b);
	samples(&b, 2, 1, 4, SIZE_MAX);
	frame3(&b, WIRE_ADDRESS, 3, 0, 0);
	frame3(&b, WIRE_NODE, 3, 0, 3);
	samples(&b, 3, 1, 1, SIZE_MAX);
	h_feed(&h, &b, 1 << 20);
	CHECK(h.closed, "7.1 ADDRESS with mapping 0 and address 0 refused");
	CHECK(h_samples(&h) == 4, "7.2 the samples before it are kept");
	CHECK(h_profiles_ok(&h), "7.3 the process's profile builds whole");
	h_close(&h);
	free(b.p);
}

/* HELLO without PERIOD_NS (it is optional), then a BYE with the achieved
 * period: the log line computed the rate asked for by dividing by 0
 * (SIGFPE). */
static void test_bye_without_period(void)
{
	struct harness h;
	struct buf b = { 0 };
	struct wire_out w = payload();
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tag_v(&w, WIRE_H_VERSION, WIRE_VERSION);
	tag_v(&w, WIRE_H_PID, PID);
	put_frame(&b, WIRE_HELLO, &w);
	defs(&b);
	samples(&b, 2, 1, 2, SIZE_MAX);
	w = payload();
	tag_v(&w, WIRE_B_SAMPLES, 2);
	tag_v(&w, WIRE_B_ACHIEVED_NS, 20000000);
	put_frame(&b, WIRE_BYE, &w);
	h_feed(&h, &b, 1 << 20);
	h_eof(&h);
	struct proc *p = procs_first(h.reg);
	CHECK(p && proc_info(p)->has_bye &&
		      proc_info(p)->achieved_ns == 20000000 &&
		      h_samples(&h) == 2,
	      "7.4 BYE with an achieved period after a HELLO without one");
	CHECK(h_profiles_ok(&h), "7.5 and its profile builds");
	h_close(&h);
	free(b.p);
}

/* ---- heap profiles (HEAP, HEAP_SNAPSHOT) ----------------------------------- */

/* A HEAP frame at rate 4096 with the records of r[] (n of them): each is
 * {kind, a, b, c, d} as the kind wants (ALLOC node thread size addr, FREE
 * addr, LOST n bytes; another kind: just its number). */
static void heap_frame(struct buf *b, const uint64_t (*r)[5], size_t n)
{
	struct wire_out w = payload();
	wire_put_varint(&w, 4096);
	for (size_t i = 0; i < n; i++) {
		wire_put_varint(&w, r[i][0]);
		int k = r[i][0] == WIRE_HEAP_ALLOC  ? 4
			: r[i][0] == WIRE_HEAP_FREE ? 1
			: r[i][0] == WIRE_HEAP_LOST ? 2
						    : 0;
		for (int j = 1; j <= k; j++)
			wire_put_varint(&w, r[i][j]);
	}
	put_frame(b, WIRE_HEAP, &w);
}

static const struct heapagg *h_heap(const struct harness *h)
{
	const struct proc *p = procs_first(h->reg);
	return p ? proc_heap(p) : NULL;
}

/* 6.1 a valid stream: allocations, a free, a lost count, a
 * snapshot request */
static int test_heap_valid(void)
{
	struct harness h;
	struct buf b = { 0 };
	struct heapagg_row *rows, lost;
	size_t n;
	uint64_t seq;

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", -1);
	hello(&b, 0);
	defs(&b);
	static const uint64_t ok[][5] = {
		{ WIRE_HEAP_ALLOC, 2, 1, 8192, 0x7f0000001000 },
		{ WIRE_HEAP_ALLOC, 1, 1, 100, 0x7f0000002000 },
		{ WIRE_HEAP_FREE, 0x7f0000002000 },
		{ WIRE_HEAP_FREE, 0x123450 }, /* never seen: ignored */
		{ WIRE_HEAP_LOST, 3, 300 },
	};
	heap_frame(&b, ok, 5);
	struct wire_out w = payload();
	wire_put_varint(&w, 1);
	put_frame(&b, WIRE_HEAP_SNAPSHOT, &w);
	h_feed(&h, &b, 5);
	CHECK(!h.closed, "6.1 a valid HEAP stream is accepted");
	CHECK_OR_RETURN(h_heap(&h) != NULL, "6.2 the process has a heap", -1);
	CHECK(heapagg_n_live(h_heap(&h)) == 1, "6.3 one block in use");
	heapagg_rows(h_heap(&h), &rows, &n, &lost);
	double w2 = heapagg_scale(8192, 4096), w1 = heapagg_scale(100, 4096);
	CHECK(n == 2 && rows[1].alloc_bytes == w2 * 8192 &&
		      rows[1].inuse_bytes == w2 * 8192 &&
		      rows[0].alloc_objects == w1 && rows[0].inuse_objects == 0,
	      "6.4 per stack: allocated and in use, unbiased");
	CHECK(lost.alloc_objects == 3 * heapagg_scale(100, 4096),
	      "6.5 lost allocations counted");
	free(rows);
	CHECK(procs_next_snapshot(h.reg, &seq) != NULL && seq == 1 &&
		      procs_next_snapshot(h.reg, &seq) == NULL,
	      "6.6 the snapshot is asked for once");
	h_close(&h);
	free(b.p);
	return 0;
}

/* 7.x bad frames close the connection and add nothing: each bad
 * frame starts with a valid ALLOC, which must not be taken */
static int test_heap_bad_records(void)
{
	struct harness h;
	struct buf b;

	static const struct {
		const char *name;
		uint64_t rec[5];
	} bad[] = {
		{ "7.1 unknown record kind", { 9 } },
		{ "7.2 ALLOC of an undefined node", { 1, 9, 1, 10, 0x5000 } },
		{ "7.3 ALLOC of node 0", { 1, 0, 1, 10, 0x5000 } },
		{ "7.4 ALLOC on an undefined thread", { 1, 1, 7, 10, 0x5000 } },
		{ "7.5 ALLOC of size 0", { 1, 1, 1, 0, 0x5000 } },
		{ "7.6 ALLOC at address 0", { 1, 1, 1, 10, 0 } },
		{ "7.7 FREE of address 0", { 2, 0 } },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t r[2][5] = { { WIRE_HEAP_ALLOC, 1, 1, 64, 0x9000 } };
		memcpy(r[1], bad[i].rec, sizeof(r[1]));
		CHECK_OR_RETURN(h_open(&h) == 0, "harness", -1);
		b = (struct buf){ 0 };
		hello(&b, 0);
		defs(&b);
		heap_frame(&b, (const uint64_t(*)[5])r, 2);
		h_feed(&h, &b, 1 << 20);
		CHECK(h.closed, bad[i].name);
		CHECK(!h_heap(&h) || heapagg_n_live(h_heap(&h)) == 0,
		      "7.x the bad frame added nothing");
		h_close(&h);
		free(b.p);
	}
	return 0;
}

/* 7.8 a record cut short; 7.9 HEAP_SNAPSHOT seq 0; 7.10 with bytes
 * left over */
static int test_heap_bad_frames(void)
{
	struct harness h;
	struct buf b;
	struct wire_out w;
	uint64_t seq;

	for (int k = 0; k < 3; k++) {
		static const char *const names[] = {
			"7.8 HEAP record cut short",
			"7.9 HEAP_SNAPSHOT seq 0",
			"7.10 HEAP_SNAPSHOT with bytes left over",
		};
		CHECK_OR_RETURN(h_open(&h) == 0, "harness", -1);
		b = (struct buf){ 0 };
		hello(&b, 0);
		defs(&b);
		w = payload();
		if (k == 0) {
			wire_put_varint(&w, 4096);
			wire_put_varint(&w, WIRE_HEAP_ALLOC);
			wire_put_varint(&w, 1);
			wire_put_varint(&w, 1);
			put_frame(&b, WIRE_HEAP, &w);
		} else {
			wire_put_varint(&w, k == 1 ? 0 : 5);
			if (k == 2)
				wire_put_varint(&w, 5);
			put_frame(&b, WIRE_HEAP_SNAPSHOT, &w);
		}
		h_feed(&h, &b, 1 << 20);
		CHECK(h.closed, names[k]);
		CHECK(procs_next_snapshot(h.reg, &seq) == NULL,
		      "7.x no snapshot asked for");
		h_close(&h);
		free(b.p);
	}
	return 0;
}

static void test_heap(void)
{
	if (test_heap_valid() == 0 && test_heap_bad_records() == 0)
		test_heap_bad_frames();
}

/* A process that is not profiled: the library's own refusal HELLO
 * (refuse_build_hello) opens no process, is counted with its reason, and
 * nothing may follow it. */
static void test_refused(void)
{
	struct harness h;
	struct buf b = { 0 };
	uint8_t frame[4096];
	uint64_t n = 0;
	const char *why;
	size_t len;

	len = refuse_build_hello(frame, sizeof(frame), "3.16.0a1",
				 "/usr/bin/python3.16", "python3.16",
				 "Python 3.16 is not supported by this pyprof");
	CHECK_OR_RETURN(len > 0, "13.0 refusal HELLO built", );

	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	buf_put(&b, frame, len);
	h_feed(&h, &b, 3);
	CHECK(!h.closed, "13.1 a refusal HELLO is accepted");
	CHECK(procs_len(h.reg) == 0 && procs_n_seen(h.reg) == 0,
	      "13.2 no process opened for it");
	CHECK(procs_n_refused(h.reg) == 1, "13.3 counted as not profiled");
	why = procs_refused_reason(h.reg, 0, &n);
	CHECK(why && n == 1 &&
		      strcmp(why, "Python 3.16 is not supported by this pyprof") == 0,
	      "13.4 its reason kept");
	CHECK(procs_refused_reason(h.reg, 1, &n) == NULL, "13.5 one reason");
	h_eof(&h);
	CHECK(h.closed, "13.6 EOF after it closes the connection");
	h_close(&h);

	/* a second process with the same reason, then a frame: dropped */
	CHECK_OR_RETURN(h_open(&h) == 0, "harness", );
	b.len = 0;
	buf_put(&b, frame, len);
	string(&b, 1, "main");
	h_feed(&h, &b, 1 << 20);
	CHECK(h.closed, "13.7 a frame after a refusal HELLO drops the connection");
	CHECK(procs_len(h.reg) == 0 && procs_n_refused(h.reg) == 1,
	      "13.8 still no process, the refusal still counted");
	h_close(&h);
	free(b.p);
}

int main(void)
{
	log_set_level(LOG_ERROR); /* the rejections are expected */
	test_valid(1 << 20, "1.0 whole stream accepted");
	test_valid(1, "1.0 stream fed one byte at a time accepted");
	test_valid(7, "1.0 stream fed in 7-byte pieces accepted");
	test_big_frame();
	test_bad();
	test_before_hello();
	test_reconnect();
	test_thread_rename();
	test_depth();
	test_string_repair();
	test_native();
	test_heap();
	test_refused();
	test_address_zero();
	test_bye_without_period();
	return check_summary();
}
