/*
 * threads.h - one CPU-time timer per thread.
 *
 * Each thread of the process gets a POSIX timer on its own CPU-time clock
 * (CLOCK_THREAD_CPUTIME_ID for that thread) that delivers SIGPROF to that
 * thread only (SIGEV_THREAD_ID), with a random first expiry in (0, period]
 * so that short-lived and mostly idle threads are sampled without bias.
 * A process-wide setitimer would lose and misattribute samples once more
 * than a couple of threads burn CPU: its ITIMER_PROF signals go to
 * whichever thread the kernel picks, and expiries that come while one is
 * pending merge into it.
 *
 * Threads are found two ways: the pthread_create wrapper arms a timer in
 * each new thread as it starts (so that short threads are seen), and the
 * agent scans /proc/self/task (threads_scan) for any thread the wrapper did
 * not see, and to retire timers of threads that are gone.
 *
 * The table: a fixed array of slots claimed by CAS on tid. Slot states:
 *   FREE -> CLAIMED (by the thread itself or by the agent) -> ARMED
 *   ARMED -> FREE when the owner deletes the timer (thread exit or scan)
 * Who may delete: whoever moves the slot from ARMED to DYING by CAS.
 * Contexts: pthread_create wrapper and key destructor on application
 * threads (lock-free, no allocation besides the wrapper's one malloc);
 * everything else on the agent thread.
 */
#ifndef PYPROF_THREADS_H
#define PYPROF_THREADS_H

#include <pthread.h>
#include <stdint.h>

#define THREADS_MAX 8192

/* Prepares the table (constructor). 0 or -errno. */
int threads_init(void);

/* Starts sampling every thread (agent). source: enum config_source. */
void threads_start(int source);

/* Deletes every timer and stops arming new ones: the agent, at exit, and
 * the exec wrappers (interpose/exec.c), in a fork child too, so
 * async-signal-safe (timer_delete, close). */
void threads_stop_sigsafe(void);

/* Undoes threads_stop_sigsafe after an exec that failed (interpose/
 * exec.c): timers may be armed again, and the agent's next scan (within
 * AGENT_SCAN_MS) arms every thread's. Async-signal-safe (execve is: a
 * program may call it from a handler). */
void threads_resume_sigsafe(void);

/* Agent: arms threads the wrapper did not see, retires vanished ones. */
void threads_scan(void);

/* Opens what threads_scan reads (a fork child's handler calls it before
 * the program goes on, see agent.c). */
void threads_prepare_scan(void);

/* Fork child: forget the parent's timers (they were not inherited) and
 * counters; with follow set (CPU mode), arm the surviving thread at once,
 * so that the child's first moments are sampled too. */
void threads_after_fork_child(int follow);

/* 1 if the armed sources are perf_event counters (past the tick). */
int threads_using_perf(void);

/* pthread_create()'s body (interpose/pthread.c): the thread starts
 * through a trampoline that arms its timer (and prepares native stacks)
 * once sampling runs or native stacks are on; else the real call. */
int threads_pthread_create(pthread_t *th, const pthread_attr_t *attr,
			   void *(*fn)(void *), void *arg);

/* 1 if the source is the threads' CPU clocks read from the library's own
 * thread (cpuclock.h): slots then list the threads, and nothing is armed
 * in them. Agent and that thread. */
int threads_using_clock(void);

/* 1 if the CPU-clock sampler thread runs: the source (threads_using_clock)
 * or, beside perf counters (which sample user time only), for the system
 * time (threads_clock_system_only). Agent. */
int threads_clock_thread(void);
int threads_clock_system_only(void);
/* 1 if the clocks charge a thread only where they find it running (perf
 * asked for and refused), else by the accounts' rule (cpuclock.c). */
int threads_clock_oncpu(void);

/* What the last threads_start counted CPU time with: an enum
 * wire_cpu_source (timers once perf was refused for a thread: those
 * armed from then on use them),
 * 0 if it never started. Agent. */
int threads_source(void);

/* 1 between threads_start and threads_stop_sigsafe. Any thread. */
int threads_running(void);
int threads_running_sigsafe(void); /* the same, for exec's wrappers */

/* A count that changes whenever a thread's slot is armed or freed: a
 * reader lists the threads again (threads_list) when it moved. Any
 * thread, lock-free. */
unsigned threads_table_gen(void);

/* The tids of the armed slots into tids[0..max); returns how many. Any
 * thread, lock-free: a thread arriving or leaving meanwhile may be
 * missed or listed after it left (its CPU clock then cannot be read);
 * the count of threads_table_gen read before the call tells. */
int threads_list(int *tids, int max);

/* Called first thing by each of pyprof's own threads: it is never
 * sampled (its timer, if the pthread_create wrapper armed one, is
 * retired). */
void threads_internal_self(void);
/* ...and last thing by one that ends before the process does (the wall
 * sampler, which comes and goes with sampling: control.h). */
void threads_internal_leave(void);
/* The same for a thread of ours just created (ownthread_create), before
 * it runs: no scan takes it for the program's meanwhile. */
void threads_internal_add(int tid);
/* The tids of pyprof's threads now (at most max). */
int threads_internal_list(int *tids, int max);
int threads_is_internal(int tid);

/* Number of armed timers (for logs and tests). */
int threads_armed(void);

/* 1 if thread tid is armed with a perf counter (in the program's table
 * or the CPU-clock thread's), 0 if with a CPU timer or not armed: only a
 * counter's silent grid points are time in the kernel (system mode). */
int threads_perf_armed(int tid);

/* CPU time (ns) of threads whose perf counter the program closed, from
 * its last sighting to its reopening, since the start (or the fork).
 * Agent thread. */
uint64_t threads_lost_closed_ns(void);

/* With perf counters: each counter still ours (its event id), else a new
 * one opened and the thread's CPU time since the last check counted as
 * lost (an ioctl per thread). Agent thread, every tick. */
void threads_check_counters(void);

/* The CPU-clock thread's part of that: opens again, in its own
 * descriptor table, the counters the agent found closed (and closes the
 * ones of its table whose slots were freed elsewhere). That thread only,
 * every tick. */
void threads_reopen_private(void);

/* CPU-clock thread: sets the period of its counters whose first, random,
 * period ended (sig_handler_perf_period_due). */
void threads_period_due(void);

/* Wakes the CPU-clock thread (a counter to open or a period to set):
 * any thread, signal handlers included. */
void threads_wake_clock(void);

/* The CPU-clock thread starts (again) with a table of its own, empty:
 * the counters its previous table held are gone, their threads' slots
 * are to be opened again. That thread, at its start. */
void threads_private_lost(void);

/* The CPU-clock thread is ending (its counters close with its table):
 * new threads no longer wait for theirs. */
void threads_clock_ended(void);

/* The calling thread waits (1 ms at most) until the CPU-clock thread,
 * started again, has opened its counter again: after a fork's pause
 * (forkpause.c), so that the main thread's CPU is counted from there. */
void threads_await_counter(void);

/* Agent, as sampling starts: waits (50 ms at most) until the CPU-clock
 * thread has opened the counters of every thread listed, so that the
 * start's answer counts them armed. */
void threads_await_opened(void);

#endif /* PYPROF_THREADS_H */
