/*
 * ring.h - the sample ring: many signal handlers write, one agent reads.
 *
 * Who writes: the SIGPROF handler on any application thread (and the wall
 *   sampler later), concurrently, through ring_reserve_sigsafe() and
 *   ring_commit_sigsafe(). Writers never wait: no room means the sample is
 *   counted in n_full and dropped.
 * Who reads: the agent thread only, through ring_drain().
 *
 * Layout: a power-of-two byte array (mmap'd once, at start-up) holding
 *   8-byte-aligned records. Each record starts with one 64-bit header word
 *   (len | type << 32): len is the record's whole size in bytes, header
 *   included; type is RING_SAMPLE or RING_PAD. A header of 0 means "reserved
 *   but not yet committed". A record never wraps: a writer that would cross
 *   the end reserves the tail of the array as a RING_PAD record too.
 *   Positions (head, tail) are 64-bit byte counts that only grow.
 *
 * Protocol and memory order:
 *   - a writer loads tail (acquire, pairs with the reader's release store
 *     of tail), then claims [head, head+n) with a CAS on head;
 *   - it fills the payload, then stores the header (release; pairs with the
 *     reader's acquire load of it);
 *   - the reader, at tail, loads the header (acquire); 0 means the writer
 *     there is not done and the drain stops (records behind it wait);
 *   - after consuming a record the reader zeroes its bytes (so that a later
 *     writer's uncommitted header reads as 0) and stores tail (release).
 *   A writer may reserve more than it uses and give back the rest as
 *   padding at commit time (the handler does not know the depth ahead).
 *
 * Overflow: counted, never blocking. Fork: the child calls ring_reset().
 */
#ifndef PYPROF_RING_H
#define PYPROF_RING_H

#include <stddef.h>
#include <stdint.h>

enum ring_type { RING_SAMPLE = 1, RING_PAD = 2 };

#define RING_HDR 8

struct ring {
	uint8_t *base;              /* cap bytes, mmap'd                    */
	uint64_t cap;               /* power of two                         */
	/* written by writers (CAS), read by both */
	uint64_t head __attribute__((aligned(64)));
	/* written by the reader (release), read by writers (acquire) */
	uint64_t tail __attribute__((aligned(64)));
	unsigned long n_full;       /* reservations refused (relaxed)       */
};

/* Maps cap bytes (rounded up to a power of two). 0 or -errno. */
int ring_init(struct ring *r, size_t cap);
void ring_fini(struct ring *r);

/* Empties the ring; only when no writer or reader can run (fork child). */
void ring_reset(struct ring *r);

/*
 * Reserves room for a payload of up to len bytes. Returns a pointer to the
 * payload, or NULL if the ring is full (n_full is bumped). The caller must
 * call ring_commit_sigsafe() on it, always, even after a fault.
 */
void *ring_reserve_sigsafe(struct ring *r, size_t len);

/* Publishes the first used bytes of a payload reserved with len bytes
 * (the same len as given to ring_reserve_sigsafe); the rest of the
 * reservation becomes padding. */
void ring_commit_sigsafe(void *payload, size_t len, size_t used);

/*
 * Calls fn(payload, len, arg) for each committed record in order, until the
 * ring is empty or a record is not yet committed. Returns the number of
 * records passed to fn. Agent thread only.
 */
size_t ring_drain(struct ring *r,
		  void (*fn)(const void *payload, size_t len, void *arg),
		  void *arg);

#endif /* PYPROF_RING_H */
