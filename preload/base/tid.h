/*
 * tid.h - from a pthread_t (what CPython stores as a thread's ident) to the
 * OS thread id, for threads other than the caller.
 *
 * glibc keeps the kernel tid inside struct pthread, at an offset that is
 * not part of its API. tid_init() finds it once: it looks for the calling
 * thread's own tid among the words of its own struct pthread (the agent
 * thread calls it: its tid is not the process id, so no other field can
 * be mistaken for it), and checks the result on the main thread too.
 * tid_of() then reads that word of another thread's struct with a guarded
 * read. 3.11+ also stores native_thread_id in the thread state; this is for
 * earlier versions.
 */
#ifndef PYPROF_TID_H
#define PYPROF_TID_H

#include <stdint.h>
#include <time.h>

/* The CPU-time clock of thread tid of this process, by tid (as glibc's
 * pthread_getcpuclockid computes it: ~tid << 3 | CPUCLOCK_PERTHREAD |
 * CPUCLOCK_SCHED), so also for threads we have no pthread_t for; for
 * timer_create and clock_gettime. The kernel lets only the thread's own
 * process read it. */
static inline clockid_t tid_cpu_clock(int tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 4 | 2);
}

/* Records the main thread (constructor, on the main thread). */
void tid_note_main(void);

/* Finds the offset (agent thread). 0, or -ENOENT if not found. */
int tid_init(void);

/* The tid of the thread whose pthread_t is th, or 0 if unknown. Guarded;
 * any thread but signal context. A thread that has ended can leave th
 * pointing at reused memory: a number read there that is no thread of
 * this process (its CPU clock cannot be read) is unknown too. */
int tid_of(uintptr_t th);

#endif /* PYPROF_TID_H */
