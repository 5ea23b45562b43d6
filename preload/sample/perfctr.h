/*
 * perfctr.h - one thread's task-clock counter (perf_event_open): what
 * threads.c arms a thread with where perf is allowed.
 *
 * Contexts: the thread itself, the agent or the CPU-clock thread (which
 * opens counters in a descriptor table of its own); never a signal
 * handler.
 */
#ifndef PYPROF_PERFCTR_H
#define PYPROF_PERFCTR_H

#include <stdint.h>

/* A task-clock counter on thread tid that sends SIGPROF to that thread
 * after every period of its CPU time, the first after first ns (a random
 * part of a period: a thread, or a forked child, that lives less than a
 * period is then sampled with the probability of its CPU time, not
 * never; the period is set at the first overflow, by the handler or, for
 * a counter of the CPU-clock thread's own table (private_), by that
 * thread, which the handler wakes). Enabled once: every overflow queues
 * a signal (POLL_IN) by itself, so the handler makes no system call to
 * re-arm it. User time only (perfctr.c says why). Parked high unless
 * private_. Returns the fd, or -errno. */
int perfctr_open(int tid, uint64_t period, uint64_t first, int private_);

/* 0 if this thread may open a task-clock counter on itself, else the
 * errno that refused it (opened disabled and closed at once: no signal,
 * no descriptor left). */
int perfctr_probe(void);

/* perfctr_probe in a short-lived thread with a descriptor table of its
 * own: the probe takes no number of the program's, even for a moment.
 * What perfctr_probe returns, or -1 where no such table can be had. */
int perfctr_probe_private(void);

/* The event id the kernel gave counter fd (what tells ours from any
 * other counter at that number), or 0. */
uint64_t perfctr_id(int fd);

/* Disables and closes counter fd (async-signal-safe: threads_stop_sigsafe
 * disarms through it). */
void perfctr_close_sigsafe(int fd);

#endif /* PYPROF_PERFCTR_H */
