/*
 * taskstate.h - whether a program thread that is not on a CPU right now
 * was preempted (runnable, waiting for a CPU), waits on a futex (the GIL,
 * or a lock) or is blocked in another system call (sleep, I/O, poll):
 * /proc/self/task/TID/syscall, which says "running" for a thread that is
 * running or runnable, else the number of the system call it sleeps in
 * (-1: none, a page fault).
 *
 * The CPU-clock sampler (cpuclock.c) asks only about a thread whose clock
 * stood still while its stack was read and that does not hold the GIL
 * (docs/design.md, "Past the tick"): a preempted thread's stack is where
 * its time went; so is, mostly, that of a thread waiting for the GIL (it
 * waits at the call that released it, having just run that call); a
 * thread blocked elsewhere stopped where its time did not go.
 *
 * A read costs about 1.6 us here (3.5 for .../stat, which would tell
 * runnable from sleeping only), so the descriptors of the last few
 * threads asked about are kept open (TASKSTATE_FDS, high and
 * close-on-exec through fdutil.c), each checked to still name what it
 * opened before it is read. The sampler thread gives itself a
 * descriptor table of its own first (fd_table_private), so that these
 * files never take a number of the program's, even while one opens (a
 * program probing its low numbers saw them, at the default rate once it
 * was this sampler's); where the kernel refuses, they share the
 * program's table, parked high.
 *
 * Contexts: the CPU-clock sampler thread (which closes them before it
 * ends); taskstate_after_fork_child in the fork child (close only, of
 * what still names our files).
 */
#ifndef PYPROF_TASKSTATE_H
#define PYPROF_TASKSTATE_H

#define TASKSTATE_FDS 8

enum taskstate {
	TASKSTATE_UNKNOWN = -1, /* cannot be read (gone, no such file)  */
	TASKSTATE_BLOCKED = 0,	/* in another system call, or a fault   */
	TASKSTATE_RUNNABLE,	/* on a CPU or waiting for one          */
	TASKSTATE_FUTEX,	/* waiting on a futex: the GIL, a lock  */
};

/* What thread tid (of this process) is doing. */
enum taskstate taskstate_get(int tid);

/* Closes the kept descriptors (the sampler stops). */
void taskstate_close_all(void);

/* Fork child: the kept descriptors name the parent's threads. */
void taskstate_after_fork_child(void);

#endif /* PYPROF_TASKSTATE_H */
