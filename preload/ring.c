/*
 * ring.c - see ring.h for the protocol. The two *_sigsafe functions are
 * async-signal-safe (atomics and plain stores only); ring_drain runs on the
 * agent thread.
 */
#include "ring.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define ALIGN8(n) (((n) + 7) & ~(uint64_t)7)

int ring_init(struct ring *r, size_t cap)
{
	uint64_t c = 4096;
	while (c < cap)
		c <<= 1;
	void *p = mmap(NULL, c, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	memset(r, 0, sizeof *r);
	r->base = p;
	r->cap = c;
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
	memset(r->base, 0, r->cap);
	r->head = r->tail = 0;
	r->n_full = 0;
}

static void put_hdr(uint8_t *at, uint64_t len, uint64_t type)
{
	/* pairs with the acquire load of the header in ring_drain */
	__atomic_store_n((uint64_t *)at, len | type << 32, __ATOMIC_RELEASE);
}

void *ring_reserve_sigsafe(struct ring *r, size_t len)
{
	uint64_t need = ALIGN8(RING_HDR + (uint64_t)len);
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
		put_hdr(r->base + off, pad, RING_PAD);
		off = 0;
	}
	return r->base + off + RING_HDR;
full:
	__atomic_fetch_add(&r->n_full, 1, __ATOMIC_RELAXED);
	return NULL;
}

void ring_commit_sigsafe(void *payload, size_t len, size_t used)
{
	uint8_t *rec = (uint8_t *)payload - RING_HDR;
	uint64_t need = ALIGN8(RING_HDR + (uint64_t)len);
	uint64_t actual = ALIGN8(RING_HDR + (uint64_t)used);
	if (actual > need)
		actual = need;
	if (need > actual)
		put_hdr(rec + actual, need - actual, RING_PAD);
	put_hdr(rec, actual, RING_SAMPLE);
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
		uint64_t hdr = __atomic_load_n((uint64_t *)rec,
					       __ATOMIC_ACQUIRE);
		if (!hdr)
			break; /* a writer is still filling this record */
		uint64_t len = hdr & 0xffffffffu, type = hdr >> 32;
		if (type == RING_SAMPLE) {
			fn(rec + RING_HDR, len - RING_HDR, arg);
			n++;
		}
		memset(rec, 0, len);
		tail += len;
		/* pairs with the acquire load of tail in reserve */
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}
