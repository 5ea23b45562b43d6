/*
 * heap.h - heap profiling (PYPROF_HEAP_RATE): Poisson-sampled allocations.
 *
 * Two parts:
 *   sig_heap.c  the allocation hooks, on application threads: libc's
 *               malloc family interposed (the library exports malloc,
 *               free...; glibc's __libc_malloc etc. are the real ones, so no
 *               dlsym is needed at any time) and CPython's MEM and OBJ
 *               allocator domains wrapped (3.6+). Async-signal-safe in the
 *               sense of signal/: no malloc of our own, no locks,
 *               no stdio; preallocated tables; errno saved.
 *   heap.c      set-up (constructor), installing the Python domain hooks
 *               (and putting them back after start-up), fork.
 *
 * Sampling (Go's runtime.MemProfileRate model): every thread counts down
 * the bytes it allocates; the gap to the next sample is drawn from an
 * exponential distribution of mean rate, so each byte has the same chance
 * of being the sampled one and an allocation of S bytes is sampled with
 * probability 1 - exp(-S/rate); the collector scales each sample by the
 * inverse. The fast path is a thread-local subtract and compare.
 *
 * A sampled allocation records its Python stack (the guarded walker of
 * signal/frames.c), size and address in the sample ring (sampler.h,
 * SAMPLE_HEAP); its address goes into a fixed, lock-free table of sampled
 * addresses, with a small counting filter in front, so that a free() of
 * an unsampled block costs one load of the filter. Freeing a sampled
 * block removes it and puts a SAMPLE_HEAP_FREE record in the ring before
 * the block goes back to the allocator (so its address cannot be handed
 * out and sampled again ahead of the free record).
 *
 * No double counting: the Python domain hooks count blocks of up to 512
 * bytes, which pymalloc serves itself; bigger ones it gets from malloc,
 * which counts them. No counting of our own: a per-thread depth
 * (heap_busy, initial-exec TLS) is raised around everything pyprof does
 * on an application thread, and pyprof's own threads keep it raised for
 * life; the slow path (a sample point reached) checks it.
 */
#ifndef PYPROF_HEAP_H
#define PYPROF_HEAP_H

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
	unsigned long n_freed;     /* sampled blocks freed            */
	unsigned long n_lost;      /* sampled, not recorded: table or
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
extern int heap_on;
extern int heap_sampling_supported;
/* hidden, like everything of ours, so that the hooks read them directly
 * rather than through the GOT */
extern int heap_sampling_on __attribute__((visibility("hidden")));
extern uint64_t heap_sampling_rate __attribute__((visibility("hidden")));

/*
 * Constructor, once the interpreter's version is known: says that heap
 * sampling can be switched on (heap_sampling_supported) and, with rate
 * (PYPROF_HEAP_RATE) above 0, wraps the MEM and OBJ domains (Python 3;
 * major says which) now, before the interpreter starts, and starts
 * following frees; with start (PYPROF_START=on) also sampling, at once.
 * From then on control.h switches it (sampling_start, sampling_stop).
 * Returns 0.
 */
int heap_init(uint64_t rate, int start, int major);

/* control.h's sampling_start switched heap sampling on (agent thread,
 * interpreter initialized): wraps the domains if that was not done yet
 * (a dormant process asked for heap samples) and follows frees. */
void heap_sampling_started(void);

/* The agent saw the interpreter initialized: puts back the domain hooks
 * that start-up replaced (CPython 3.6's Py_Main sets the allocators up
 * again after our constructor ran), chaining to what it installed; see
 * sig_heap.c for why this is safe while other threads allocate. Agent
 * thread. */
void heap_python_started(void);

/* Set once the interpreter was seen initialized (heap_python_started).
 * With it set and Py_IsInitialized() false, the interpreter is finalizing
 * (or gone): from then on frees are not reported, so that the in-use
 * profile at exit shows what the program held when it ended, not what
 * finalization left. */
extern int heap_python_seen;

/* Fork child: the parent's sampled blocks are not this process's. */
void heap_after_fork_child(int follow);

/* Stops sampling and following frees (exit): the agent is going. */
void heap_stop(void);

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

/* our hooks (ctx unset), and where the chained one goes */
const struct py_allocator *heap_py_hook_sigsafe(int domain);
struct py_allocator *heap_py_orig_sigsafe(int domain);

#endif /* PYPROF_HEAP_H */
