/*
 * shortslice.h - a sampler thread that runs as soon as it wakes: the
 * calling thread's time slice set to 100 us (sched_setattr's
 * sched_runtime, which the kernel's EEVDF scheduler, Linux 6.6+, reads
 * as the slice a SCHED_OTHER or SCHED_BATCH thread asks for; older
 * kernels keep it and ignore it).
 *
 * Why: a thread that reads other threads' stacks and counts only those
 * it finds running (the CPU-clock sampler where perf is refused, the
 * reader of `record --pid`), or every thread as it finds it (the wall
 * sampler), must run the moment its tick comes. EEVDF
 * lets a running thread finish its slice (3 ms by default) before a
 * waking thread of the same weight takes the CPU, so a sampler sharing a
 * CPU with the program (pinned, or a busy machine) woke only once the
 * program's short bursts had ended and found them back in their waits:
 * the bursts of one thread between sleeps, pinned to one CPU, came out
 * 15 to 37 points off (50/30/20 read as 87/12/1), and within 0.5 to 3.5
 * points with the short slice (docs/design.md, "Where the CPU time was
 * spent").
 *
 * Only the slice changes: the policy, nice value and flags are read
 * first and kept, so the thread gets no more CPU than before (its weight
 * is its nice value's), only sooner. A real-time or idle policy, or a
 * refusal (seccomp, an old kernel without sched_getattr), leaves the
 * thread as it was.
 *
 * Header only. Not async-signal-safe (two system calls; thread start).
 */
#ifndef PYPROF_SHORTSLICE_H
#define PYPROF_SHORTSLICE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PYPROF_SHORT_SLICE_NS 100000u /* the least the kernel takes */

/* The kernel's struct sched_attr (its first version, 48 bytes). */
struct pyprof_sched_attr {
	uint32_t size;
	uint32_t policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime;
	uint64_t deadline;
	uint64_t period;
};

/* The calling thread's slice set to PYPROF_SHORT_SLICE_NS. 0, or -errno
 * (the thread as it was). */
static inline int pyprof_short_slice(void)
{
	struct pyprof_sched_attr a;

	memset(&a, 0, sizeof a);
	if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) != 0)
		return -errno;
	/* SCHED_OTHER (0) and SCHED_BATCH (3) only */
	if (a.policy != 0 && a.policy != 3)
		return -EPERM;
	a.size = sizeof a;
	a.runtime = PYPROF_SHORT_SLICE_NS;
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0)
		return -errno;
	return 0;
}

#endif /* PYPROF_SHORTSLICE_H */
