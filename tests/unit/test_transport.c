/*
 * test_transport.c - the agent's connection to the collector
 * (preload/agent/transport.c): who may hear us, and what a broken
 * connection keeps, over real Unix sockets.
 *
 * 1.x  transport_check_dir: our own 0700 directory passes; a symbolic
 *      link, a file, a directory others may write (not sticky) and, as
 *      root, another user's directory are refused with a reason naming
 *      the remedy; a sticky one and a trusted user's pass; a missing one
 *      is "try later", not refused.
 * 2.x  transport_check_peer: our own listener passes; as root, a
 *      listener run by uid 65534 is refused unless trusted.
 * 3.x  the buffer: HELLO then data in order; data frames queued while no
 *      collector listens are sent on connecting; a connection that breaks
 *      keeps each unsent data frame whole and replays it after a new
 *      HELLO; a control reply is not replayed; the data cap says ENOSPC.
 * 4.x  a refused socket: nothing is queued or sent, ever.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "agent/transport.h"
#include "pyprof/wire.h"

static char dir[48];

static int listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 4) < 0)
		return -1;
	return fd;
}

/* A HELLO of our own making: 'H' and the connection's number. */
static size_t hello(uint8_t *buf, size_t cap, uint32_t seq, void *arg)
{
	(void)arg;
	if (cap < WIRE_HDR_LEN + 2)
		return 0;
	buf[WIRE_HDR_LEN] = 'H';
	buf[WIRE_HDR_LEN + 1] = (uint8_t)seq;
	wire_put_hdr_at(buf, WIRE_HELLO, 2);
	return WIRE_HDR_LEN + 2;
}

/* A data frame whose payload is n bytes of c. */
static size_t data_frame(uint8_t *buf, unsigned type, int c, size_t n)
{
	memset(buf + WIRE_HDR_LEN, c, n);
	wire_put_hdr_at(buf, type, n);
	return WIRE_HDR_LEN + n;
}

/* Everything readable on fd within ms, into buf; the bytes read. */
static size_t read_all(int fd, uint8_t *buf, size_t cap, int ms)
{
	size_t got = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (got < cap && poll(&p, 1, ms) > 0) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		ms = 50;
	}
	return got;
}

/* The frames in buf as a string of their first payload bytes ("H0 a b"
 * for a HELLO of connection 0, then frames of 'a' and 'b'). */
static void frames_of(const uint8_t *buf, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	while (n >= WIRE_HDR_LEN && o + 8 < cap) {
		unsigned type;
		size_t len;
		wire_get_hdr(buf, &type, &len);
		if (len + WIRE_HDR_LEN > n)
			break;
		if (type == WIRE_HELLO)
			o += (size_t)snprintf(out + o, cap - o, "%sH%u",
					      o ? " " : "",
					      (unsigned)buf[WIRE_HDR_LEN + 1]);
		else
			o += (size_t)snprintf(out + o, cap - o, "%s%c",
					      o ? " " : "",
					      len ? buf[WIRE_HDR_LEN] : '-');
		buf += WIRE_HDR_LEN + len;
		n -= WIRE_HDR_LEN + len;
	}
}

static void test_dir(void)
{
	char why[400], p[128], sub[96];
	snprintf(p, sizeof p, "%s/s.sock", dir);
	CHECK(transport_check_dir(p, -1, why, sizeof why) == 0,
	      "1.1 our own 0700 directory passes");

	snprintf(sub, sizeof sub, "%s/link", dir);
	CHECK(symlink(dir, sub) == 0, "1.2 made a symbolic link");
	snprintf(p, sizeof p, "%s/s.sock", sub);
	why[0] = 0;
	CHECK(transport_check_dir(p, -1, why, sizeof why) == -EPERM &&
		      strstr(why, "is a symbolic link"),
	      "1.2 a directory that is a symbolic link is refused");

	snprintf(sub, sizeof sub, "%s/file", dir);
	close(open(sub, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof p, "%s/s.sock", sub);
	CHECK(transport_check_dir(p, -1, why, sizeof why) == -EPERM &&
		      strstr(why, "is not a directory"),
	      "1.3 a file in the directory's place is refused");

	snprintf(sub, sizeof sub, "%s/open", dir);
	mkdir(sub, 0700);
	chmod(sub, 0777);
	snprintf(p, sizeof p, "%s/s.sock", sub);
	why[0] = 0;
	CHECK(transport_check_dir(p, -1, why, sizeof why) == -EPERM &&
		      strstr(why, "writable by other users (mode 0777)") &&
		      strstr(why, "chmod go-w"),
	      "1.4 a directory anyone may write is refused, with the remedy");
	chmod(sub, 01777);
	CHECK(transport_check_dir(p, -1, why, sizeof why) == 0,
	      "1.5 the same, sticky (as /tmp), passes");

	snprintf(p, sizeof p, "%s/none/s.sock", dir);
	CHECK(transport_check_dir(p, -1, why, sizeof why) == -ENOENT,
	      "1.6 a directory not made yet is to try later, not refused");

	if (geteuid() != 0)
		return;
	snprintf(sub, sizeof sub, "%s/theirs", dir);
	mkdir(sub, 0700);
	CHECK(chown(sub, 65534, 65534) == 0, "1.7 chown to uid 65534");
	snprintf(p, sizeof p, "%s/s.sock", sub);
	why[0] = 0;
	CHECK(transport_check_dir(p, -1, why, sizeof why) == -EPERM &&
		      strstr(why, "belongs to uid 65534") &&
		      strstr(why, "PYPROF_COLLECTOR_USER=65534"),
	      "1.7 another user's directory is refused, naming the variable");
	CHECK(transport_check_dir(p, 65534, why, sizeof why) == 0,
	      "1.8 the same directory passes when that user is trusted");
}

static void test_peer(void)
{
	char why[400], p[96];
	snprintf(p, sizeof p, "%s/peer.sock", dir);
	int l = listen_at(p);
	CHECK_OR_RETURN(l >= 0, "2.0 listening", );
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p);
	CHECK(connect(c, (struct sockaddr *)&sa, sizeof sa) == 0,
	      "2.1 connected");
	CHECK(transport_check_peer(c, -1, why, sizeof why) == 0,
	      "2.1 our own listener passes");
	close(c);
	close(l);
	if (geteuid() != 0)
		return;
	/* a listener of uid 65534: a child that binds as root, gives up
	 * root, then listens and accepts (SO_PEERCRED is the listener's
	 * credentials at listen()) */
	int ready[2];
	CHECK_OR_RETURN(pipe(ready) == 0, "2.2 pipe", );
	unlink(p);
	pid_t pid = fork();
	if (pid == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(a.sun_path, sizeof a.sun_path, "%s", p);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
		    setgid(65534) < 0 || setuid(65534) < 0 || listen(fd, 1) < 0)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		int s = accept(fd, NULL, NULL);
		char b;
		(void)!read(s, &b, 1);
		_exit(0);
	}
	char r = 0;
	CHECK(read(ready[0], &r, 1) == 1 && r == 'r', "2.2 theirs listens");
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(connect(c, (struct sockaddr *)&sa, sizeof sa) == 0,
	      "2.2 connected to theirs");
	why[0] = 0;
	CHECK(transport_check_peer(c, -1, why, sizeof why) == -EPERM &&
		      strstr(why, "runs as uid 65534") &&
		      strstr(why, "PYPROF_COLLECTOR_USER=65534"),
	      "2.2 a collector run by another user is refused");
	CHECK(transport_check_peer(c, 65534, why, sizeof why) == 0,
	      "2.3 ... and passes when that user is trusted");
	close(c);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(ready[1]);
}

/* Pumps t until it has nothing to send (or 2 s). */
static void drain(struct transport *t, uint64_t *now)
{
	for (int i = 0; i < 200 && transport_pending(t); i++) {
		*now += 1000000;
		transport_pump(t, *now);
		usleep(10000);
	}
}

static void test_buffer(void)
{
	struct transport t;
	struct intern in;
	uint8_t f[256], got[4096];
	char frames[256], p[128];
	uint64_t now = 1000000000ull;

	memset(&in, 0, sizeof in);
	snprintf(p, sizeof p, "%s/c.sock", dir);
	unlink(p);
	transport_init(&t, p, -1);

	/* no collector yet: data waits */
	CHECK(transport_connect(&t, now, hello, NULL, &in) == 0,
	      "3.1 nothing listens: no connection");
	CHECK(transport_put_data(&t, f, data_frame(f, WIRE_SAMPLES, 'a', 10)) ==
		      0,
	      "3.1 a data frame waits");
	CHECK(transport_put_ctl(&t, f, data_frame(f, WIRE_SAMPLES, 'x', 3)) ==
		      -ENOTCONN,
	      "3.2 a control reply needs a connection");

	int l = listen_at(p);
	CHECK_OR_RETURN(l >= 0, "3.3 listening", );
	now += 2000000000ull; /* past the backoff */
	CHECK(transport_connect(&t, now, hello, NULL, &in) == 1,
	      "3.3 connects once a collector listens");
	CHECK(transport_put_data(&t, f, data_frame(f, WIRE_SAMPLES, 'b', 20)) ==
		      0,
	      "3.3 a second data frame");
	int s = accept(l, NULL, NULL);
	drain(&t, &now);
	size_t n = read_all(s, got, sizeof got, 500);
	frames_of(got, n, frames, sizeof frames);
	CHECK(strcmp(frames, "H0 a b") == 0,
	      "3.3 the HELLO, then the waiting frame, then the new one");

	/* a connection that breaks with frames unsent: kept whole */
	close(s);
	CHECK(transport_put_data(&t, f, data_frame(f, WIRE_SAMPLES, 'c', 30)) ==
		      0,
	      "3.4 a frame queued as the connection breaks");
	CHECK(transport_put_ctl(&t, f, data_frame(f, WIRE_SAMPLES, 'x', 3)) ==
		      0,
	      "3.4 a control reply queued too");
	for (int i = 0; i < 20 && t.fd >= 0; i++) {
		now += 1000000;
		transport_pump(&t, now);
		usleep(5000);
	}
	CHECK(t.fd < 0, "3.4 the broken connection is dropped");
	now += 2000000000ull;
	CHECK(transport_connect(&t, now, hello, NULL, &in) == 1,
	      "3.5 reconnects");
	s = accept(l, NULL, NULL);
	drain(&t, &now);
	n = read_all(s, got, sizeof got, 500);
	frames_of(got, n, frames, sizeof frames);
	CHECK(strcmp(frames, "H1 c") == 0,
	      "3.5 a new HELLO, the kept data frame whole, the control reply "
	      "not replayed");
	close(s);
	for (int i = 0; i < 20 && t.fd >= 0; i++) {
		now += 1000000;
		transport_pump(&t, now);
		usleep(5000);
	}

	/* the cap on data waiting while no collector reads */
	close(l);
	unlink(p);
	static uint8_t big[65536 + WIRE_HDR_LEN];
	int rc = 0;
	size_t queued = 0;
	while (rc == 0 && queued < 2 * TRANSPORT_DATA_CAP) {
		rc = transport_put_data(&t, big,
					data_frame(big, WIRE_SAMPLES, 'd', 65536));
		queued += rc == 0 ? sizeof big : 0;
	}
	CHECK(rc == -ENOSPC && queued <= TRANSPORT_DATA_CAP + sizeof big,
	      "3.6 data waiting past the cap: ENOSPC, the frame not queued");
	transport_fini(&t);
	intern_free(&in);
}

static void test_refused(void)
{
	struct transport t;
	struct intern in;
	uint8_t f[64];
	char p[128], sub[96];
	uint64_t now = 1000000000ull;

	memset(&in, 0, sizeof in);
	snprintf(sub, sizeof sub, "%s/wide", dir);
	mkdir(sub, 0700);
	snprintf(p, sizeof p, "%s/c.sock", sub);
	int l = listen_at(p);
	CHECK_OR_RETURN(l >= 0, "4.0 listening", );
	chmod(sub, 0777);
	transport_init(&t, p, -1);
	CHECK(transport_connect(&t, now, hello, NULL, &in) == -EPERM &&
		      t.refused,
	      "4.1 a collector in a directory anyone may write is refused");
	CHECK(transport_put_data(&t, f, data_frame(f, WIRE_SAMPLES, 'a', 8)) ==
			      0 &&
		      transport_pending(&t) == 0,
	      "4.2 refused: data is dropped, nothing pending");
	now += 5000000000ull;
	CHECK(transport_connect(&t, now, hello, NULL, &in) == 0,
	      "4.3 and no second attempt");
	struct pollfd pf = { .fd = l, .events = POLLIN };
	CHECK(poll(&pf, 1, 100) == 0, "4.4 the listener saw no connection");
	close(l);
	transport_fini(&t);
	intern_free(&in);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/pyprof-tt.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_dir();
	test_peer();
	test_buffer();
	test_refused();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_summary();
}
