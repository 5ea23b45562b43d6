/*
 * forkpause.h - fork() interposed: the library's threads are not there
 * when a Python 3.12+ parent counts its threads.
 *
 * Right after os.fork() returns in the parent, CPython 3.12+ reads the
 * process's thread count (/proc/self/stat) and, above one, warns
 * "This process is multi-threaded, use of fork() may lead to deadlocks in
 * the child" (a DeprecationWarning on stderr, which test suites compare
 * and pytest prints for every forking test). At the default rate (CPU
 * timers) the library's only threads are the agent and the names thread:
 * when the main thread of a profiled 3.12+ process calls fork(), both end
 * first (their state kept), the fork happens, and in the parent the agent
 * starts again from a pending call (Py_AddPendingCall), which the main
 * thread runs at its next bytecode boundary, after the warning's check;
 * the agent starts the names thread again. Past the tick the CPU-clock
 * sampler ends too, and the agent starts it again (its accounts start
 * afresh: at most a period per thread, and the CPU time between the fork
 * and the restart, go unsampled). The child starts its own agent
 * as before (init.c's fork handlers). Samples taken meanwhile wait in the
 * ring. Why this design: docs/design.md#the-librarys-threads.
 *
 * Not paused: the wall sampler (PYPROF_MODE=wall), forks from other
 * threads or while the program has other threads (the warning is right
 * then, and their samples must go on being drained), and Python 2.7 to
 * 3.11, which do not warn.
 *
 * Contexts: forkpause_init in the constructor; fork() in any program
 * thread. A program that forks inside a signal handler is served too:
 * the waits are bounded (agent_pause, threadnames_pause).
 */
#ifndef PYPROF_FORKPAUSE_H
#define PYPROF_FORKPAUSE_H

#include <sys/types.h>

/* Whether this interpreter warns (its row's fork_warns_of_threads,
 * 3.12+) and how to reach its pending calls; is_main: getpid() of the
 * process that samples. Constructor. */
struct pyabi;
void forkpause_init(const struct pyabi *abi);

/* fork()'s body (interpose/fork.c): the real fork, with the agent and the
 * names thread paused around it when they would make the interpreter
 * warn, and resumed after it in the parent. The forking thread. */
pid_t forkpause_fork(void);

#endif /* PYPROF_FORKPAUSE_H */
