/*
 * ticklabel.h - system time where perf is refused: the kernel's own
 * tick accounting of each thread's user and system time, placed on the
 * CPU-clock sampler's samples.
 *
 * Without perf counters (perf_event_open refused: paranoid 3 or 4, a
 * container's seccomp), the CPU-clock thread (cpuclock.c, on-CPU mode)
 * charges a thread where it finds it running, but a thread found running
 * may be in user mode or in the kernel: its stack is the same (the call
 * that entered the kernel). The kernel itself samples that: at each of
 * its ticks (250 a second here) it charges the tick to the running
 * thread's user or system time, as the tick found it. A thread's
 * CPUCLOCK_VIRT clock is its user ticks, CPUCLOCK_PROF its user and
 * system ticks (in ns, a tick's length each), exact counts of those
 * point samples. Read at every CPU-clock tick that finds the thread's
 * clock moved, they say how many of the kernel's ticks since the last
 * read found the thread in the kernel: an event, placed at the middle of
 * the stretch of the thread's CPU time it came in.
 *
 * A sample is labelled by the events around it in the thread's CPU time
 * (within half a window either side, the window a kernel tick or the
 * sampling period, whichever is longer): system with the probability of
 * the kernel's share of those ticks, else python or native by its leaf
 * (cpuclock.c). The events after a sample are known only later, so each
 * sample waits here until its thread's clock has passed the window (or
 * the thread stopped running): a label from the ticks before and after
 * it, not from those before only, which would place a function's kernel
 * time about half a tick after it (2 ms at 250 Hz: a tenth of a 20 ms
 * call). Records are copied into a fixed arena; when it is full, the
 * oldest are labelled with what is known and released.
 *
 * Contexts: the CPU-clock thread only (no locks; allocates nothing).
 */
#ifndef PYPROF_TICKLABEL_H
#define PYPROF_TICKLABEL_H

#include <stddef.h>
#include <stdint.h>

struct raw_sample;

/* Where a released record goes (the ring). */
typedef void (*tl_commit_fn)(struct raw_sample *rec);

/* Forgets every held record and the tick's length (sampling starts);
 * released records go to commit. */
void tl_reset(uint64_t period_ns, tl_commit_fn commit);

/* Thread tid's clock read as cpu_ns, moved since its last read: reads
 * its PROF and VIRT clocks, notes an event if the kernel ticked
 * meanwhile. */
void tl_observe(int tid, uint64_t cpu_ns);

/* Holds a copy of record rec (len bytes) of thread tid, taken at its CPU
 * time cpu_ns, until its label can be told. 0, or -1 if it cannot be held
 * (too large, or the thread not seen by tl_observe): then the caller
 * writes it as it is. */
int tl_hold(int tid, const struct raw_sample *rec, size_t len,
	    uint64_t cpu_ns);

/* Labels and releases the held records whose label can be told now (all
 * of them if all). Once per CPU-clock tick, after its tl_observe calls. */
void tl_release(int all);

/* Samples labelled system by the ticks so far (the log's count). */
unsigned long tl_system_count(void);

#endif /* PYPROF_TICKLABEL_H */
