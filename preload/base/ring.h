/*
 * ring.h - the sample ring: many signal handlers write, one agent reads.
 *
 * Who writes: the SIGPROF handler on any application thread (and the wall
 *   sampler later), concurrently, through ring_reserve_sigsafe() and
 *   ring_commit_sigsafe(). Writers never wait: no room means the sample is
 *   counted in n_full and dropped.
 * Who reads: the agent thread only, through ring_drain().
 *
 * Layout: a power-of-two byte array (mmap'd and faulted in once, at
 *   start-up) holding 16-byte-aligned records. Each record starts with a
 *   16-byte header: a 64-bit tag, then u32 len (the record's whole size,
 *   header included) and u32 type (RING_SAMPLE or RING_PAD). Positions
 *   (head, tail) are 64-bit byte counts that only grow, and a record is
 *   committed when its tag equals its own position XOR a random per-ring
 *   key: bytes left from an earlier lap cannot pass for a committed
 *   header (they would have to equal that exact value), so the reader never
 *   has to clear what it consumed. Clearing cost more than the rest of the
 *   handler: every cache line the reader wrote had to travel back to the
 *   writer's core. A record never wraps: a writer that would cross the end
 *   reserves the tail of the array as a RING_PAD record too.
 *
 * Protocol and memory order:
 *   - a writer loads tail (acquire, pairs with the reader's release store
 *     of tail), then claims [head, head+n) with a CAS on head;
 *   - it fills the payload and len/type, then stores the tag (release;
 *     pairs with the reader's acquire load of it);
 *   - the reader, at tail, loads the tag (acquire); a tag other than
 *     tail ^ key means the writer there is not done, and the drain stops
 *     (records behind it wait);
 *   - after consuming a record the reader stores tail (release).
 *   A writer may reserve more than it uses (the handler does not know the
 *   depth ahead) and gives the rest back at commit time: by moving head
 *   back with a CAS when nobody reserved after it (the common case), else
 *   as a padding record.
 *
 * Overflow: counted, never blocking. Fork: the child calls ring_reset().
 */
#ifndef PYPROF_RING_H
#define PYPROF_RING_H

#include <stddef.h>
#include <stdint.h>

enum ring_type { RING_SAMPLE = 1,
		 RING_PAD = 2 };

#define RING_HDR 16

struct ring {
	uint8_t *base; /* cap bytes, mmap'd                    */
	uint64_t cap;  /* power of two                         */
	uint64_t key;  /* tag key, random per ring             */
	/* written by writers (CAS), read by both */
	uint64_t head __attribute__((aligned(64)));
	/* written by the reader (release), read by writers (acquire) */
	uint64_t tail __attribute__((aligned(64)));
	unsigned long n_full; /* reservations refused (relaxed)       */
};

/* Maps cap bytes (rounded up to a power of two) and faults them in, so
 * that the handler never takes a page fault. 0 or -errno. */
int ring_init(struct ring *r, size_t cap);
void ring_fini(struct ring *r);

/* Empties the ring; only when no writer or reader can run (fork child). */
void ring_reset(struct ring *r);

/*
 * Reserves room for a payload of up to len bytes. Returns a pointer to the
 * payload, or NULL if the ring is full (n_full is bumped). The caller must
 * call ring_commit_sigsafe() on it, always, even after a fault.
 */
void *ring_reserve_sigsafe(struct ring *r, size_t len, uint64_t *pos);

/* Publishes the first used bytes of a payload reserved with len bytes at
 * *pos (both as ring_reserve_sigsafe gave them). If no writer reserved
 * after us, the unused rest is handed back by moving head back (CAS);
 * otherwise it becomes a padding record. */
void ring_commit_sigsafe(struct ring *r, void *payload, uint64_t pos,
			 size_t len, size_t used);

/*
 * Calls fn(payload, len, arg) for each committed record in order, until the
 * ring is empty or a record is not yet committed. Returns the number of
 * records passed to fn. Agent thread only.
 */
size_t ring_drain(struct ring *r,
		  void (*fn)(const void *payload, size_t len, void *arg),
		  void *arg);

#endif /* PYPROF_RING_H */
