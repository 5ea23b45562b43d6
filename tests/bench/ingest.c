/*
 * ingest.c - collector ingest benchmark: clients blasting pre-encoded
 * SAMPLES frames over the real socket to a real pyprof-collector.
 *
 *   ingest --socket PATH --collector-pid PID [--clients N] [--samples N]
 *          [--batch N] [--now]
 *   ingest --socket PATH --collector-pid PID --churn N [--clients N]
 *   ingest --socket PATH --collector-pid PID --heap [--clients N]
 *          [--samples N] [--batch N]
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
 * --now: the frames' samples are stamped from the current CLOCK_MONOTONIC
 * time on (a few seconds' worth) instead of from 1 s, so that they fall
 * inside the profile windows an HTTP client has open (tests/bench/http.sh
 * measures ingest with windows open).
 *
 * --churn N: memory after N short-lived processes. A resident client
 * connects first and stays (so the collector always holds a process and
 * cannot simply drop its symbol tables); then --clients workers (default
 * 8) run N short clients between them, each a process of its own pid
 * whose CHURN_FUNCS function names and file name are its own (so
 * nothing is shared between them: the worst case for the symbol tables),
 * sending CHURN_SAMPLES samples, BYE, and waiting for the collector to
 * close. The collector's resident memory (VmRSS) is read after the first
 * CHURN_WARMUP clients (the baseline: buffers and tables at their working
 * size) and after all of them, once the collector has had a moment to
 * give memory back; prints one line with both, the peak (VmHWM), and
 * exits 1 if the end is more than CHURN_SLACK_KB above the baseline.
 *
 * --heap: HEAP frames instead of SAMPLES (--samples counts their
 * records), the heap of a program that grows and churns: each client
 * allocates (sizes log-uniform from 16 B to 1 MiB, on the skewed leaves,
 * rate 512 KiB) with few frees until HEAP_LIVE blocks are in use, then
 * frees and allocates alternately around that level, then drops to
 * HEAP_LIVE / 2 and grows back past its last high, and so on: a
 * collector's in-use estimate reaches a new high in every cycle (the
 * peak's copies) and churns in between (its adds and subtracts).
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
#define CHURN_FUNCS 200
#define CHURN_SAMPLES 200
#define CHURN_WARMUP 500
#define CHURN_SLACK_KB 2048
#define HEAP_LIVE 20000
#define HEAP_CYCLE 200000 /* records from one high to the next */

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
 * locations 1..N_CHAIN+n_leaves; nodes 1..N_CHAIN chain, then leaves.
 * With own_names, every name carries the pid, so that no other client
 * defines the same strings. */
static void preamble(struct buf *b, uint64_t pid, uint64_t start_ns,
		     size_t n_leaves, int own_names)
{
	struct wire_out w = pay();
	size_t n_funcs = N_CHAIN + n_leaves;
	char name[64];
	int len;

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
	len = own_names ? snprintf(name, sizeof(name), "/srv/app/p%llu/bench.py",
				   (unsigned long long)pid)
			: snprintf(name, sizeof(name), "bench.py");
	wire_put_bytes(&w, name, (size_t)len);
	frame(b, WIRE_STRING, &w);
	for (size_t i = 0; i < n_funcs; i++) {
		len = own_names ? snprintf(name, sizeof(name), "p%llu_func_%zu",
					   (unsigned long long)pid, i)
				: snprintf(name, sizeof(name), "func_%zu", i);
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
	for (size_t i = 1; i <= n_leaves; i++)
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

static uint64_t frame_base_ns = 1000000000; /* --now: CLOCK_MONOTONIC */

static void samples_frame(struct buf *b, size_t n)
{
	struct wire_out w = pay();
	wire_put_varint(&w, frame_base_ns);
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

/* ---- --heap ---------------------------------------------------------------- */

static int heap_mode;

/* One client's heap: addresses in use, and where its cycle is. */
struct heap_state {
	uint64_t live[4 * HEAP_LIVE];
	size_t n_live, level;
	uint64_t next_addr, n_done;
};

static void heap_alloc(struct heap_state *h, struct wire_out *w)
{
	uint64_t r = rnd();
	uint64_t size = 16ull << (r % 17); /* 16 B .. 1 MiB */
	size += (r >> 8) % size;
	uint64_t addr = h->next_addr += 64;
	wire_put_varint(w, WIRE_HEAP_ALLOC);
	wire_put_varint(w, pick_leaf());
	wire_put_varint(w, 1 + rnd() % N_THREADS);
	wire_put_varint(w, size);
	wire_put_varint(w, addr);
	h->live[h->n_live++] = addr;
}

static void heap_free(struct heap_state *h, struct wire_out *w)
{
	size_t i = (size_t)(rnd() % h->n_live);
	wire_put_varint(w, WIRE_HEAP_FREE);
	wire_put_varint(w, h->live[i]);
	h->live[i] = h->live[--h->n_live];
}

/* A HEAP frame of n records continuing h's cycle: grow to level (80%
 * allocations), churn there, and every HEAP_CYCLE records fall to half
 * and set the level 10% above the last. */
static void heap_frame(struct buf *b, struct heap_state *h, size_t n)
{
	struct wire_out w = pay();
	wire_put_varint(&w, 524288);
	for (size_t i = 0; i < n; i++, h->n_done++) {
		if (h->n_done % HEAP_CYCLE == 0) {
			h->level = h->level ? h->level + h->level / 10
					    : HEAP_LIVE;
			if (h->level > 3 * HEAP_LIVE)
				h->level = HEAP_LIVE;
			while (h->n_live > h->level / 2 && i < n) {
				heap_free(h, &w);
				i++, h->n_done++;
			}
			if (i == n)
				break;
		}
		int grow = h->n_live < h->level ? rnd() % 5 != 0
						: rnd() % 2 == 0;
		if (h->n_live == 0 || (grow && h->n_live < 4 * HEAP_LIVE))
			heap_alloc(h, &w);
		else
			heap_free(h, &w);
	}
	frame(b, WIRE_HEAP, &w);
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
	preamble(&pre, pid, 1700000000000000000ull + pid, N_LEAVES, 0);
	for (int i = 0; i < N_FRAMES; i++) {
		frames[i] = (struct buf){ 0 };
		samples_frame(&frames[i], batch);
	}
	struct wire_out w = pay();
	tagv(&w, WIRE_B_SAMPLES, heap_mode ? 0 : n_samples);
	frame(&tail, WIRE_BYE, &w);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("ingest: connect");
		return 1;
	}
	if ((err = send_all(fd, pre.p, pre.len)) < 0)
		goto fail;
	if (heap_mode) {
		struct heap_state *hs = calloc(1, sizeof(*hs));
		struct buf hb = { 0 };
		if (!hs) {
			perror("calloc");
			return 1;
		}
		hs->next_addr = 0x7f0000000000ull;
		while (sent < n_samples && err == 0) {
			size_t k = n_samples - sent < batch
					   ? (size_t)(n_samples - sent)
					   : batch;
			hb.len = 0;
			heap_frame(&hb, hs, k);
			err = send_all(fd, hb.p, hb.len);
			sent += k;
		}
		free(hb.p);
		free(hs);
		if (err < 0)
			goto fail;
		n_samples = 0; /* BYE: no CPU samples */
	}
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

/* ---- churn --------------------------------------------------------------- */

/* Connects, sends b, ends our side and waits until the collector has
 * read everything and closed. keep: return the open socket instead of
 * ending (the resident client); -1 on failure. */
static int send_and_wait(const char *path, const struct buf *b, int keep)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char c;
	int fd, err;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("ingest: connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((err = send_all(fd, b->p, b->len)) < 0) {
		fprintf(stderr, "ingest: send: %s\n", strerror(-err));
		close(fd);
		return -1;
	}
	if (keep)
		return fd;
	shutdown(fd, SHUT_WR);
	while (read(fd, &c, 1) > 0)
		;
	close(fd);
	return 0;
}

/* One short-lived process: its own names, a few samples, BYE. */
static void churn_stream(struct buf *b, uint64_t pid, int bye)
{
	const size_t n_leaves = CHURN_FUNCS - N_CHAIN;
	struct wire_out w;

	b->len = 0;
	preamble(b, pid, 1700000000000000000ull + pid, n_leaves, 1);
	w = pay();
	wire_put_varint(&w, 1000000000);
	for (int i = 0; i < CHURN_SAMPLES; i++) {
		wire_put_varint(&w, N_CHAIN + 1 + rnd() % n_leaves);
		wire_put_varint(&w, 1 + rnd() % N_THREADS);
		wire_put_varint(&w, 10000000);
		wire_put_varint(&w, 1);
		wire_put_varint(&w, 10000000);
		wire_put_varint(&w, 0);
	}
	frame(b, WIRE_SAMPLES, &w);
	if (!bye)
		return;
	w = pay();
	tagv(&w, WIRE_B_SAMPLES, CHURN_SAMPLES);
	frame(b, WIRE_BYE, &w);
}

/* n clients with pids first.., spread over n_workers processes. */
static int churn_run(const char *path, uint64_t first, int n, int n_workers)
{
	int failed = 0;
	for (int k = 0; k < n_workers; k++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			struct buf b = { 0 };
			for (int i = k; i < n; i += n_workers) {
				churn_stream(&b, first + (uint64_t)i, 1);
				if (send_and_wait(path, &b, 0) < 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < n_workers; k++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	return failed;
}

/* A field of /proc/PID/status in kB, or -1. */
static long status_kb(long pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long v = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, flen) == 0 && line[flen] == ':')
			v = strtol(line + flen + 1, NULL, 10);
	fclose(f);
	return v;
}

static void settle(void)
{
	/* The collector hands freed memory back 200 ms after the last
	 * removal (collector/daemon/output.c). */
	struct timespec d = { 0, 600 * 1000 * 1000 };
	nanosleep(&d, NULL);
}

static double cpu_seconds(long pid);

static int churn(const char *path, long cpid, int n, int n_workers)
{
	struct buf res = { 0 };
	double t0, cpu0;
	long base, end, hwm;
	int fd, failed;
	char c;

	/* The resident process, connected throughout. */
	churn_stream(&res, 900000, 0);
	fd = send_and_wait(path, &res, 1);
	if (fd < 0)
		return 1;
	failed = churn_run(path, 1000000, CHURN_WARMUP, n_workers);
	settle();
	base = status_kb(cpid, "VmRSS");
	t0 = now_s();
	cpu0 = cpu_seconds(cpid);
	failed |= churn_run(path, 2000000, n, n_workers);
	double elapsed = now_s() - t0, cpu = cpu_seconds(cpid) - cpu0;
	settle();
	end = status_kb(cpid, "VmRSS");
	hwm = status_kb(cpid, "VmHWM");
	shutdown(fd, SHUT_WR);
	while (read(fd, &c, 1) > 0)
		;
	close(fd);
	free(res.p);
	printf("churn: %d short-lived processes (%d functions each, none "
	       "shared) beside a resident one: collector RSS %ld kB after "
	       "%d (baseline), %ld kB after %d more (%+ld kB), peak %ld kB; "
	       "%.2f s, collector CPU %.2f s\n", n, CHURN_FUNCS, base,
	       CHURN_WARMUP, end, n, end - base, hwm, elapsed, cpu);
	if (failed)
		fprintf(stderr, "churn: a client failed\n");
	if (base < 0 || end < 0 || end > base + CHURN_SLACK_KB) {
		fprintf(stderr, "churn: memory did not return to its baseline "
			"(%ld kB > %ld + %d kB)\n", end, base, CHURN_SLACK_KB);
		failed = 1;
	}
	return failed;
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
		{ "churn", required_argument, NULL, 'C' },
		{ "now", no_argument, NULL, 'N' },
		{ "heap", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	long cpid = 0;
	int n_clients = 1, opt, failed = 0, n_churn = 0, clients_set = 0;
	uint64_t n_samples = 20000000;
	size_t batch = 4096;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'p': cpid = strtol(optarg, NULL, 10); break;
		case 'c': n_clients = atoi(optarg); clients_set = 1; break;
		case 'C': n_churn = atoi(optarg); break;
		case 'n': n_samples = strtoull(optarg, NULL, 10); break;
		case 'b': batch = strtoul(optarg, NULL, 10); break;
		case 'H': heap_mode = 1; break;
		case 'N': {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			frame_base_ns = (uint64_t)ts.tv_sec * 1000000000u +
					(uint64_t)ts.tv_nsec;
			break;
		}
		default:
			fprintf(stderr, "usage: ingest --socket PATH "
				"--collector-pid PID [--clients N] "
				"[--samples N] [--batch N] [--churn N] "
				"[--now] [--heap]\n");
			return 2;
		}
	}
	if (!path || cpid <= 0 || n_clients < 1 || batch < 1 ||
	    batch > 60000) {
		fprintf(stderr, "ingest: --socket and --collector-pid are "
			"required; --batch 1..60000\n");
		return 2;
	}
	if (n_churn > 0)
		return churn(path, cpid, n_churn, clients_set ? n_clients : 8);
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
	const char *what = heap_mode ? "heap records" : "samples";
	printf("ingest: clients=%d %s=%.0f elapsed=%.3f s "
	       "rate=%.2f M %s/s collector_cpu=%.2f s "
	       "per_core=%.2f M %s per collector CPU second\n",
	       n_clients, heap_mode ? "heap_records" : "samples", total,
	       t1 - t0, total / (t1 - t0) / 1e6, what, cpu,
	       cpu > 0 ? total / cpu / 1e6 : 0.0, what);
	return failed;
}
