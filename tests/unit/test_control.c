/*
 * test_control.c - the collector's control of sampling (collector/
 * control.h): holds shared per process, leases, flush at a shorter hold's
 * end, stop at the last one's, processes that connect during a hold,
 * the done callback once every process acknowledged, and holds over one
 * user's processes alone.
 *
 * Real parts: the loop, connections (conn.h) over socket pairs, and the
 * wire codec. The test's end of each pair speaks the library's side of
 * the protocol as wire.h says it (HELLO, then a CTL_REPLY with the REQ of
 * each command); the library's own side is tested end to end (ctl.bats).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "daemon/conn.h"
#include "daemon/control.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

#define MS 1000000ull

struct lib {
	int fd;		/* the library's end                */
	struct conn *c; /* the collector's connection       */
	uint64_t pid;
};

static struct loop *lp;
static struct procs *reg;
static struct control *ctl;

static void on_fd(struct loop *loop, int fd, uint32_t events, void *arg)
{
	struct conn *c = arg;
	if ((events & EPOLLOUT) && conn_flush_out(c) == 0)
		loop_mod_fd(loop, fd, EPOLLIN);
	if (conn_read(c, 0)) {
		loop_del_fd(loop, fd);
		conn_free(c);
	}
}

static void stop_cb(struct loop *loop, struct loop_timer *t, void *arg)
{
	(void)t;
	(void)arg;
	loop_stop(loop);
}

/* Runs the loop for ms milliseconds. */
static void run(unsigned ms)
{
	loop_add_timer(lp, ms * MS, 0, stop_cb, NULL);
	loop_run(lp);
}

static void send_frame(int fd, unsigned type, const uint8_t *p, size_t n)
{
	uint8_t hdr[WIRE_HDR_LEN];
	wire_put_hdr_at(hdr, type, n);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, p, n) != (ssize_t)n)
		abort();
}

static void put(struct wire_out *w, unsigned tag, uint64_t v)
{
	wire_put_varint(w, (uint64_t)tag << 1);
	wire_put_varint(w, v);
}

/* A library connection; sampling: HELLO's SAMPLING, -1 to leave it out
 * (an older library). */
static struct lib lib_connect_s(uint64_t pid, int sampling)
{
	int fds[2];
	uint8_t b[256];
	struct wire_out w = { b, b + sizeof(b), 1 };
	struct lib l = { -1, NULL, pid };

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
		abort();
	l.fd = fds[1];
	l.c = conn_new(fds[0], getpid(), getuid(), reg);
	control_attach(ctl, l.c);
	loop_add_fd(lp, fds[0], EPOLLIN, on_fd, l.c);
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	put(&w, WIRE_H_VERSION, WIRE_VERSION);
	put(&w, WIRE_H_PID, pid);
	put(&w, WIRE_H_START_UNIX_NS, 1000 + pid);
	put(&w, WIRE_H_MODE, WIRE_MODE_CPU);
	put(&w, WIRE_H_PERIOD_NS, 10 * MS);
	if (sampling >= 0)
		put(&w, WIRE_H_SAMPLING, (uint64_t)sampling);
	send_frame(l.fd, WIRE_HELLO, b, (size_t)(w.p - b));
	run(5);
	return l;
}

static struct lib lib_connect(uint64_t pid)
{
	return lib_connect_s(pid, 0);
}

/* One command as the library reads it. */
struct cmd {
	unsigned type;
	uint64_t req, lease_ms, period_ns, hard;
	int has_lease;
};

/* Reads the next command on l, or returns 0 if none came. */
static int next_cmd(struct lib *l, struct cmd *c)
{
	uint8_t hdr[WIRE_HDR_LEN], p[WIRE_MAX_CTL_PAYLOAD];
	size_t n;
	memset(c, 0, sizeof(*c));
	if (read(l->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		return 0;
	wire_get_hdr(hdr, &c->type, &n);
	if (n > sizeof(p) || read(l->fd, p, n) != (ssize_t)n)
		abort();
	struct wire_in r = { p, p + n, 1 };
	while (r.ok && !wire_at_end(&r)) {
		uint64_t key = wire_get_varint(&r), v = wire_get_varint(&r);
		switch (key >> 1) {
		case WIRE_C_REQ:
			c->req = v;
			break;
		case WIRE_C_LEASE_MS:
			c->lease_ms = v;
			c->has_lease = 1;
			break;
		case WIRE_C_PERIOD_NS:
			c->period_ns = v;
			break;
		case WIRE_C_HARD:
			c->hard = v;
			break;
		}
	}
	return 1;
}

static void reply(struct lib *l, const struct cmd *c)
{
	uint8_t b[64];
	struct wire_out w = { b, b + sizeof(b), 1 };
	put(&w, WIRE_C_REQ, c->req);
	put(&w, WIRE_C_STATUS, WIRE_CTL_OK);
	put(&w, WIRE_C_SAMPLING, c->type == WIRE_CTL_START);
	send_frame(l->fd, WIRE_CTL_REPLY, b, (size_t)(w.p - b));
}

static int n_done[4];

static void done_cb(struct control_hold *h, void *arg)
{
	(void)h;
	n_done[(intptr_t)arg]++;
}

/* 1. one hold for every process: each gets one START, with a lease
 *    of the hold's time plus the margin */
static void test_one_hold_for_all(struct lib *a, struct lib *b)
{
	struct cmd c;
	unsigned holds = 9;
	struct control_hold *h1 =
		control_start(ctl, 0, 300 * MS, NULL, done_cb, (void *)1);
	CHECK(h1 != NULL, "1.1 hold made");
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_START, "1.2 A: START");
	CHECK(c.has_lease && c.lease_ms > 2200 && c.lease_ms <= 2300,
	      "1.3 A: lease = 300 ms + the 2 s margin");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_START, "1.4 B: START");
	reply(b, &c);
	CHECK(control_hold_procs(ctl, h1) == 2, "1.5 covers both");
	run(10);
	CHECK(control_proc_sampling(ctl, 100, &holds) == 1 && holds == 1,
	      "1.6 A's reply says it samples, one hold");
}

/* 2. a shorter hold on A alone shares A's session: no new START;
 *    its end flushes A (h1 still holds it), and its callback runs
 *    once A acknowledged */
static void test_shorter_hold_shares(struct lib *a, struct lib *b)
{
	struct cmd c;
	struct control_settings s = { .period_ns = 5 * MS };
	struct control_hold *h2 =
		control_start(ctl, 100, 100 * MS, &s, done_cb, (void *)2);
	run(10);
	CHECK(!next_cmd(a, &c), "2.1 A: nothing sent for the shorter hold");
	CHECK(control_n_holds(ctl) == 2, "2.2 two holds");
	run(120);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_FLUSH,
	      "2.3 A: FLUSH at the shorter hold's end");
	struct cmd none;
	CHECK(!next_cmd(b, &none), "2.4 B: nothing");
	CHECK(n_done[2] == 0, "2.5 h2's callback waits for A's answer");
	reply(a, &c);
	run(10);
	CHECK(n_done[2] == 1 && n_done[1] == 0, "2.6 h2 done, h1 not");
	(void)h2;
}

/* 3. h1's end: the last hold on each: STOP (not hard) to both */
static void test_last_hold_stops(struct lib *a, struct lib *b)
{
	struct cmd c;
	run(200);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_STOP && !c.hard,
	      "3.1 A: STOP, back to its own state");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_STOP, "3.2 B: STOP");
	run(10);
	CHECK(n_done[1] == 0, "3.3 h1 waits for B");
	reply(b, &c);
	run(10);
	CHECK(n_done[1] == 1, "3.4 h1 done once both answered");
}

/* 4. an open-ended hold: no lease; a process connecting during it
 *    gets it too; one that goes away does not hold up the end */
static void test_open_ended_hold(struct lib *a, struct lib *b)
{
	struct cmd c;
	struct control_hold *h3 =
		control_start(ctl, 0, 0, NULL, done_cb, (void *)3);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_START && !c.has_lease,
	      "4.1 A: START without a lease");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_START, "4.2 B: START");
	reply(b, &c);
	struct lib d = lib_connect(300);
	CHECK(next_cmd(&d, &c) && c.type == WIRE_CTL_START,
	      "4.3 a late process gets START");
	reply(&d, &c);
	CHECK(control_hold_procs(ctl, h3) == 3, "4.4 covers three");
	/* a longer hold on A renews its lease: none yet (open-ended) */
	control_end(ctl, h3);
	run(10);
	close(d.fd); /* D goes away without answering */
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_STOP, "4.5 A: STOP");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_STOP, "4.6 B: STOP");
	reply(b, &c);
	run(20);
	CHECK(n_done[3] == 1, "4.7 done: D's disconnect counts as its end");
}

/* 5. a longer hold renews the lease of a shorter one's session; 6. both
 *    cancelled */
static void test_renew_then_cancel(struct lib *a)
{
	struct cmd c;
	struct control_hold *h4 = control_start(ctl, 100, 200 * MS, NULL,
						NULL, NULL);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_START && c.lease_ms <= 2200,
	      "5.1 A: START, short lease");
	reply(a, &c);
	struct control_hold *h5 = control_start(ctl, 100, 5000 * MS, NULL,
						done_cb, (void *)0);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_START &&
		      c.lease_ms > 6900 && c.lease_ms <= 7000,
	      "5.2 A: START again with the longer lease");
	reply(a, &c);
	/* 6. cancel: no callback, and the session ends with the last */
	control_cancel(ctl, h5);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_FLUSH,
	      "6.1 A: FLUSH (h4 still holds it)");
	reply(a, &c);
	control_cancel(ctl, h4);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_STOP, "6.2 A: STOP");
	reply(a, &c);
	run(10);
	CHECK(n_done[0] == 0, "6.3 cancelled holds call nothing");
	CHECK(control_n_holds(ctl) == 0, "6.4 no hold left");
}

/* 7. a hold for one user's processes (--http-members' windows) covers
 *    those whose connection is that uid's, and no other: a member's
 *    window switches sampling on in no one else's process */
static void test_hold_of_one_user(struct lib *a, struct lib *b)
{
	struct cmd c;
	struct control_hold *h6 = control_start_uid(ctl, 0, getuid() + 1,
						    300 * MS, NULL, NULL, NULL);
	run(10);
	CHECK(h6 && control_hold_procs(ctl, h6) == 0,
	      "7.1 another user's hold covers neither A nor B");
	CHECK(!next_cmd(a, &c) && !next_cmd(b, &c),
	      "7.2 neither is sent anything");
	struct control_hold *h7 = control_start_uid(ctl, 0, getuid(),
						    300 * MS, NULL, NULL, NULL);
	run(10);
	CHECK(h7 && control_hold_procs(ctl, h7) == 2,
	      "7.3 their own user's hold covers both");
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_START, "7.4 A: START");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_START, "7.5 B: START");
	reply(b, &c);
	control_cancel(ctl, h6);
	control_cancel(ctl, h7);
	run(10);
	CHECK(next_cmd(a, &c) && c.type == WIRE_CTL_STOP, "7.6 A: STOP");
	reply(a, &c);
	CHECK(next_cmd(b, &c) && c.type == WIRE_CTL_STOP, "7.7 B: STOP");
	reply(b, &c);
	run(10);
	CHECK(control_n_holds(ctl) == 0, "7.8 no hold left");
}

int main(void)
{
	struct symtab *st = symtab_new();

	log_set_level(LOG_ERROR);
	lp = loop_new();
	reg = procs_new(st);
	ctl = control_new(lp);
	CHECK_OR_RETURN(lp && reg && ctl, "0.1 set up", 1);
	struct lib a = lib_connect(100), b = lib_connect_s(200, -1);
	unsigned holds = 9;
	CHECK(control_proc_sampling(ctl, 100, &holds) == 0 && holds == 0,
	      "0.2 A said it is dormant, no hold");
	CHECK(control_proc_sampling(ctl, 200, NULL) == -1,
	      "0.3 B did not say");
	CHECK(control_proc_sampling(ctl, 999, NULL) == -1,
	      "0.4 no such process");

	test_one_hold_for_all(&a, &b);
	test_shorter_hold_shares(&a, &b);
	test_last_hold_stops(&a, &b);
	test_open_ended_hold(&a, &b);
	test_renew_then_cancel(&a);
	test_hold_of_one_user(&a, &b);

	close(a.fd);
	close(b.fd);
	run(10);
	control_free(ctl);
	procs_free(reg);
	symtab_free(st);
	loop_free(lp);
	return check_summary();
}
