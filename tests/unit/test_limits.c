/*
 * test_limits.c - what one client can cost the collector at most: the
 * bounds in heapagg.h (blocks in use), proc.h (heap snapshots), conn.h
 * (time-outs, read buffer) and listener.h (out of descriptors).
 *
 *   1.x the live heap table stops at HEAPAGG_LIVE_MAX blocks; the rest is
 *       counted as lost, and a block freed makes room again;
 *   2.x heap snapshots: none for a process without heap data, at most
 *       one per PROC_SNAP_MIN_NS per process;
 *   3.x a connection that says nothing, or leaves a frame incomplete,
 *       expires (a big frame within seconds);
 *       one that streams does not; a half-sent big frame does not make
 *       the buffer grow past what arrived;
 *   4.x the listener accepts (and closes) a client even when the process
 *       has no descriptor left, so the backlog does not fill with clients
 *       that wait forever;
 *   5.x the definitions of all sessions, and of one uid's, stop at
 *       procs_set_def_limits's bounds (the collector's own uid has no
 *       share of its own), and a session that closes gives its bytes
 *       back.
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
#include "daemon/conn.h"
#include "daemon/heapagg.h"
#include "daemon/listener.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

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
		rc = heapagg_alloc(h, 1, 7, 0, 64, i * 16);
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
	CHECK(heapagg_alloc(h, 1, 7, 0, 64, 16) == 0 &&
		      heapagg_n_live(h) == HEAPAGG_LIVE_MAX,
	      "1.5 an address in use is still replaced when full");
	heapagg_release(h, 32);
	CHECK(heapagg_alloc(h, 1, 7, 0, 64, 0x7f00000000ull) == 0 &&
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
	struct proc_hello h = { .version = WIRE_VERSION, .pid = 4242, .start_unix_ns = 1700000000000000000ull, .has_start_unix = 1, .mode = WIRE_MODE_CPU, .period_ns = 10000000, .pyversion = none, .exe = none, .comm = none };
	char err[ERR_LEN];
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
	char err[ERR_LEN];
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
	struct proc_heap_rec r = { .kind = WIRE_HEAP_ALLOC, .node = 1, .thread = 1, .size = 100, .addr = 0x1000 };
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

/* ---- 3. connections: time-outs and the read buffer ---------------------- */

#define SEC 1000000000ull

struct pair {
	int peer;
	struct symtab *st;
	struct procs *reg;
	struct conn *c;
};

static int pair_open(struct pair *x)
{
	int fds[2];
	memset(x, 0, sizeof(*x));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) < 0)
		return -errno;
	x->peer = fds[1];
	x->st = symtab_new();
	x->reg = procs_new(x->st);
	x->c = conn_new(fds[0], getpid(), getuid(), x->reg);
	return x->c ? 0 : -ENOMEM;
}

static void pair_close(struct pair *x)
{
	struct proc *p = conn_free(x->c);
	if (p)
		procs_remove(x->reg, p);
	close(x->peer);
	procs_free(x->reg);
	symtab_free(x->st);
}

/* Writes n bytes (all of them: the socket buffer is drained by conn_read
 * between writes) and lets the connection read them. 0, or 1 when the
 * connection ended. */
static int pair_send(struct pair *x, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(x->peer, p, n);
		if (w < 0 && errno != EAGAIN)
			return -1;
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		}
		if (conn_read(x->c, 0))
			return 1;
	}
	return conn_read(x->c, 0);
}

static size_t hello_frame(uint8_t *buf, size_t cap)
{
	struct wire_out w = { buf + WIRE_HDR_LEN, buf + cap, 1 };
	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	wire_put_varint(&w, WIRE_H_VERSION << 1);
	wire_put_varint(&w, WIRE_VERSION);
	wire_put_varint(&w, WIRE_H_PID << 1);
	wire_put_varint(&w, 4343);
	size_t n = (size_t)(w.p - buf) - WIRE_HDR_LEN;
	wire_put_hdr_at(buf, WIRE_HELLO, n);
	return n + WIRE_HDR_LEN;
}

static void test_timeouts(void)
{
	static uint8_t big[WIRE_HDR_LEN + WIRE_MAX_PAYLOAD];
	struct pair x;
	uint8_t hb[128];
	size_t hn = hello_frame(hb, sizeof(hb));
	uint64_t t0;

	/* 3.1 a client that never says HELLO */
	CHECK_OR_RETURN(pair_open(&x) == 0, "pair", );
	t0 = conn_born_ns(x.c);
	CHECK(!conn_expired(x.c, t0 + CONN_HELLO_NS - SEC),
	      "3.1 a silent client is kept for a while");
	CHECK(conn_expired(x.c, t0 + CONN_HELLO_NS + SEC),
	      "3.2 ... and dropped without HELLO after CONN_HELLO_NS");
	pair_close(&x);

	/* 3.3 bytes waiting unread excuse the wait (the collector was
	 * busy); 3.4 after HELLO an idle client stays (a dormant
	 * process) */
	CHECK_OR_RETURN(pair_open(&x) == 0, "pair", );
	t0 = conn_born_ns(x.c);
	CHECK(write(x.peer, hb, hn) == (ssize_t)hn, "write");
	CHECK(!conn_expired(x.c, t0 + 100 * SEC),
	      "3.3 a HELLO waiting in the socket is not a time-out");
	CHECK(conn_read(x.c, 0) == 0, "HELLO taken");
	CHECK(!conn_expired(x.c, t0 + 3600 * SEC),
	      "3.4 an idle client after HELLO is kept");

	/* 3.5 a small frame left incomplete */
	wire_put_hdr_at(big, WIRE_STRING, 1000);
	memset(big + WIRE_HDR_LEN, 'a', 1000);
	CHECK(pair_send(&x, big, 100) == 0, "half a frame taken");
	t0 = loop_now_ns();
	CHECK(!conn_expired(x.c, t0 + CONN_FRAME_NS - SEC),
	      "3.5 an incomplete frame waits a while");
	CHECK(conn_expired(x.c, t0 + CONN_FRAME_NS + SEC),
	      "3.6 ... and not past CONN_FRAME_NS");
	pair_close(&x);

	/* 3.7 half of a 1 MiB frame: the buffer holds what arrived, not
	 * what the header announced; not whole, it goes within seconds */
	CHECK_OR_RETURN(pair_open(&x) == 0, "pair", );
	CHECK(pair_send(&x, hb, hn) == 0, "HELLO taken");
	wire_put_hdr_at(big, WIRE_SAMPLES, WIRE_MAX_PAYLOAD);
	memset(big + WIRE_HDR_LEN, 0, WIRE_MAX_PAYLOAD);
	CHECK(pair_send(&x, big, WIRE_MAX_PAYLOAD / 2) == 0,
	      "half a big frame taken");
	CHECK(conn_buf_size(x.c) < WIRE_MAX_PAYLOAD,
	      "3.7 half of a 1 MiB frame holds less than 1 MiB");
	t0 = loop_now_ns();
	CHECK(!conn_expired(x.c, t0),
	      "3.8 a big frame arriving is not a time-out");
	CHECK(conn_expired(x.c, t0 + CONN_BIG_NS + SEC),
	      "3.9 a big frame not whole after CONN_BIG_NS is dropped");
	pair_close(&x);

	/* 3.10 a big frame that completes: taken, and the buffer goes
	 * back to the busy size */
	CHECK_OR_RETURN(pair_open(&x) == 0, "pair", );
	CHECK(pair_send(&x, hb, hn) == 0, "HELLO taken");
	{
		/* a valid frame: a STRING of 60000 bytes, 17 of them */
		size_t n = 0;
		for (uint64_t id = 1; id <= 17; id++) {
			struct wire_out w = { big + n + WIRE_HDR_LEN,
					      big + sizeof(big), 1 };
			static uint8_t s[60000];
			wire_put_varint(&w, id);
			wire_put_bytes(&w, s, sizeof(s));
			size_t len = (size_t)(w.p - big) - n - WIRE_HDR_LEN;
			wire_put_hdr_at(big + n, WIRE_STRING, len);
			n += WIRE_HDR_LEN + len;
		}
		CHECK(pair_send(&x, big, n) == 0, "3.10 1 MB of strings taken");
	}
	CHECK(conn_buf_size(x.c) <= CONN_BUF_BUSY,
	      "3.11 the buffer is back to at most the busy size");
	pair_close(&x);
}

/* ---- 4. out of descriptors ------------------------------------------------- */

static int client_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void test_emfile(void)
{
	char dir[] = "/tmp/pyprof-limits.XXXXXX", path[128];
	char err[ERR_LEN];
	struct listener *l = NULL;
	struct rlimit old, low;
	int fillers[256], n_fill = 0, a, b, fd, rc;
	pid_t pid;
	uid_t uid;
	char byte;

	CHECK_OR_RETURN(mkdtemp(dir) != NULL, "mkdtemp", );
	snprintf(path, sizeof(path), "%s/s", dir);
	CHECK_OR_RETURN(listener_open(path, 0, &l, err) == 0, err, );
	a = client_connect(path);
	b = client_connect(path);
	CHECK_OR_RETURN(a >= 0 && b >= 0, "clients connected", );

	/* use up every descriptor under a low limit */
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = 64;
	CHECK_OR_RETURN(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit", );
	while (n_fill < 256 && (fd = dup(0)) >= 0)
		fillers[n_fill++] = fd;
	CHECK(n_fill < 256 && errno == EMFILE, "no descriptor left");

	rc = listener_accept(l, &fd, &pid, &uid);
	CHECK(rc == 1, "4.1 out of descriptors, a client is taken anyway");
	CHECK(read(a, &byte, 1) == 0,
	      "4.2 ... and closed: it sees the end of the stream");
	rc = listener_accept(l, &fd, &pid, &uid);
	CHECK(rc == 1 && read(b, &byte, 1) == 0,
	      "4.3 the spare descriptor is back: the next one too");
	CHECK(listener_accept(l, &fd, &pid, &uid) == -EAGAIN,
	      "4.4 nothing left waiting");

	while (n_fill > 0)
		close(fillers[--n_fill]);
	setrlimit(RLIMIT_NOFILE, &old);
	a = (close(a), client_connect(path));
	rc = listener_accept(l, &fd, &pid, &uid);
	CHECK(rc == 0 && pid == getpid(),
	      "4.5 with descriptors again, clients are served");
	if (rc == 0)
		close(fd);
	close(a);
	close(b);
	listener_close(l);
	rmdir(dir);
}

/* ---- 5. definitions of all sessions, and of one uid's ---------------- */

/* Opens a session of pid for uid in reg. NULL on failure. */
static struct proc_session *open_for(struct procs *reg, uint64_t pid,
				     unsigned uid)
{
	static const struct proc_bytes none = { (const uint8_t *)"", 0 };
	struct proc_hello h;
	struct proc_session *s;
	char err[ERR_LEN];
	int resumed;

	memset(&h, 0, sizeof(h));
	h.version = WIRE_VERSION;
	h.pid = pid;
	h.start_unix_ns = 1700000000000000000ull;
	h.has_start_unix = 1;
	h.mode = WIRE_MODE_CPU;
	h.period_ns = 10000000;
	h.pyversion = h.exe = h.comm = none;
	if (proc_session_open(reg, &h, &s, &resumed, err) < 0)
		return NULL;
	proc_session_set_uid(s, uid);
	return s;
}

/* Defines strings of 1000 bytes on s from id *next until one is refused
 * (its err in err) or n are; how many were. */
static int define(struct proc_session *s, uint64_t *next, int n, char *err)
{
	static uint8_t text[1000];
	int i;
	for (i = 0; i < n; i++) {
		if (proc_def_string(s, *next, text, sizeof(text), err) < 0)
			break;
		++*next;
	}
	return i;
}

static void close_session(struct procs *reg, struct proc_session *s)
{
	struct proc *p = proc_session_close(s);
	if (p)
		procs_remove(reg, p);
}

static void test_def_shares(void)
{
	struct symtab *st = symtab_new();
	struct procs *reg = st ? procs_new(st) : NULL;
	char err[ERR_LEN] = "";
	/* 1016 bytes a string (16 of them the fixed cost) */
	const uint64_t total = 100 * 1016, per_user = 30 * 1016;
	uint64_t a1 = 1, a2 = 1, b = 1, own = 1;

	CHECK_OR_RETURN(reg != NULL, "5.0 a registry", );
	procs_set_def_limits(reg, total, per_user, 1000);
	struct proc_session *sa1 = open_for(reg, 101, 2000);
	struct proc_session *sa2 = open_for(reg, 102, 2000);
	struct proc_session *sb = open_for(reg, 103, 3000);
	struct proc_session *so = open_for(reg, 104, 1000);
	CHECK_OR_RETURN(sa1 && sa2 && sb && so, "5.0 sessions", );

	CHECK(define(sa1, &a1, 20, err) == 20, "5.1 uid 2000 defines 20");
	CHECK(define(sa2, &a2, 20, err) == 10 &&
		      strstr(err, "uid 2000's clients") &&
		      strstr(err, "--max-memory-per-user"),
	      "5.2 ... and 10 more on another session, then its share "
	      "is full, err naming the option");
	CHECK(define(sb, &b, 20, err) == 20,
	      "5.3 uid 3000 still defines its own");
	CHECK(define(so, &own, 100, err) == 50 &&
		      strstr(err, "all clients") &&
		      strstr(err, "--max-memory"),
	      "5.4 our own uid has no share, but the bound on all holds");
	CHECK(procs_def_bytes(reg) == total,
	      "5.5 all sessions hold the bound, not more");
	close_session(reg, sa2);
	close_session(reg, so);
	CHECK(define(sa1, &a1, 20, err) == 10,
	      "5.6 a closed session gives back its uid's and the total's");
	close_session(reg, sa1);
	close_session(reg, sb);
	CHECK(procs_def_bytes(reg) == 0, "5.7 nothing held once all closed");
	procs_free(reg);
	symtab_free(st);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	test_heap_cap();
	test_snapshots();
	test_timeouts();
	test_emfile();
	test_def_shares();
	return check_summary();
}
