/*
 * ingest.c - collector ingest benchmark: clients blasting pre-encoded
 * SAMPLES frames over the real socket to a real pyprof-collector.
 *
 *   ingest --socket PATH --collector-pid PID [--clients N] [--samples N]
 *          [--batch N]
 *
 * Each client (a forked process with its own HELLO pid) sends a HELLO, a
 * program's definitions (a 30-frame chain with 500 leaves hanging off it,
 * 8 threads), then SAMPLES frames of --batch records (default 4096, about
 * 45 KB: the library sends frames of up to 256 KB) picked from 64
 * pre-encoded ones, until it has sent its share of --samples; then BYE,
 * shutdown(SHUT_WR), and it waits for the collector to close the
 * connection: the collector only sees our end of stream after it has
 * decoded everything before it, so the elapsed time covers ingest, not
 * just sending. Leaves follow a skewed distribution (a few hot stacks, a
 * long tail), like a sampled program.
 *
 * Prints one line: samples, elapsed seconds, samples per second, and the
 * collector's CPU seconds over the run from /proc/PID/stat (user + sys),
 * with samples per collector CPU second: the "one core" figure.
 *
 * Uses only wire.h's encoder; no collector code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyprof/wire.h"

#define N_CHAIN 30
#define N_LEAVES 500
#define N_THREADS 8
#define N_FRAMES 64

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			perror("realloc");
			exit(1);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static uint8_t scratch[WIRE_MAX_PAYLOAD];

static struct wire_out pay(void)
{
	return (struct wire_out){ scratch, scratch + sizeof(scratch), 1 };
}

static void frame(struct buf *b, unsigned type, struct wire_out *w)
{
	uint8_t hdr[WIRE_HDR_LEN];
	size_t n = (size_t)(w->p - scratch);
	if (!w->ok) {
		fprintf(stderr, "ingest: frame too big\n");
		exit(1);
	}
	wire_put_hdr_at(hdr, type, n);
	put(b, hdr, sizeof(hdr));
	put(b, scratch, n);
}

static void tagv(struct wire_out *w, unsigned tag, uint64_t v)
{
	wire_put_varint(w, (uint64_t)tag << 1);
	wire_put_varint(w, v);
}

static void tags(struct wire_out *w, unsigned tag, const char *s)
{
	wire_put_varint(w, (uint64_t)tag << 1 | 1);
	wire_put_bytes(w, s, strlen(s));
}

static void def3(struct buf *b, unsigned type, uint64_t x, uint64_t y,
		 uint64_t z)
{
	struct wire_out w = pay();
	wire_put_varint(&w, x);
	wire_put_varint(&w, y);
	wire_put_varint(&w, z);
	frame(b, type, &w);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* HELLO and definitions. Strings: 1 file, 2..N+1 names; functions and
 * locations 1..N_CHAIN+N_LEAVES; nodes 1..N_CHAIN chain, then leaves. */
static void preamble(struct buf *b, uint64_t pid, uint64_t start_ns)
{
	struct wire_out w = pay();
	size_t n_funcs = N_CHAIN + N_LEAVES;
	char name[32];

	memcpy(w.p, WIRE_MAGIC, WIRE_MAGIC_LEN);
	w.p += WIRE_MAGIC_LEN;
	tagv(&w, WIRE_H_VERSION, WIRE_VERSION);
	tagv(&w, WIRE_H_PID, pid);
	tagv(&w, WIRE_H_START_UNIX_NS, start_ns);
	tagv(&w, WIRE_H_START_MONO_NS, 1);
	tagv(&w, WIRE_H_MODE, WIRE_MODE_CPU);
	tagv(&w, WIRE_H_PERIOD_NS, 10000000);
	tags(&w, WIRE_H_EXE, "/usr/bin/python3");
	tags(&w, WIRE_H_COMM, "ingest");
	tags(&w, WIRE_H_ARG, "ingest");
	frame(b, WIRE_HELLO, &w);

	w = pay();
	wire_put_varint(&w, 1);
	wire_put_bytes(&w, "bench.py", 8);
	frame(b, WIRE_STRING, &w);
	for (size_t i = 0; i < n_funcs; i++) {
		int len = snprintf(name, sizeof(name), "func_%zu", i);
		w = pay();
		wire_put_varint(&w, i + 2);
		wire_put_bytes(&w, name, (size_t)len);
		frame(b, WIRE_STRING, &w);
	}
	for (size_t i = 1; i <= n_funcs; i++) {
		w = pay();
		wire_put_varint(&w, i);
		wire_put_varint(&w, i + 1);
		wire_put_varint(&w, i + 1);
		wire_put_varint(&w, 1);
		wire_put_varint(&w, i * 10);
		frame(b, WIRE_FUNCTION, &w);
		def3(b, WIRE_LOCATION, i, i, i * 10 + 3);
	}
	for (size_t i = 1; i <= N_CHAIN; i++)
		def3(b, WIRE_NODE, i, i - 1, i);
	for (size_t i = 1; i <= N_LEAVES; i++)
		def3(b, WIRE_NODE, N_CHAIN + i, 1 + rnd() % N_CHAIN,
		     N_CHAIN + i);
	for (size_t i = 1; i <= N_THREADS; i++)
		def3(b, WIRE_THREAD, i, pid + i, 0);
}

/* A leaf with a skewed distribution: half the samples on 8 hot leaves. */
static uint64_t pick_leaf(void)
{
	uint64_t r = rnd();
	if (r & 1)
		return N_CHAIN + 1 + (r >> 1) % 8;
	return N_CHAIN + 1 + (r >> 1) % N_LEAVES;
}

static void samples_frame(struct buf *b, size_t n)
{
	struct wire_out w = pay();
	wire_put_varint(&w, 1000000000);
	for (size_t i = 0; i < n; i++) {
		wire_put_varint(&w, pick_leaf());
		wire_put_varint(&w, 1 + rnd() % N_THREADS);
		wire_put_varint(&w, 100000 + rnd() % 2000000);
		wire_put_varint(&w, 1);
		wire_put_varint(&w, 10000000);
		wire_put_varint(&w, (rnd() & 3) ? 0 : WIRE_SF_GIL_KNOWN);
	}
	frame(b, WIRE_SAMPLES, &w);
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One client: returns 0 when the collector has taken everything. */
static int client(const char *path, uint64_t pid, uint64_t n_samples,
		  size_t batch)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct buf pre = { 0 }, frames[N_FRAMES], tail = { 0 };
	uint64_t sent = 0;
	char c;
	int fd, err;

	rng ^= pid * 0x2545f4914f6cdd1dull;
	preamble(&pre, pid, 1700000000000000000ull + pid);
	for (int i = 0; i < N_FRAMES; i++) {
		frames[i] = (struct buf){ 0 };
		samples_frame(&frames[i], batch);
	}
	struct wire_out w = pay();
	tagv(&w, WIRE_B_SAMPLES, n_samples);
	frame(&tail, WIRE_BYE, &w);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("ingest: connect");
		return 1;
	}
	if ((err = send_all(fd, pre.p, pre.len)) < 0)
		goto fail;
	for (int i = 0; sent < n_samples; i = (i + 1) % N_FRAMES) {
		if (n_samples - sent < batch) {
			/* The last, shorter frame. */
			struct buf last = { 0 };
			samples_frame(&last, n_samples - sent);
			err = send_all(fd, last.p, last.len);
			free(last.p);
			sent = n_samples;
		} else {
			err = send_all(fd, frames[i].p, frames[i].len);
			sent += batch;
		}
		if (err < 0)
			goto fail;
	}
	if ((err = send_all(fd, tail.p, tail.len)) < 0)
		goto fail;
	shutdown(fd, SHUT_WR);
	/* The collector closes once it has read up to our end of stream. */
	while (read(fd, &c, 1) > 0)
		;
	close(fd);
	return 0;
fail:
	fprintf(stderr, "ingest: send: %s\n", strerror(-err));
	return 1;
}

/* user + sys CPU seconds of pid, from /proc/PID/stat fields 14 and 15. */
static double cpu_seconds(long pid)
{
	char path[64], line[4096];
	unsigned long long ut = 0, st = 0;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	char *p = strrchr(line, ')'); /* comm may contain spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
				"%llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "collector-pid", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "samples", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	long cpid = 0;
	int n_clients = 1, opt, failed = 0;
	uint64_t n_samples = 20000000;
	size_t batch = 4096;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'p': cpid = strtol(optarg, NULL, 10); break;
		case 'c': n_clients = atoi(optarg); break;
		case 'n': n_samples = strtoull(optarg, NULL, 10); break;
		case 'b': batch = strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: ingest --socket PATH "
				"--collector-pid PID [--clients N] "
				"[--samples N] [--batch N]\n");
			return 2;
		}
	}
	if (!path || cpid <= 0 || n_clients < 1 || batch < 1 ||
	    batch > 60000) {
		fprintf(stderr, "ingest: --socket and --collector-pid are "
			"required; --batch 1..60000\n");
		return 2;
	}
	uint64_t each = n_samples / (uint64_t)n_clients;
	double cpu0 = cpu_seconds(cpid), t0 = now_s();
	for (int i = 0; i < n_clients; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			_exit(client(path, 100000 + (uint64_t)i, each, batch));
	}
	for (int i = 0; i < n_clients; i++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	double t1 = now_s(), cpu1 = cpu_seconds(cpid);
	double total = (double)(each * (uint64_t)n_clients);
	double cpu = cpu1 - cpu0;
	printf("ingest: clients=%d samples=%.0f elapsed=%.3f s "
	       "rate=%.2f M samples/s collector_cpu=%.2f s "
	       "per_core=%.2f M samples per collector CPU second\n",
	       n_clients, total, t1 - t0, total / (t1 - t0) / 1e6, cpu,
	       cpu > 0 ? total / cpu / 1e6 : 0.0);
	return failed;
}
