/*
 * test_lost.c - "[lost: collector away]" counts only samples that are not
 * on disk (collector/daemon/proc.h, conn.h; wire.h's WRITTEN and CTL_WRITTEN).
 *
 * Streams are written into a real socket pair with wire.h's encoder and
 * read by conn_read, as test_conn.c does; the collector's writing a
 * profile is stood for by proc_mark_written, which output.c calls after
 * each profile it wrote.
 *
 *   1.x a process that reaches a new collector after an old one wrote
 *       part of its samples (HELLO's WRITTEN): only the rest is lost;
 *   2.x a process whose program closed our socket, written and forgotten
 *       at the end of its first connection, then back on a second: the
 *       second profile counts nothing lost; with part of the first
 *       acknowledged, nothing counted twice;
 *   3.x CTL_WRITTEN: sent after a write, with the connection's count,
 *       once; never to a library that did not ask (no WRITTEN in HELLO).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "daemon/conn.h"
#include "common/log.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

/* Each case is another process. */
static uint64_t PID = 9191;
#define START_NS 1700000000000000000ull

struct buf {
	uint8_t p[1 << 16];
	size_t len;
};

static void put_frame(struct buf *b, unsigned type, const uint8_t *payload,
		      size_t n)
{
	wire_put_hdr_at(b->p + b->len, type, n);
	memcpy(b->p + b->len + WIRE_HDR_LEN, payload, n);
	b->len += WIRE_HDR_LEN + n;
}

static void tag(struct wire_out *w, unsigned t, uint64_t v)
{
	wire_put_varint(w, (uint64_t)t << 1);
	wire_put_varint(w, v);
}

/* HELLO; written < 0: without WRITTEN (a library that takes no acks). */
static void hello(struct buf *b, uint64_t seq, long long written)
{
	uint8_t p[256];
	struct wire_out w = { p, p + sizeof(p), 1 };
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tag(&w, WIRE_H_VERSION, WIRE_VERSION);
	tag(&w, WIRE_H_PID, PID);
	tag(&w, WIRE_H_START_UNIX_NS, START_NS);
	tag(&w, WIRE_H_MODE, WIRE_MODE_CPU);
	tag(&w, WIRE_H_PERIOD_NS, 10000000);
	tag(&w, WIRE_H_CONN_SEQ, seq);
	if (written >= 0)
		tag(&w, WIRE_H_WRITTEN, (uint64_t)written);
	put_frame(b, WIRE_HELLO, p, (size_t)(w.p - p));
}

/* One stack and one thread (with defs set: the connection's first
 * batch), then n samples of count 1. */
static void samples_on(struct buf *b, unsigned n, int defs)
{
	uint8_t p[8192];
	struct wire_out w = { p, p + sizeof(p), 1 };
	static const uint8_t str[] = { 1, 1, 'f' };
	static const uint8_t fn[] = { 1, 1, 1, 1, 1 };
	static const uint8_t loc[] = { 1, 1, 2 };
	static const uint8_t node[] = { 1, 0, 1 };
	uint8_t thr[8];
	struct wire_out t = { thr, thr + sizeof(thr), 1 };
	wire_put_varint(&t, 1);
	wire_put_varint(&t, PID);
	wire_put_varint(&t, 0);
	if (defs) {
		put_frame(b, WIRE_STRING, str, sizeof(str));
		put_frame(b, WIRE_FUNCTION, fn, sizeof(fn));
		put_frame(b, WIRE_LOCATION, loc, sizeof(loc));
		put_frame(b, WIRE_NODE, node, sizeof(node));
		put_frame(b, WIRE_THREAD, thr, (size_t)(t.p - thr));
	}
	wire_put_varint(&w, 1000); /* base_ns */
	for (unsigned i = 0; i < n; i++) {
		wire_put_varint(&w, 1);	       /* node */
		wire_put_varint(&w, 1);	       /* thread */
		wire_put_varint(&w, 0);	       /* dt */
		wire_put_varint(&w, 1);	       /* count */
		wire_put_varint(&w, 10000000); /* value */
		wire_put_varint(&w, 0);	       /* flags */
	}
	put_frame(b, WIRE_SAMPLES, p, (size_t)(w.p - p));
}

static void samples(struct buf *b, unsigned n)
{
	samples_on(b, n, 1);
}

static void more_samples(struct buf *b, unsigned n)
{
	samples_on(b, n, 0);
}

static void bye(struct buf *b, uint64_t took)
{
	uint8_t p[32];
	struct wire_out w = { p, p + sizeof(p), 1 };
	tag(&w, WIRE_B_SAMPLES, took);
	put_frame(b, WIRE_BYE, p, (size_t)(w.p - p));
}

/* ---- a registry and connections to it ------------------------------------ */

static struct symtab *st;
static struct procs *reg;

struct client {
	int peer;
	struct conn *c;
};

static int client_open(struct client *k)
{
	int fds[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
		return -errno;
	k->peer = fds[1];
	k->c = conn_new(fds[0], getpid(), getuid(), reg);
	return k->c ? 0 : -ENOMEM;
}

static int client_send(struct client *k, const struct buf *b)
{
	if (write(k->peer, b->p, b->len) != (ssize_t)b->len)
		return -EIO;
	return conn_read(k->c, 1) ? -EPROTO : 0;
}

/* The client goes; its process, if no connection holds it any more, is
 * written (as output.c would, when write is set) and forgotten. */
static void client_close(struct client *k, int write)
{
	struct proc *p;
	shutdown(k->peer, SHUT_WR);
	conn_read(k->c, 1);
	p = conn_free(k->c);
	if (p) {
		if (write)
			proc_mark_written(p);
		procs_remove(reg, p);
	}
	close(k->peer);
}

static uint64_t away(void)
{
	uint64_t n = 0, v;
	struct proc *p = procs_first(reg);
	if (p)
		proc_lost(p, PROC_LOST_AWAY, &n, &v);
	return n;
}

static void setup(void)
{
	st = symtab_new();
	reg = procs_new(st);
}

static void teardown(void)
{
	procs_free(reg);
	symtab_free(st);
}

/* ---- 1. after another collector ------------------------------------------ */

static void test_other_collector(void)
{
	struct client k;
	struct buf b = { .len = 0 };

	setup();
	/* It took 571 samples: 446 the killed collector had written, 50
	 * arrive here; 75 died with the killed one. */
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 1, 446);
	samples(&b, 50);
	bye(&b, 571);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	CHECK(away() == 75,
	      "1.1 only the 75 the old collector never wrote are lost");
	CHECK(proc_info(procs_first(reg))->written_before == 446,
	      "1.2 the 446 written before are known");
	client_close(&k, 1);
	teardown();
}

/* ---- 2. the same collector, after the program closed our socket ---------- */

static void test_same_collector(void)
{
	struct client k;
	struct buf b = { .len = 0 };

	setup();
	/* 2.1 first connection: 100 samples, then the program closes
	 * every descriptor; the collector writes them and forgets it */
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 0, 0);
	samples(&b, 100);
	CHECK(client_send(&k, &b) == 0, "first stream taken");
	client_close(&k, 1);
	CHECK(procs_len(reg) == 0, "2.1 written and forgotten");
	/* the library reconnects: nothing was acknowledged to it */
	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 1, 0);
	samples(&b, 10);
	bye(&b, 110);
	CHECK(client_send(&k, &b) == 0, "second stream taken");
	CHECK(away() == 0,
	      "2.2 the second profile counts none of the first's as lost");
	client_close(&k, 1);

	/* 2.3 the same with 30 of the first 100 acknowledged (a --period
	 * window written while connected): nothing counted twice, and a
	 * real loss of 5 still shows */
	PID++;
	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 0, 0);
	samples(&b, 30);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	proc_mark_written(procs_first(reg));
	CHECK(conn_ack(k.c) == 0, "acknowledged");
	b.len = 0;
	more_samples(&b, 70);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	client_close(&k, 1);
	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 1, 30); /* the library's sum of acknowledgements */
	samples(&b, 10);
	bye(&b, 115);
	CHECK(client_send(&k, &b) == 0, "second stream taken");
	CHECK(away() == 5, "2.3 only the 5 really missing are lost");
	client_close(&k, 1);

	/* 2.4 not written (no output for it): counted as lost, as before */
	PID++;
	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 0, 0);
	samples(&b, 40);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	client_close(&k, 0);
	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 1, 0);
	bye(&b, 40);
	CHECK(client_send(&k, &b) == 0, "second stream taken");
	CHECK(away() == 40, "2.4 samples never written are still lost");
	client_close(&k, 1);
	teardown();
}

/* ---- 3. CTL_WRITTEN ------------------------------------------------------- */

/* The CTL_WRITTEN count waiting on the client's side, or -1. */
static long long read_ack(int fd)
{
	uint8_t b[64];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	unsigned type;
	size_t len;
	if (n < WIRE_HDR_LEN)
		return -1;
	wire_get_hdr(b, &type, &len);
	if (type != WIRE_CTL_WRITTEN || (size_t)n != WIRE_HDR_LEN + len)
		return -2;
	struct wire_in r = { b + WIRE_HDR_LEN, b + n, 1 };
	uint64_t key = wire_get_varint(&r), v = wire_get_varint(&r);
	return r.ok && wire_at_end(&r) && key == (WIRE_C_WRITTEN << 1)
		       ? (long long)v
		       : -3;
}

static void test_acks(void)
{
	struct client k;
	struct buf b = { .len = 0 };

	setup();
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 0, 0);
	samples(&b, 30);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	CHECK(conn_ack(k.c) == 0 && read_ack(k.peer) == -1,
	      "3.1 nothing is acknowledged before a write");
	proc_mark_written(procs_first(reg));
	CHECK(conn_ack(k.c) == 0 && read_ack(k.peer) == 30,
	      "3.2 after a write: CTL_WRITTEN 30");
	CHECK(conn_ack(k.c) == 0 && read_ack(k.peer) == -1,
	      "3.3 said once");
	b.len = 0;
	more_samples(&b, 12);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	proc_mark_written(procs_first(reg));
	CHECK(conn_ack(k.c) == 0 && read_ack(k.peer) == 42,
	      "3.4 a running total for the connection: 42");
	client_close(&k, 1);

	b.len = 0;
	CHECK_OR_RETURN(client_open(&k) == 0, "client", );
	hello(&b, 0, -1);
	samples(&b, 30);
	CHECK(client_send(&k, &b) == 0, "stream taken");
	proc_mark_written(procs_first(reg));
	CHECK(conn_ack(k.c) == 0 && read_ack(k.peer) == -1,
	      "3.5 none to a library whose HELLO had no WRITTEN");
	client_close(&k, 1);
	teardown();
}

int main(void)
{
	log_set_level(LOG_ERROR);
	test_other_collector();
	test_same_collector();
	test_acks();
	return check_summary();
}
