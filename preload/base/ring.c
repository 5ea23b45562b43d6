/*
 * ring.c - see ring.h for the protocol. The two *_sigsafe functions are
 * async-signal-safe (atomics and plain stores only); ring_drain runs on the
 * agent thread.
 */
#include "ring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* 16, the header size: a gap at the end of the array always fits a
 * padding header */
#define ALIGN16(n) (((n) + 15) & ~(uint64_t)15)

int ring_init(struct ring *r, size_t cap)
{
	uint64_t c = 4096;
	while (c < cap)
		c <<= 1;
	void *p = mmap(NULL, c, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	memset(r, 0, sizeof *r);
	r->base = p;
	r->cap = c;
	ring_reset(r);
	return 0;
}

void ring_fini(struct ring *r)
{
	if (r->base)
		munmap(r->base, r->cap);
	r->base = NULL;
}

void ring_reset(struct ring *r)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t k = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^
		     (uint64_t)getpid() << 32 ^ (uintptr_t)r->base;
	k ^= k >> 31;
	r->key = k * 0xBF58476D1CE4E5B9ull | 1;
	r->head = r->tail = 0;
	r->n_full = 0;
}

static void put_hdr(struct ring *r, uint8_t *at, uint64_t pos, uint64_t len,
		    uint64_t type)
{
	((uint32_t *)at)[2] = (uint32_t)len;
	((uint32_t *)at)[3] = (uint32_t)type;
	/* pairs with the acquire load of the tag in ring_drain */
	__atomic_store_n((uint64_t *)at, pos ^ r->key, __ATOMIC_RELEASE);
}

void *ring_reserve_sigsafe(struct ring *r, size_t len, uint64_t *pos)
{
	uint64_t need = ALIGN16(RING_HDR + (uint64_t)len);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	uint64_t off, pad;

	if (need > r->cap / 2)
		goto full;
	for (;;) {
		/* pairs with the release store of tail in ring_drain */
		uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		off = head & (r->cap - 1);
		pad = off + need > r->cap ? r->cap - off : 0;
		if (head + pad + need - tail > r->cap)
			goto full;
		if (__atomic_compare_exchange_n(&r->head, &head,
						head + pad + need, 1,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			break;
	}
	if (pad) {
		put_hdr(r, r->base + off, head, pad, RING_PAD);
		off = 0;
	}
	*pos = head + pad;
	return r->base + off + RING_HDR;
full:
	__atomic_fetch_add(&r->n_full, 1, __ATOMIC_RELAXED);
	return NULL;
}

void ring_commit_sigsafe(struct ring *r, void *payload, uint64_t pos,
			 size_t len, size_t used)
{
	uint8_t *rec = (uint8_t *)payload - RING_HDR;
	uint64_t need = ALIGN16(RING_HDR + (uint64_t)len);
	uint64_t actual = ALIGN16(RING_HDR + (uint64_t)used);
	if (actual > need)
		actual = need;
	if (need > actual) {
		uint64_t expect = pos + need;
		if (!__atomic_compare_exchange_n(&r->head, &expect,
						 pos + actual, 0,
						 __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			put_hdr(r, rec + actual, pos + actual, need - actual,
				RING_PAD);
	}
	put_hdr(r, rec, pos, actual, RING_SAMPLE);
}

size_t ring_drain(struct ring *r,
		  void (*fn)(const void *payload, size_t len, void *arg),
		  void *arg)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	size_t n = 0;

	while (tail < head) {
		uint8_t *rec = r->base + (tail & (r->cap - 1));
		uint64_t tag = __atomic_load_n((uint64_t *)rec,
					       __ATOMIC_ACQUIRE);
		if (tag != (tail ^ r->key))
			break; /* a writer is still filling this record */
		uint64_t len = ((uint32_t *)rec)[2];
		uint64_t type = ((uint32_t *)rec)[3];
		if (len < RING_HDR || (len & 15) ||
		    len > r->cap - (tail & (r->cap - 1)))
			break; /* cannot happen: our own writes */
		if (type == RING_SAMPLE) {
			fn(rec + RING_HDR, len - RING_HDR, arg);
			n++;
		}
		tail += len;
		/* pairs with the acquire load of tail in reserve */
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
		head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	}
	return n;
}
