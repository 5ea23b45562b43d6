/*
 * signal/sig_waits.c - the waits of block and mutex profiles
 * (sig_waits.h): what interpose/waits.c's sem_wait, sem_timedwait,
 * sem_clockwait, sem_post, pthread_cond_timedwait and pthread_cond_signal
 * do once waits are on, and the waits' set-up.
 *
 * ASYNC-SIGNAL-SAFE in the sense of signal/: these run on every thread of
 * the program, inside CPython's lock and GIL code, and sem_post may be
 * called from a signal handler. No malloc, no stdio, no lazily initialised
 * thread-locals (ours are initial-exec), errno saved around our own calls.
 * Off (waits_on 0, the default), each wrapper is one load and branch more
 * than the call through the table of libc_next.h.
 *
 * The holders' side without seeing acquisitions. Per lock with waiters
 * (the lock's address as key: the sem_t before 3.13, the PyMutex from the
 * parking-lot entry from 3.13, the GIL's cond) a slot holds the number of
 * waiters n, acc = the sum over them of max(since, their start) and extra
 * (waiting done during this hold by waiters that left early: time-outs).
 * A release at r is charged n*r - acc + extra: the time each waiter spent
 * waiting since the later of its start and the previous release, which is
 * the overlap of its wait with this hold; then since = r, acc = n*r. So a
 * wait spanning three holds is split among their three releasers, and
 * three waiters during an 8 ms hold cost it 24 ms. The gap between a
 * release and the next acquisition seen (a waiter that got the lock
 * leaving its wait) is charged to nobody: on a busy CPU the woken waiter
 * can take milliseconds to run. An acquisition without a wait is not
 * seen: the gap before it goes to that holder. A slot is claimed by CAS
 * of its key and guarded by a spin flag held for a few instructions; a
 * thread that finds it taken after a bounded spin, or that re-enters
 * from a signal handler, skips the accounting (counted lost) rather than
 * wait. pyprof's own threads
 * (heap_busy raised for life: the thread-names thread takes the GIL) are
 * not the program's and pass through.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/libc_next.h"
#include "base/sampler.h"
#include "base/zero.h"
#include "sig_frames.h"
#include "sig_heap.h"
#include "sig_labels.h"
#include "sig_waits.h"

#define WAITS_SLOTS 1024 /* locks with waiters at once (power of 2) */
#define WAITS_PROBE 16	 /* slots looked at per key                 */
#define WAITS_SPINS 4096 /* tries of a slot's flag before giving up */

int waits_on;
struct waits_stats waits_stats;
static uint64_t waits_rate; /* relaxed atomic: changed while on       */
static int waits_known;	    /* 0: not supported (before 3.8)          */
static int waits_park;	    /* locks park on semaphores (3.13+)        */
/* Raised each time waits go from off to on, after the tables are
 * emptied: a wait that began before (its waiter entered the tables of
 * an earlier period) must not leave them now. Written by the agent,
 * read by the wrappers (acquire, pairs with the release in waits_set). */
static unsigned waits_epoch;
uintptr_t waits_gil_cond;    /* the GIL's pthread_cond_t, 0 unknown  */
static uintptr_t gil_locked; /* its locked int                       */

struct lockslot {
	uintptr_t key; /* 0 free; claimed and freed with its flag held */
	int busy;      /* the spin flag                               */
	uint32_t n;
	uint32_t n_extra;
	uint64_t acc;
	uint64_t since;
	uint64_t extra;
};
static struct lockslot slots[WAITS_SLOTS];
/* Slots in use: 0 lets a release (every sem_post before 3.13) skip the
 * table. Raised before a slot is claimed, lowered after it is freed. */
static int n_used;

/* 3.13+: the semaphores parked on now, and their locks, so that a
 * sem_post (on another thread) finds which lock it releases. */
struct parked {
	uintptr_t sem; /* 0 free */
	uintptr_t key;
};
static struct parked parked[WAITS_SLOTS];

__thread int waits_busy;
static __thread uint64_t waits_rng;
static __thread uint32_t waits_tid;
static __thread uint64_t gil_start; /* 0: not waiting for the GIL */
static __thread unsigned gil_epoch; /* waits_epoch when it began      */

/* ---- the slots ---------------------------------------------------------- */

static inline uint64_t key_hash(uintptr_t k)
{
	return ((uint64_t)k >> 3) * 0x9E3779B97F4A7C15ull >> 40;
}

static int slot_lock(struct lockslot *s)
{
	for (int i = 0; i < WAITS_SPINS; i++) {
		/* pairs with the release store in slot_unlock */
		if (!__atomic_exchange_n(&s->busy, 1, __ATOMIC_ACQUIRE))
			return 0;
		__builtin_ia32_pause();
	}
	return -1;
}

static void slot_unlock(struct lockslot *s)
{
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* The slot of key, locked; with claim, a free one is taken for it. NULL
 * if none (not found, table crowded, or a flag held too long). */
static struct lockslot *slot_get(uintptr_t key, int claim)
{
	uint64_t h = key_hash(key);
	struct lockslot *free_one = NULL;
	for (unsigned i = 0; i < WAITS_PROBE; i++) {
		struct lockslot *s = &slots[(h + i) & (WAITS_SLOTS - 1)];
		uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		if (k == key) {
			if (slot_lock(s) < 0)
				return NULL;
			if (s->key == key)
				return s;
			slot_unlock(s); /* freed meanwhile: look on */
		} else if (!k && !free_one) {
			free_one = s;
		}
	}
	if (!claim || !free_one)
		return NULL;
	/* pairs with the acquire load in release(): a releaser that reads
	 * n_used 0 ran before this waiter began */
	__atomic_fetch_add(&n_used, 1, __ATOMIC_SEQ_CST);
	if (slot_lock(free_one) < 0) {
		__atomic_fetch_sub(&n_used, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (free_one->key) { /* taken meanwhile */
		slot_unlock(free_one);
		__atomic_fetch_sub(&n_used, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	free_one->key = key;
	free_one->n = free_one->n_extra = 0;
	free_one->acc = free_one->since = free_one->extra = 0;
	return free_one;
}

static void slot_put(struct lockslot *s)
{
	int freed = !s->n && !s->extra;
	if (freed)
		__atomic_store_n(&s->key, 0, __ATOMIC_RELAXED);
	slot_unlock(s);
	if (freed)
		__atomic_fetch_sub(&n_used, 1, __ATOMIC_RELAXED);
}

static void lost(void)
{
	__atomic_fetch_add(&waits_stats.n_lost, 1, __ATOMIC_RELAXED);
}

/* A waiter on key starts at t0. 0, or -1 if it could not be registered
 * (then it must not leave). */
static int wait_enter(uintptr_t key, uint64_t t0)
{
	struct lockslot *s = slot_get(key, 1);
	if (!s) {
		lost();
		return -1;
	}
	s->n++;
	s->acc += t0 > s->since ? t0 : s->since;
	slot_put(s);
	return 0;
}

/* The waiter that started at t0 leaves at t1; acquired says whether it
 * got the lock (else its waiting during this hold stays for the holder). */
static void wait_leave(uintptr_t key, uint64_t t0, uint64_t t1, int acquired)
{
	struct lockslot *s = slot_get(key, 0);
	if (!s) {
		lost();
		return;
	}
	uint64_t from = t0 > s->since ? t0 : s->since;
	if (s->n) {
		s->n--;
		s->acc -= from;
	}
	if (!acquired && t1 > from) {
		s->extra += t1 - from;
		s->n_extra++;
	}
	if (acquired && t1 > s->since) {
		/* the others' waiting between the last release and this
		 * acquisition was during no hold: nobody is charged with it
		 * (waiters still here all began before t1, to a race of
		 * nanoseconds) */
		s->since = t1;
		s->acc = (uint64_t)s->n * t1;
	}
	slot_put(s);
}

/* key is released at r: the waiting done during the hold that ends, and
 * by how many waiters; 0 if nobody waited. */
static uint64_t release(uintptr_t key, uint32_t *count)
{
	uint64_t charge = 0, r;
	if (!__atomic_load_n(&n_used, __ATOMIC_ACQUIRE))
		return 0; /* nobody waits for anything */
	struct lockslot *s = slot_get(key, 0);
	if (!s)
		return 0;
	r = mono_ns();
	uint64_t all = (uint64_t)s->n * r;
	charge = (all > s->acc ? all - s->acc : 0) + s->extra;
	*count = s->n + s->n_extra;
	s->acc = all;
	s->since = r;
	s->extra = 0;
	s->n_extra = 0;
	slot_put(s);
	return charge;
}

/* ---- 3.13+: parked semaphores ------------------------------------------- */

static void park_note(uintptr_t sem, uintptr_t key)
{
	uint64_t h = key_hash(sem);
	for (unsigned i = 0; i < WAITS_PROBE; i++) {
		struct parked *p = &parked[(h + i) & (WAITS_SLOTS - 1)];
		uintptr_t z = 0;
		if (__atomic_compare_exchange_n(&p->sem, &z, sem, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			/* published before the wait; a waker reads it after
			 * it finds sem (acquire on sem below) */
			__atomic_store_n(&p->key, key, __ATOMIC_RELEASE);
			return;
		}
	}
	lost();
}

static uintptr_t park_key(uintptr_t sem, int remove)
{
	uint64_t h = key_hash(sem);
	for (unsigned i = 0; i < WAITS_PROBE; i++) {
		struct parked *p = &parked[(h + i) & (WAITS_SLOTS - 1)];
		if (__atomic_load_n(&p->sem, __ATOMIC_ACQUIRE) != sem)
			continue;
		uintptr_t key = __atomic_load_n(&p->key, __ATOMIC_ACQUIRE);
		if (remove) {
			__atomic_store_n(&p->key, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&p->sem, 0, __ATOMIC_RELEASE);
		}
		return key;
	}
	return 0;
}

/*
 * The lock a wait on sem is for: the sem_t itself before 3.13. From 3.13
 * the parking lot's struct wait_entry (Python/parking_lot.c, private:
 * { park_arg, uintptr_t addr, _PySemaphore sema, ... }) holds the lock's
 * address just before the semaphore, and the entry is a local of
 * _PyParkingLot_Park, a few frames above us on this thread's stack: read
 * only when sem is there (within 16 KiB above our own frame), else the
 * semaphore stands for itself.
 */
static uintptr_t lock_of(sem_t *sem)
{
	uintptr_t s = (uintptr_t)sem;
	if (!waits_park)
		return s;
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	if (s > fp && s - fp < 16384 && s >= sizeof(uintptr_t)) {
		uintptr_t key = *(const uintptr_t *)(s - sizeof(uintptr_t));
		if (key)
			return key;
	}
	return s;
}

/* ---- records ------------------------------------------------------------ */

static uint64_t rng_next(void)
{
	uint64_t x = waits_rng;
	if (!x)
		x = mono_ns() ^ ((uint64_t)(uintptr_t)&waits_rng << 17) ^
		    0x853c49e6748fea9bull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	waits_rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Go's block profile rate: an event of ns >= rate is kept as it is; a
 * shorter one is kept with probability ns/rate and then stands for
 * rate ns over rate/ns events (rounded at random, so unbiased). 0 if
 * not kept. */
static int sample_of(uint64_t ns, uint32_t n, uint32_t *count, uint64_t *value)
{
	uint64_t rate = __atomic_load_n(&waits_rate, __ATOMIC_RELAXED);
	if (!ns)
		return 0;
	if (ns >= rate) {
		*count = n ? n : 1;
		*value = ns;
		return 1;
	}
	uint64_t u = rng_next() >> 11; /* 53 bits */
	if ((double)u >= (double)ns / (double)rate * 9007199254740992.0)
		return 0;
	double c = (double)(n ? n : 1) * (double)rate / (double)ns;
	uint64_t whole = (uint64_t)c;
	double frac = c - (double)whole;
	if ((double)(rng_next() >> 11) < frac * 9007199254740992.0)
		whole++;
	if (!whole)
		return 0;
	*count = whole > UINT32_MAX ? UINT32_MAX : (uint32_t)whole;
	*value = rate;
	return 1;
}

/* Puts one wait record of kind (enum waits_kind) with this thread's
 * Python stack in the ring. */
static void record(unsigned kind, uint32_t count, uint64_t value)
{
	uint64_t pos;
	if (!__atomic_load_n(&sampler.active, __ATOMIC_RELAXED))
		return;
	const size_t room = sampler_labels_room_sigsafe();
	const size_t cap = sizeof(struct raw_sample) +
			   (size_t)sampler.max_depth * sizeof(struct raw_frame) +
			   room;
	struct raw_sample *rec =
		ring_reserve_sigsafe(&sampler.ring, cap, &pos);
	if (!rec) {
		lost();
		return;
	}
	if (!waits_tid)
		waits_tid = (uint32_t)syscall(SYS_gettid);
	memset(rec, 0, sizeof *rec);
	rec->time_ns = mono_ns();
	rec->tid = waits_tid;
	rec->weight = count;
	rec->value_ns = value;
	rec->flags = SAMPLE_WAIT;
	rec->wait = (uint8_t)kind;
	if (frames_sample_sigsafe(rec, 0, 0) == -EFAULT)
		rec->flags |= SAMPLE_FAULT;
	if (room)
		sampler_labels_sigsafe(rec, room);
	ring_commit_sigsafe(&sampler.ring, rec, pos, cap, raw_size(rec));
	__atomic_fetch_add(kind & WAITS_BLOCK ? &waits_stats.n_block
					      : &waits_stats.n_mutex,
			   1, __ATOMIC_RELAXED);
}

static void maybe_record(unsigned kind, uint64_t ns, uint32_t n)
{
	uint32_t count;
	uint64_t value;
	if (sample_of(ns, n, &count, &value))
		record(kind, count, value);
}

/* ---- the semaphores ----------------------------------------------------- */

/* After a wait on sem that began at t0 for lock key returned rc (0: it
 * got the semaphore). */
static void sem_waited(sem_t *sem, uintptr_t key, uint64_t t0, int rc,
		       int registered, unsigned epoch)
{
	uint64_t t1 = mono_ns();
	if (waits_park && key != (uintptr_t)sem)
		park_key((uintptr_t)sem, 1);
	/* waits went off and on again meanwhile: the tables it entered
	 * are gone */
	if (epoch != __atomic_load_n(&waits_epoch, __ATOMIC_ACQUIRE))
		registered = 0;
	if (registered)
		wait_leave(key, t0, t1, rc == 0);
	__atomic_fetch_add(&waits_stats.n_waits, 1, __ATOMIC_RELAXED);
	maybe_record(WAITS_BLOCK, t1 - t0, 1);
}

/* Before a wait on sem: its lock, registered as waited for. */
static uintptr_t sem_enter(sem_t *sem, uint64_t *t0, int *registered)
{
	uintptr_t key = lock_of(sem);
	*t0 = mono_ns();
	if (waits_park && key != (uintptr_t)sem)
		park_note((uintptr_t)sem, key);
	*registered = wait_enter(key, *t0) == 0;
	return key;
}

/* The shims of interpose/waits.c call these once they found waits on
 * and the thread not busy. */
#define SEM_WRAP(call)                                             \
	do {                                                       \
		uint64_t t0;                                       \
		int reg, rc, saved;                                \
		waits_busy = 1;                                    \
		unsigned ep = __atomic_load_n(&waits_epoch,        \
					      __ATOMIC_ACQUIRE);   \
		uintptr_t key = sem_enter(sem, &t0, &reg);         \
		waits_busy = 0;                                    \
		rc = (call);                                       \
		saved = errno;                                     \
		waits_busy = 1;                                    \
		sem_waited(sem, key, t0, rc == 0 ? 0 : saved, reg, \
			   ep);                                    \
		waits_busy = 0;                                    \
		errno = saved;                                     \
		return rc;                                         \
	} while (0)

int waits_sem_wait_sigsafe(sem_t *sem)
{
	int (*fn)(sem_t *) = LIBC_NEXT(sem_wait, "sem_wait");
	SEM_WRAP(fn(sem));
}

int waits_sem_timedwait_sigsafe(sem_t *sem, const struct timespec *abs)
{
	int (*fn)(sem_t *, const struct timespec *) =
		LIBC_NEXT(sem_timedwait, "sem_timedwait");
	SEM_WRAP(fn(sem, abs));
}

int waits_sem_clockwait_sigsafe(sem_t *sem, clockid_t clock,
				const struct timespec *abs)
{
	int (*fn)(sem_t *, clockid_t, const struct timespec *) =
		LIBC_NEXT(sem_clockwait, "sem_clockwait");
	SEM_WRAP(fn(sem, clock, abs));
}

/* A release (before 3.13: every one; from 3.13: one with a waiter, the
 * semaphore being the waiter's). Charged before the post, so that the
 * waiter it wakes is still counted. */
void waits_sem_post_sigsafe(sem_t *sem)
{
	uintptr_t key = 0;
	uint32_t n = 0;
	int saved = errno;
	waits_busy = 1;
	/* 3.13+: a parked waiter's semaphore stands for the lock it waits
	 * on; any other (3.13's PyThread_type_lock is still a sem_t) for
	 * itself */
	if (!__atomic_load_n(&n_used, __ATOMIC_ACQUIRE))
		goto out;
	if (waits_park)
		key = park_key((uintptr_t)sem, 0);
	if (!key)
		key = (uintptr_t)sem;
	uint64_t charge = release(key, &n);
	if (charge)
		maybe_record(WAITS_MUTEX, charge, n);
out:
	waits_busy = 0;
	errno = saved;
}

/*
 * take_gil waits on the GIL's cond in steps of the switch interval until
 * it finds the GIL free (locked 0, read with the GIL's mutex held, which
 * the wait re-took). The first step starts the wait, the step after which
 * the GIL is free ends it.
 */
int waits_gil_wait_sigsafe(pthread_cond_t *c, pthread_mutex_t *m,
			   const struct timespec *abs)
{
	int (*fn)(pthread_cond_t *, pthread_mutex_t *,
		  const struct timespec *) =
		LIBC_NEXT_COND(cond_timedwait, "pthread_cond_timedwait");
	int saved = errno;
	waits_busy = 1;
	unsigned ep = __atomic_load_n(&waits_epoch, __ATOMIC_ACQUIRE);
	if (gil_start && gil_epoch != ep)
		gil_start = 0; /* began before waits went off: forgotten */
	if (!gil_start) {
		gil_epoch = ep;
		gil_start = mono_ns();
		if (wait_enter((uintptr_t)c, gil_start) < 0)
			gil_start = 0;
	}
	waits_busy = 0;
	errno = saved;
	int rc = fn(c, m, abs);
	if (!gil_start)
		return rc;
	saved = errno;
	waits_busy = 1;
	if (!*(volatile int32_t *)gil_locked) {
		uint64_t t1 = mono_ns();
		wait_leave((uintptr_t)c, gil_start, t1, 1);
		__atomic_fetch_add(&waits_stats.n_waits, 1, __ATOMIC_RELAXED);
		maybe_record(WAITS_BLOCK | WAITS_GIL, t1 - gil_start, 1);
		gil_start = 0;
	}
	waits_busy = 0;
	errno = saved;
	return rc;
}

/* drop_gil: the GIL was released; its holder is charged. */
void waits_gil_released_sigsafe(pthread_cond_t *c)
{
	uint32_t n = 0;
	int saved = errno;
	waits_busy = 1;
	uint64_t charge = release((uintptr_t)c, &n);
	if (charge)
		maybe_record(WAITS_MUTEX | WAITS_GIL, charge, n);
	waits_busy = 0;
	errno = saved;
}

/* ---- set-up (constructor, agent) ---------------------------------------- */

void waits_init(const struct pyabi *abi)
{
	waits_known = abi && abi->waits_profiled;
	waits_park = waits_known && abi->locks_park;
}

int waits_supported(void)
{
	return waits_known;
}

void waits_python_started(void)
{
	const struct pyabi *abi = sampler.abi;
	uintptr_t gil = 0;
	if (!waits_known || !abi || abi->gil_cond < 0 || abi->gil_locked < 0)
		return;
	if (abi->gil_kind == PYABI_GIL_RUNTIME && sampler.runtime &&
	    abi->rt_gil >= 0) {
		gil = sampler.runtime + (uintptr_t)abi->rt_gil;
	} else if (abi->gil_kind == PYABI_GIL_INTERP_PTR &&
		   abi->interp_gil_ptr >= 0) {
		/* the main interpreter: the list's last (newest first) */
		uintptr_t in = (uintptr_t)sampler.interp_head(), next;
		while (in && abi->interp_next >= 0 &&
		       (next = *(const uintptr_t *)(in + (uintptr_t)
								 abi->interp_next)))
			in = next;
		if (in)
			gil = *(const uintptr_t *)(in + (uintptr_t)
								abi->interp_gil_ptr);
	}
	if (gil) {
		gil_locked = gil + (uintptr_t)abi->gil_locked;
		__atomic_store_n(&waits_gil_cond, gil + (uintptr_t)abi->gil_cond,
				 __ATOMIC_RELEASE);
	}
}

/* Empties the tables of waiters and parked semaphores. Waits are off:
 * only wrappers that began while they were on can still be inside,
 * and those that are past their epoch check (a few instructions) can
 * at worst miscount one charge; a slot's fields are plain numbers. */
static void tables_clear(void)
{
	for (size_t i = 0; i < WAITS_SLOTS; i++) {
		__atomic_store_n(&slots[i].key, 0, __ATOMIC_RELAXED);
		slots[i].n = slots[i].n_extra = 0;
		slots[i].acc = slots[i].since = slots[i].extra = 0;
		__atomic_store_n(&parked[i].key, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&parked[i].sem, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&n_used, 0, __ATOMIC_RELAXED);
}

void waits_set(uint64_t rate_ns)
{
	if (!waits_known)
		return;
	if (!rate_ns) {
		__atomic_store_n(&waits_on, 0, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&waits_rate, rate_ns, __ATOMIC_RELAXED);
	if (__atomic_load_n(&waits_on, __ATOMIC_RELAXED))
		return;
	/* Off to on: while off, releases were not seen, so what the tables
	 * hold (waiters of the last period, GIL waits begun then) is stale:
	 * a fresh start, and a new epoch so that those waiters stay out. */
	tables_clear();
	__atomic_fetch_add(&waits_epoch, 1, __ATOMIC_RELEASE);
	/* pairs with the wrappers' relaxed load of waits_on: the tables
	 * and epoch are written before any wrapper can see waits on */
	__atomic_store_n(&waits_on, 1, __ATOMIC_RELEASE);
}

uint64_t waits_rate_now(void)
{
	return __atomic_load_n(&waits_on, __ATOMIC_RELAXED)
		       ? __atomic_load_n(&waits_rate, __ATOMIC_RELAXED)
		       : 0;
}

void waits_stop(void)
{
	__atomic_store_n(&waits_on, 0, __ATOMIC_RELEASE);
}

void waits_after_fork_child(void)
{
	zero_pages(slots, sizeof slots);
	n_used = 0;
	zero_pages(parked, sizeof parked);
	gil_start = 0;
	waits_tid = 0;
}
