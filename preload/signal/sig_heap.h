/*
 * sig_heap.h - the allocation hooks of heap profiling (sig_heap.c) and
 * their switches; their set-up is sample/heap.c (see heap.h for the
 * model), libc's names are interpose/malloc.c's shims.
 */
#ifndef PYPROF_SIG_HEAP_H
#define PYPROF_SIG_HEAP_H

#include <stddef.h>
#include <stdint.h>

/* Depth of "inside pyprof" on this thread: allocations made while it is
 * not 0 are never recorded (frees are: pyprof's threads free the
 * program's objects too). Initial-exec TLS. */
extern __thread int heap_busy;

static inline void heap_enter(void)
{
	heap_busy++;
}

static inline void heap_leave(void)
{
	heap_busy--;
}

/* Counters, relaxed atomics (heap.c reports them). */
struct heap_stats {
	unsigned long n_sampled;   /* allocations recorded            */
	unsigned long n_freed;	   /* sampled blocks freed            */
	unsigned long n_lost;	   /* sampled, not recorded: table or
				      ring full                       */
	unsigned long lost_bytes;  /* their sizes                     */
	unsigned long n_free_lost; /* frees of sampled blocks whose
				      record found the ring full      */
};
extern struct heap_stats heap_stats;

/* On and off (control.c switches them, with sampling_start and
 * sampling_stop): allocations are sampled while heap_sampling_on is 1
 * (read by the allocation hooks on every call: a predictable branch when
 * off), at heap_sampling_rate bytes on average; heap_sampling_supported
 * says that heap sampling can be switched on at all. heap_on is the
 * library's own: 1 once heap sampling was on in this process, from then
 * frees of sampled blocks are followed (also while sampling is off
 * between two windows, so that what is in use stays right). Defined in
 * signal/sig_heap.c, next to the hooks that read them. */
extern int heap_sampling_supported;
/* hidden, like everything of ours, so that the hooks read them directly
 * rather than through the GOT */
extern int heap_on __attribute__((visibility("hidden")));
extern int heap_sampling_on __attribute__((visibility("hidden")));
extern uint64_t heap_sampling_rate __attribute__((visibility("hidden")));

/* Set once the interpreter was seen initialized (heap_python_started).
 * With it set and Py_IsInitialized() false, the interpreter is finalizing
 * (or gone): from then on frees are not reported, so that the in-use
 * profile at exit shows what the program held when it ended, not what
 * finalization left. */
extern int heap_python_seen;

/* The table of sampled addresses (sig_heap.c, in .bss): HEAP_SLOTS
 * addresses (1 MiB) and HEAP_FILTER u16 counters (128 KiB). At
 * most HEAP_SLOTS sampled blocks can be in use at once (fewer when their
 * hashes crowd): a sampled allocation that finds no slot is counted lost.
 * At the default rate that is tens of GiB of sampled memory. */
#define HEAP_SLOTS (1u << 17)
#define HEAP_FILTER (1u << 16)

/* sig_heap.c internals used by heap.c: where the table lives (to empty
 * it in a fork child). */
void heap_table_region_sigsafe(void **start, size_t *len, void **start2,
			       size_t *len2);
/* CPython's PyMemAllocatorEx (3.5+), one per allocator domain. */
struct py_allocator {
	void *ctx;
	void *(*malloc)(void *ctx, size_t n);
	void *(*calloc)(void *ctx, size_t n, size_t m);
	void *(*realloc)(void *ctx, void *p, size_t n);
	void (*free)(void *ctx, void *p);
};

/* our hooks (ctx unset): with whole 0 they count blocks of up to 512
 * bytes (pymalloc's own; malloc counts the rest), with whole 1 every
 * block; and where the chained one goes */
const struct py_allocator *heap_py_hook_sigsafe(int domain, int whole);
struct py_allocator *heap_py_orig_sigsafe(int domain);

/* ---- the libc hooks' fast path (interpose/malloc.c) -------------------- */

/* glibc's allocator, the one the application would have called. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t al, size_t n);
void *__libc_valloc(size_t n);
void *__libc_pvalloc(size_t n);

/* Per thread: bytes left before the next sample (initial-exec TLS). The
 * hooks' fast path is inlined into interpose/malloc.c's shims: hidden, so
 * that they address it and the filter as sig_heap.c does. */
extern __thread int64_t heap_left __attribute__((visibility("hidden")));
extern uint16_t heap_filter[HEAP_FILTER] __attribute__((visibility("hidden")));

/* Takes n bytes off the countdown; true (unlikely) when a sample point
 * falls in them: a subtract and a compare. */
#define HEAP_TAKE(n) (__builtin_expect((heap_left -= (int64_t)(n)) <= 0, 0))

/* Whether p may be a sampled block: one load of the counting filter,
 * indexed by the address itself (blocks are 16-byte aligned). */
static inline int heap_maybe_sampled(const void *p)
{
	return __atomic_load_n(&heap_filter[((uintptr_t)p >> 4) &
					    (HEAP_FILTER - 1)],
			       __ATOMIC_RELAXED) != 0;
}

/* The slow paths (sig_heap.c, not inlined): the real call and the
 * record of a sampled block; realloc_counted follows a realloc while
 * frees are followed (heap_on); count_alloc counts an allocation made
 * (valloc, pvalloc). */
void *heap_malloc_sampled_sigsafe(size_t n);
void *heap_calloc_sampled_sigsafe(size_t n, size_t m);
void *heap_realloc_counted_sigsafe(void *old, size_t n);
void heap_free_sampled_sigsafe(void *p);
void *heap_memalign_sampled_sigsafe(size_t al, size_t n);
void heap_count_alloc_sigsafe(void *p, size_t n);

#endif /* PYPROF_SIG_HEAP_H */
