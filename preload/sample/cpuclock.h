/*
 * cpuclock.h - CPU-mode sampling past the kernel tick from the library's
 * own thread, by the program threads' CPU clocks: no signal.
 *
 * One thread of ours wakes PYPROF_HZ times a second (absolute deadlines,
 * jittered uniformly in [0.5, 1.5] periods so that it cannot stay in
 * lockstep with periodic work). At each tick it reads every program
 * thread's CPU clock (clock_gettime on the thread's clock: user + system
 * time, as the kernel counts it exactly) and adds what the thread used
 * since the previous tick to that thread's account. Each account works as
 * a CPU timer of the period evaluated at the ticks: when it holds one
 * period or more, the thread's Python stack is read with guarded reads
 * (the walk the SIGPROF handler and the wall sampler use) and one record
 * of weight w = account / period and value w periods is written; the
 * remainder stays. A thread's first account starts at a random fraction
 * of the period, as a CPU timer's first expiry does.
 *
 * What this gives: time in the kernel (system calls, page faults) is
 * counted, at any rate; the sampled threads take no signal (no handler
 * runs on them, no system call of theirs is interrupted or restarted);
 * per-thread totals are exact to within one period by construction. What
 * it cannot give: anything that needs the interrupted thread itself,
 * that is native stacks (PYPROF_NATIVE keeps perf_event counters past
 * the tick) and the native=yes|no label (taken from the interrupted
 * program counter); and a thread that lives less than one tick is not
 * seen. The stack is read while its thread may be running: the walk is
 * guarded and validated as in wall mode, and a sample that fails is
 * counted as invalid, not kept.
 *
 * A thread that is not on a CPU when its stack is read is charged there
 * only if it was stopped where it ran: it holds the GIL, or the kernel
 * says it is runnable (preempted) or waits on a futex (the GIL); a thread
 * blocked in another call keeps its time for its next running tick
 * (taskstate.h; docs/design.md, "Past the tick").
 *
 * Threads come from threads.c's table (the pthread_create wrapper and the
 * agent's scan of /proc/self/task), re-listed when it changes; Python
 * thread states and their OS ids from the interpreters' lists, as in wall
 * mode.
 *
 * Contexts: cpuclock_start/stop on the agent thread (cpuclock_pause on
 * the forking thread while the agent is paused); the sampler thread
 * itself runs with every signal blocked but the faults (ownthread.h),
 * never takes the GIL or calls the C API, allocates nothing.
 */
#ifndef PYPROF_CPUCLOCK_H
#define PYPROF_CPUCLOCK_H

#include <stdint.h>

/* Starts the sampler thread if it is not running. 0 or -errno. Agent. */
int cpuclock_start(void);

/* Stops it and waits for it; logs its ticks, their mean cost and the
 * stacks that failed validation (PYPROF_LOG=info). Idempotent. Agent. */
void cpuclock_stop(void);

/* Stops it for a moment (the parent's side of a fork, forkpause.c)
 * keeping every thread's account: the next cpuclock_start resumes them,
 * so that the CPU time the program's threads use meanwhile is charged at
 * the first tick after it rather than lost. Idempotent. */
void cpuclock_pause(void);

/* Fork child: the sampler thread did not survive (nor do the accounts of
 * the parent's threads). */
void cpuclock_after_fork_child(void);

/* The CPU time the sampler threads of this process have used, ended ones
 * included (it is not the program's: control.c leaves it out of the CPU
 * the achieved rate is judged by). Agent. */
uint64_t cpuclock_cpu_ns(void);

#endif /* PYPROF_CPUCLOCK_H */
