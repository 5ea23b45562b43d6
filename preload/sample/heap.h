/*
 * heap.h - heap profiling (PYPROF_HEAP_RATE): Poisson-sampled allocations.
 *
 * Three parts:
 *   interpose/malloc.c  libc's malloc family as the program sees it (the
 *               library exports malloc, free...; glibc's __libc_malloc
 *               etc. are the real ones, so no dlsym is needed at any
 *               time): the hooks' fast path, inlined from sig_heap.h.
 *   signal/sig_heap.c  the allocation hooks' slow paths, on application
 *               threads, and CPython's MEM and OBJ allocator domains
 *               wrapped (3.6+). Async-signal-safe in the sense of
 *               signal/: no malloc of our own, no locks, no stdio;
 *               preallocated tables; errno saved. Its switches and
 *               counters are declared in signal/sig_heap.h.
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
 * signal/sig_frames.c), size and address in the sample ring (sampler.h,
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

#include "signal/sig_heap.h"

/*
 * Constructor, once the interpreter's version is known: says that heap
 * sampling can be switched on (heap_sampling_supported) and, with rate
 * (PYPROF_HEAP_RATE) above 0, wraps the MEM and OBJ domains (where the
 * interpreter has PEP 445's allocators: its row's mem_allocators) now, before the interpreter starts, and starts
 * following frees; with start (PYPROF_START=on) also sampling, at once.
 * From then on control.h switches it (sampling_start, sampling_stop).
 * late: the library was loaded into a running interpreter (`pyprof
 * attach`, dlopen), so its malloc interposes nothing: the RAW domain is
 * wrapped too and counts every block (heap.c). Returns 0.
 */
int heap_init(uint64_t rate, int start, int mem_allocators, int late);

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

/* Fork child: the parent's sampled blocks are not this process's. */
void heap_after_fork_child(int follow);

/* Stops sampling and following frees (exit): the agent is going. */
void heap_stop(void);

#endif /* PYPROF_HEAP_H */
