/*
 * sig_heap.c - the allocation hooks of heap profiling (see heap.h).
 *
 * ASYNC-SIGNAL-SAFE in the sense of the rest of signal/: this code runs
 * inside the application's malloc() and free(), on any thread, possibly
 * while that thread is in the middle of anything (a signal handler of the
 * application's that allocates, which is its own bug, included). No malloc
 * of our own, no locks, no stdio, no lazily initialised thread-locals (ours
 * are initial-exec); errno saved and restored wherever we make a system
 * call. The only calls out are to glibc's allocator itself (__libc_malloc
 * and friends, exported by glibc for exactly this use: no dlsym, so no
 * bootstrap problem) and to the Python allocators we chain to; the
 * SIGPROF handler restores our fault guard if it interrupts us.
 *
 * Cost. The switches (control.h's heap_sampling_on for allocations,
 * heap_on for frees) are plain globals: with heap profiling off (or in a
 * process that is not Python) each hook is a load, a predictable branch
 * and a jump to glibc's function (callgrind: 10 instructions more per
 * malloc+free pair). On: malloc adds a thread-local subtract and compare;
 * free adds a load from a 128 KiB counting filter indexed by the address
 * (zero for any block that was never sampled, unless it shares a counter
 * with a live sampled one: about live/65536 of frees take the table
 * lookup for nothing). Only a sampled allocation (one per rate bytes
 * on average) does real work: a stack walk and a ring record, no system
 * call.
 *
 * The table of sampled addresses: HEAP_SLOTS 8-byte slots in buckets of 8
 * (one cache line). An address lives in its home bucket or the next one;
 * a slot is 0 when free. Insert claims a free slot with a CAS; remove CASes
 * the address back to 0. A block's address is inserted before the
 * allocation returns it and removed before free() hands it back, and the
 * program's own synchronization orders those (a pointer passed between
 * threads), so one address is never inserted or removed twice at once. No
 * tombstones (a lookup scans both buckets whole), so churn cannot clog it.
 * A full pair of buckets loses the sample (counted). Memory order: the
 * filter counter is raised (relaxed) before the slot is published
 * (release CAS); a free reads the counter (relaxed) of a block it owns, so
 * the allocating thread's increment happened before by the same
 * synchronization that handed it the pointer.
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "native/cfi.h"
#include "base/clock.h"
#include "base/guard.h"
#include "base/sampler.h"
#include "sig_frames.h"
#include "sig_heap.h"
#include "sig_labels.h"
#include "sig_unwind.h"

#define HEAP_BUCKET 8 /* slots per bucket (a cache line)  */
#define HEAP_NBUCKETS (HEAP_SLOTS / HEAP_BUCKET)

__thread int heap_busy;
int heap_on;
int heap_sampling_supported;
int heap_sampling_on;
uint64_t heap_sampling_rate;
int heap_python_seen;
struct heap_stats heap_stats;

/* In .bss: pages nobody touches cost nothing, so a process without heap
 * profiling (or a program that is not Python) pays no memory for them,
 * and the hot paths address them without loading a pointer first. */
static uint64_t table[HEAP_SLOTS] __attribute__((aligned(4096)));
uint16_t heap_filter[HEAP_FILTER] __attribute__((aligned(4096)));

/* Per thread: bytes left before the next sample, and the random state
 * (0: not seeded yet, which makes the first allocation take the slow
 * path and draw its first gap). */
__thread int64_t heap_left;
static __thread uint64_t heap_rng;
static __thread uint32_t heap_tid;

/* ---- the exponential gap ------------------------------------------------ */

static uint64_t rng_next(void)
{
	/* xorshift64*: plenty for choosing sample points */
	uint64_t x = heap_rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	heap_rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void rng_seed(void)
{
	struct timespec ts;
	int saved = errno;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	errno = saved;
	uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
		     (uint64_t)(uintptr_t)&heap_left * 0x9E3779B97F4A7C15ull;
	heap_rng = s ? s : 0x853c49e6748fea9bull;
}

/*
 * -ln(u) for u uniform in (0, 1], without libm: u = 2^e * m with m in
 * [1, 2), ln u = e ln 2 + ln m, and ln m = 2 atanh(t), t = (m-1)/(m+1) in
 * [0, 1/3), by its series to t^9 (error under 2e-6: far below what a
 * sampling gap needs).
 */
static double neg_log_uniform(void)
{
	uint64_t r = rng_next() >> 11; /* 53 bits */
	double u = ((double)r + 1.0) * (1.0 / 9007199254740992.0);
	union {
		double d;
		uint64_t b;
	} v = { .d = u };
	int e = (int)((v.b >> 52) & 0x7ff) - 1023;
	v.b = (v.b & ~(0x7ffull << 52)) | (1023ull << 52); /* m in [1, 2) */
	double t = (v.d - 1.0) / (v.d + 1.0), t2 = t * t;
	double lnm = 2.0 * t *
		     (1.0 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7 +
								  t2 / 9))));
	return -((double)e * 0.6931471805599453 + lnm);
}

static int64_t draw_gap(void)
{
	double g = neg_log_uniform() *
		   (double)__atomic_load_n(&heap_sampling_rate, __ATOMIC_RELAXED);
	if (g < 1.0)
		g = 1.0;
	if (g > 9.0e18)
		g = 9.0e18;
	return (int64_t)g;
}

/* ---- the table of sampled addresses ------------------------------------ */

static inline uint64_t addr_hash(uintptr_t p)
{
	return (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull;
}

/* The filter is indexed by the address itself, not its hash: a shift
 * and a mask on every free() of the program (blocks are 16-byte aligned;
 * nearby blocks land in different counters, and sampled blocks are far
 * apart anyway). */
static inline uint16_t *filter_of(uintptr_t p)
{
	return &heap_filter[(p >> 4) & (HEAP_FILTER - 1)];
}

static inline uint64_t *bucket_of(uint64_t h, unsigned k)
{
	uint64_t b = ((h >> 40) + k) & (HEAP_NBUCKETS - 1);
	return &table[b * HEAP_BUCKET];
}

void heap_table_region_sigsafe(void **start, size_t *len, void **start2,
			       size_t *len2)
{
	*start = table;
	*len = sizeof(table);
	*start2 = heap_filter;
	*len2 = sizeof(heap_filter);
}

/* Inserts p; 1 if it is in the table now. An address already there is a
 * block whose free we did not see (freed through an allocator we do not
 * hook, or before a fork child's table was emptied): it stays, once. */
static int table_insert(uintptr_t p)
{
	uint64_t h = addr_hash(p);
	for (unsigned k = 0; k < 2; k++) {
		const uint64_t *b = bucket_of(h, k);
		for (unsigned i = 0; i < HEAP_BUCKET; i++)
			if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == p)
				return 1;
	}
	__atomic_fetch_add(filter_of(p), 1, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t *b = bucket_of(h, k);
		for (unsigned i = 0; i < HEAP_BUCKET; i++) {
			uint64_t z = 0;
			if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == 0 &&
			    __atomic_compare_exchange_n(&b[i], &z, p, 0,
							__ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
				return 1;
		}
	}
	__atomic_fetch_sub(filter_of(p), 1, __ATOMIC_RELAXED);
	return 0;
}

/* Removes p if it was sampled; 1 if it was. */
static int table_remove(uintptr_t p)
{
	uint64_t h = addr_hash(p);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t *b = bucket_of(h, k);
		for (unsigned i = 0; i < HEAP_BUCKET; i++) {
			uint64_t want = p;
			if (__atomic_load_n(&b[i], __ATOMIC_ACQUIRE) == p &&
			    __atomic_compare_exchange_n(&b[i], &want, 0, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				__atomic_fetch_sub(filter_of(p), 1,
						   __ATOMIC_RELAXED);
				return 1;
			}
		}
	}
	return 0;
}

static inline int maybe_sampled(const void *p)
{
	return heap_maybe_sampled(p);
}

/* ---- records ------------------------------------------------------------ */

/* Our own code (this library's image, from its ELF header to the end of
 * its text): the frames of the hooks, skipped at the top of a native
 * stack. Hidden: the linker's symbols of this object, not the program's. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char etext[] __attribute__((visibility("hidden")));

/*
 * The registers cfi_unwind_sigsafe starts from (PC, SP, frame pointer), as
 * they are in our caller right after this call returns: this function
 * keeps a frame pointer (the file is built with one; only the hooks
 * further down drop it), so its return address sits just above the saved
 * frame pointer. noinline: it must have a frame of its own.
 */
static __attribute__((noinline)) void caller_regs(ucontext_t *uc)
{
	uintptr_t *fp = __builtin_frame_address(0);
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fp[1];
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(fp + 2);
	uc->uc_mcontext.gregs[REG_RBP] = (greg_t)fp[0];
}

/*
 * PYPROF_NATIVE: the native stack of the allocation after its Python
 * frames, from the unwind tables the agent built (cfi.h); where they
 * cannot say, none (the Python stack alone is kept: libunwind is not for
 * an allocator hook). Our own frames are dropped; the first PC left is a
 * return address into the allocation's caller, made to point into the
 * call (minus 1) because the merge takes a stack's first PC as exact.
 * A guarded region (guard_run_sigsafe).
 */
static void capture_native(void *arg)
{
	struct raw_sample *rec = arg;
	uint64_t *pcs = (uint64_t *)((struct raw_frame *)(rec + 1) +
				     rec->n_frames);
	ucontext_t uc;
	int trunc = 0, n, skip = 0;

	memset(&uc.uc_mcontext, 0, sizeof uc.uc_mcontext);
	caller_regs(&uc);
	n = cfi_unwind_sigsafe(&uc, pcs, SAMPLER_NATIVE_MAX, &trunc);
	while (skip < n && pcs[skip] >= (uintptr_t)__ehdr_start &&
	       pcs[skip] < (uintptr_t)etext)
		skip++;
	if (n <= skip)
		return;
	n -= skip;
	for (int k = 0; k < n; k++)
		pcs[k] = pcs[k + skip];
	pcs[0] -= 1;
	if (trunc)
		rec->flags |= SAMPLE_NATIVE_TRUNCATED;
	rec->n_native = (uint16_t)n;
}

/* Records a sampled allocation: its address in the table, its stack in
 * the ring. heap_busy is raised by the caller. */
static void record_alloc(void *p, size_t n)
{
	int saved_errno = errno;
	uint64_t pos;
	const size_t room = sampler_labels_room_sigsafe();
	const size_t cap =
		sizeof(struct raw_sample) +
		(size_t)sampler.max_depth * sizeof(struct raw_frame) +
		(sampler.native ? SAMPLER_NATIVE_MAX * sizeof(uint64_t) : 0) +
		room;

	if (!table_insert((uintptr_t)p)) {
		__atomic_fetch_add(&heap_stats.n_lost, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&heap_stats.lost_bytes, n, __ATOMIC_RELAXED);
		goto out;
	}
	/* No signal is blocked meanwhile: a SIGPROF handler that interrupts
	 * the walk below puts our fault guard back when it returns (the guard
	 * policy of guard_run_sigsafe, in guard.h), and the
	 * guard's own handler (SA_NODEFER, empty mask) leaves the mask as it
	 * was when it jumps back here. */
	struct raw_sample *rec =
		ring_reserve_sigsafe(&sampler.ring, cap, &pos);
	if (!rec) {
		table_remove((uintptr_t)p);
		__atomic_fetch_add(&heap_stats.n_lost, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&heap_stats.lost_bytes, n, __ATOMIC_RELAXED);
		goto out;
	}
	if (!heap_tid)
		heap_tid = (uint32_t)syscall(SYS_gettid);
	memset(rec, 0, sizeof *rec);
	rec->time_ns = mono_ns();
	rec->tid = heap_tid;
	rec->weight = 1;
	rec->flags = SAMPLE_HEAP;
	rec->heap_addr = (uint64_t)(uintptr_t)p;
	rec->heap_size = n;
	rec->value_ns = __atomic_load_n(&heap_sampling_rate, __ATOMIC_RELAXED);
	if (sampler.is_initialized()) {
		/* a read that faults: the allocation still counts, without
		 * a stack */
		if (frames_sample_sigsafe(rec, 0, 0) == -EFAULT)
			rec->flags |= SAMPLE_NO_TSTATE;
	} else {
		/* before Py_Initialize or after finalization began */
		rec->flags |= SAMPLE_NO_TSTATE | SAMPLE_HEAP_NO_PY;
	}
	if (sampler.native && rec->n_frames &&
	    guard_run_sigsafe(capture_native, rec) < 0)
		rec->n_native = 0; /* a bad frame: Python stack only */
	if (room)
		sampler_labels_sigsafe(rec, room);
	ring_commit_sigsafe(&sampler.ring, rec, pos, cap, raw_size(rec));
	__atomic_fetch_add(&heap_stats.n_sampled, 1, __ATOMIC_RELAXED);
out:
	errno = saved_errno;
}

/* p (maybe sampled) is about to be freed. heap_busy is raised. */
static void record_free(void *p)
{
	/* Finalizing: what the program held at its end stays in use. */
	if (heap_python_seen && !sampler.is_initialized())
		return;
	if (!table_remove((uintptr_t)p))
		return;
	int saved_errno = errno;
	uint64_t pos;
	struct raw_sample *rec = ring_reserve_sigsafe(
		&sampler.ring, sizeof(struct raw_sample), &pos);
	if (rec) {
		memset(rec, 0, sizeof *rec);
		rec->tid = heap_tid;
		rec->flags = SAMPLE_HEAP_FREE;
		rec->heap_addr = (uint64_t)(uintptr_t)p;
		ring_commit_sigsafe(&sampler.ring, rec, pos,
				    sizeof(struct raw_sample),
				    sizeof(struct raw_sample));
		__atomic_fetch_add(&heap_stats.n_freed, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&heap_stats.n_free_lost, 1,
				   __ATOMIC_RELAXED);
	}
	errno = saved_errno;
}

/* The slow path of the countdown (heap_left went to 0 or below): draws
 * the first gap of a new thread, or samples this allocation and draws the
 * next gap. Allocations on a thread inside pyprof (heap_busy: pyprof's own
 * threads for life, an application thread while pyprof works on it) only
 * ever get here, never recorded: they use up countdown like any other
 * (sample points are a Poisson process: the ones they take cost the
 * program's allocations nothing). */
static __attribute__((noinline)) void sample_slow(void *p, size_t n)
{
	if (!heap_rng) {
		rng_seed();
		heap_left = draw_gap() - (int64_t)(n > INT64_MAX ? INT64_MAX : n);
		if (heap_left > 0)
			return;
	}
	heap_left = draw_gap();
	if (!p || heap_busy ||
	    !__atomic_load_n(&heap_sampling_on, __ATOMIC_RELAXED))
		return; /* ours, or stopped (the Python hooks stay installed) */
	heap_busy++;
	record_alloc(p, n);
	heap_busy--;
}

/* Frees are recorded whoever makes them: pyprof's own blocks are never
 * in the table, but its threads free the program's (the thread-names
 * thread, holding the GIL, may run a garbage collection). */
static __attribute__((noinline)) void free_slow(void *p)
{
	if (!p)
		return;
	heap_busy++;
	record_free(p);
	heap_busy--;
}

/* After an allocation of n bytes (p may be NULL): a thread-local subtract
 * and compare unless a sample point falls in it. */
static inline void count_alloc(void *p, size_t n)
{
	if (__builtin_expect((heap_left -= (int64_t)n) <= 0, 0))
		sample_slow(p, n);
}

/* Before p goes back to the allocator: one load of the filter. */
static inline void count_free(void *p)
{
	if (__builtin_expect(maybe_sampled(p), 0))
		free_slow(p);
}

/* ---- libc's allocation family: the slow paths ------------------------- */

/* interpose/malloc.c's shims run on every allocation and free of the
 * program: each takes its bytes off the countdown before the real call
 * (HEAP_TAKE, sig_heap.h), so that the common case is a subtract, a
 * compare and a tail call, with nothing to save; only when a sample point
 * falls in the allocation does one of these make the call and record the
 * block. No frame pointer for them nor for the shims (the rest of the
 * library keeps its own, built with -fno-omit-frame-pointer). Unwinding
 * through them (PYPROF_NATIVE, a debugger) uses their .eh_frame, as for
 * glibc's own code. */
#pragma GCC push_options
#pragma GCC optimize("omit-frame-pointer")

#define TAKE(n) HEAP_TAKE(n)

__attribute__((noinline)) void *heap_malloc_sampled_sigsafe(size_t n)
{
	void *p = __libc_malloc(n);
	sample_slow(p, n);
	return p;
}

__attribute__((noinline)) void *heap_calloc_sampled_sigsafe(size_t n,
							    size_t m)
{
	void *p = __libc_calloc(n, m);
	sample_slow(p, n * m);
	return p;
}

/* A sampled block that realloc moves or resizes is a free and a new
 * allocation of the new size (as Go, tcmalloc and heaptrack count it).
 * The free record goes first, while the old address is still ours. */
__attribute__((noinline)) void *heap_realloc_counted_sigsafe(void *old,
							     size_t n)
{
	count_free(old);
	void *p = __libc_realloc(old, n);
	if (__atomic_load_n(&heap_sampling_on, __ATOMIC_RELAXED))
		count_alloc(p, n);
	return p;
}

__attribute__((noinline)) void heap_free_sampled_sigsafe(void *p)
{
	free_slow(p);
	__libc_free(p);
}

__attribute__((noinline)) void *heap_memalign_sampled_sigsafe(size_t al,
							      size_t n)
{
	void *p = __libc_memalign(al, n);
	sample_slow(p, n);
	return p;
}

void heap_count_alloc_sigsafe(void *p, size_t n)
{
	count_alloc(p, n);
}

/* ---- CPython's MEM and OBJ domains (3.5+ PyMemAllocatorEx) -------------- */

/* [domain]: what we chain to (filled by heap.c before ours go in). */
static struct py_allocator py_orig[3];

/*
 * One set of hooks per domain, each chaining to py_orig[domain] with the
 * ctx it is given. heap.c installs them with the chained allocator's own
 * ctx, so that installing them while other threads allocate (the agent
 * does, when start-up replaced them) changes only function pointers: a
 * thread that reads the struct half old, half new still calls a valid
 * chain with the right ctx.
 *
 * Counted once: pymalloc serves blocks of up to PY_SMALL bytes from its
 * own arenas (mmap'd on 3.x), and hands bigger ones to PyMem_RawMalloc,
 * which is malloc, where our malloc counts them, with the same Python
 * stack. So these hooks count only blocks up to PY_SMALL bytes and need
 * no guard around the chained call (which would cost two thread-local
 * writes on every allocation of the program). heap.c does not hook a
 * domain that is malloc itself (PYTHONMALLOC=malloc).
 */
#define PY_SMALL 512

/* No check of heap_sampling_on here: once installed, these hooks only
 * count down (a window of sampling may end and another start), and
 * sample_slow, reached once per rate bytes, records only while sampling
 * is on. */

#define PY_HOOKS(D, S, LIMIT)                                                   \
	static __attribute__((noinline)) void *py_malloc_sampled_##D##S(        \
		void *ctx, size_t n)                                            \
	{                                                                       \
		void *p = py_orig[D].malloc(ctx, n);                            \
		sample_slow(p, n);                                              \
		return p;                                                       \
	}                                                                       \
	static void *py_malloc_##D##S(void *ctx, size_t n)                      \
	{                                                                       \
		if (n <= (LIMIT) && TAKE(n))                                    \
			return py_malloc_sampled_##D##S(ctx, n);                \
		return py_orig[D].malloc(ctx, n);                               \
	}                                                                       \
	static __attribute__((noinline)) void *py_calloc_sampled_##D##S(        \
		void *ctx, size_t n, size_t m)                                  \
	{                                                                       \
		void *p = py_orig[D].calloc(ctx, n, m);                         \
		sample_slow(p, n *m);                                           \
		return p;                                                       \
	}                                                                       \
	static void *py_calloc_##D##S(void *ctx, size_t n, size_t m)            \
	{                                                                       \
		size_t t;                                                       \
		if (!__builtin_mul_overflow(n, m, &t) && t <= (LIMIT) &&        \
		    TAKE(t))                                                    \
			return py_calloc_sampled_##D##S(ctx, n, m);             \
		return py_orig[D].calloc(ctx, n, m);                            \
	}                                                                       \
	static void *py_realloc_##D##S(void *ctx, void *old, size_t n)          \
	{                                                                       \
		count_free(old);                                                \
		void *p = py_orig[D].realloc(ctx, old, n);                      \
		if (n <= (LIMIT))                                               \
			count_alloc(p, n);                                      \
		return p;                                                       \
	}                                                                       \
	static __attribute__((noinline)) void py_free_sampled_##D##S(void *ctx, \
								     void *p)   \
	{                                                                       \
		free_slow(p);                                                   \
		py_orig[D].free(ctx, p);                                        \
	}                                                                       \
	static void py_free_##D##S(void *ctx, void *p)                          \
	{                                                                       \
		if (__builtin_expect(maybe_sampled(p), 0))                      \
			py_free_sampled_##D##S(ctx, p);                         \
		else                                                            \
			py_orig[D].free(ctx, p);                                \
	}

/* s: blocks of up to PY_SMALL bytes (pymalloc's, the bigger ones reach
 * malloc); w: every block (an allocator whose big blocks our malloc does
 * not see: the library loaded late, heap.c) */
PY_HOOKS(0, s, PY_SMALL)
PY_HOOKS(1, s, PY_SMALL)
PY_HOOKS(2, s, PY_SMALL)
PY_HOOKS(0, w, SIZE_MAX)
PY_HOOKS(1, w, SIZE_MAX)
PY_HOOKS(2, w, SIZE_MAX)

#define PY_HOOK(D, S)                                                        \
	{                                                                    \
		NULL, py_malloc_##D##S, py_calloc_##D##S, py_realloc_##D##S, \
			py_free_##D##S                                       \
	}

static const struct py_allocator py_hook[2][3] = {
	{ PY_HOOK(0, s), PY_HOOK(1, s), PY_HOOK(2, s) },
	{ PY_HOOK(0, w), PY_HOOK(1, w), PY_HOOK(2, w) },
};

#pragma GCC pop_options

const struct py_allocator *heap_py_hook_sigsafe(int domain, int whole)
{
	return &py_hook[whole != 0][domain];
}

struct py_allocator *heap_py_orig_sigsafe(int domain)
{
	return &py_orig[domain];
}
