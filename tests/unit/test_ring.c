/*
 * test_ring.c - the sample ring against a plain FIFO (model test), and
 * under concurrent writers.
 *
 * 1.x  single writer: random reservation sizes, random "used" sizes and
 *      random drains; every record comes out once, in order, intact, and
 *      a refused reservation happens only when the ring is really full.
 * 2.x  four writer threads and one reader: every committed record is read
 *      exactly once, with its payload intact.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/ring.h"

struct rec {
	uint32_t seq, len;
};

/* the model: sequence numbers and lengths expected next */
static struct rec model[1 << 16];
static unsigned m_head, m_tail;
static int bad_payload, bad_order;

static void on_rec(const void *p, size_t len, void *arg)
{
	(void)arg;
	const uint32_t *w = p;
	if (m_tail == m_head || w[0] != model[m_tail % 65536].seq ||
	    w[1] != model[m_tail % 65536].len) {
		bad_order++;
		return;
	}
	if (len < w[1] * 4u + 8)
		bad_payload++;
	for (uint32_t i = 0; i < w[1]; i++)
		if (w[2 + i] != w[0] * 2654435761u + i)
			bad_payload++;
	m_tail++;
}

static void test_model(void)
{
	struct ring r;
	CHECK(ring_init(&r, 1 << 16) == 0, "1.0 ring maps");
	srand(7);
	uint32_t seq = 0;
	int refused = 0, refused_wrongly = 0;
	for (int step = 0; step < 200000; step++) {
		if (rand() % 3) {
			size_t len = 8 + (size_t)(rand() % 12000);
			uint32_t words = (uint32_t)(rand() % ((len - 8) / 4 + 1));
			uint64_t pos;
			uint64_t before = r.head - r.tail;
			uint32_t *p = ring_reserve_sigsafe(&r, len, &pos);
			if (!p) {
				refused++;
				/* refusing is right only without room */
				if (before + len + RING_HDR + 8 <= r.cap / 2)
					refused_wrongly++;
				continue;
			}
			p[0] = seq;
			p[1] = words;
			for (uint32_t i = 0; i < words; i++)
				p[2 + i] = seq * 2654435761u + i;
			ring_commit_sigsafe(&r, p, pos, len, 8 + words * 4u);
			model[m_head % 65536] = (struct rec){ seq, words };
			m_head++;
			seq++;
		} else {
			ring_drain(&r, on_rec, NULL);
		}
	}
	ring_drain(&r, on_rec, NULL);
	CHECK(m_tail == m_head, "1.1 every committed record is drained");
	CHECK(bad_order == 0, "1.2 records come out in order, once");
	CHECK(bad_payload == 0, "1.3 payloads are intact");
	CHECK(refused > 0, "1.4 the test did fill the ring");
	CHECK(refused_wrongly == 0, "1.5 no refusal while half the ring was free");
	CHECK(r.head == r.tail, "1.6 empty ring after the last drain");
	ring_fini(&r);
}

/* ---- concurrent writers ---- */

static struct ring cr;
static unsigned long seen[4];
static unsigned long corrupt;

static void *writer(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	unsigned seed = id + 1;
	for (uint32_t n = 0; n < 200000; n++) {
		size_t len = 16 + (size_t)(rand_r(&seed) % 512);
		uint32_t words = (uint32_t)((len - 8) / 4);
		uint64_t pos;
		uint32_t *p = ring_reserve_sigsafe(&cr, len, &pos);
		if (!p) {
			n--;
			/* full: let the reader catch up (on a loaded 2-core
			 * machine, four spinning writers starved it for
			 * minutes) */
			sched_yield();
			continue;
		}
		p[0] = id;
		p[1] = words;
		for (uint32_t i = 0; i < words; i++)
			p[2 + i] = id * 1000003u + n + i;
		ring_commit_sigsafe(&cr, p, pos, len, 8 + words * 4u);
	}
	return NULL;
}

static void on_crec(const void *p, size_t len, void *arg)
{
	(void)arg;
	(void)len;
	const uint32_t *w = p;
	if (w[0] >= 4) {
		corrupt++;
		return;
	}
	uint32_t base = w[2] - w[0] * 1000003u;
	for (uint32_t i = 0; i < w[1]; i++)
		if (w[2 + i] != w[0] * 1000003u + base + i)
			corrupt++;
	seen[w[0]]++;
}

static void test_concurrent(void)
{
	pthread_t t[4];
	CHECK(ring_init(&cr, 1 << 16) == 0, "2.0 ring maps");
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, writer, (void *)i);
	for (long spins = 0; spins < 400000000; spins++) {
		if (ring_drain(&cr, on_crec, NULL) == 0)
			sched_yield();
		int all = 1;
		for (int i = 0; i < 4; i++)
			all &= seen[i] == 200000;
		if (all)
			break;
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ring_drain(&cr, on_crec, NULL);
	for (int i = 0; i < 4; i++)
		CHECK(seen[i] == 200000, "2.1 every record of every writer read once");
	CHECK(corrupt == 0, "2.2 no torn record");
	ring_fini(&cr);
}

int main(void)
{
	test_model();
	test_concurrent();
	return check_summary();
}
