/*
 * threadnames.h - Python thread names (threading.Thread.name), by OS
 * thread id.
 *
 * A name lives in Python objects that pyprof cannot safely read without
 * the GIL, so a thread of pyprof's own (never sampled) takes the GIL every
 * NAMES_PERIOD_MS, or sooner when the agent sees a thread it has no name
 * for, with PyGILState_Ensure, reads threading._active (only if the program
 * imported threading: it never imports anything) and copies each thread's
 * name and id into a table that the agent reads under a mutex; then it
 * releases the GIL. No Python code of the program runs, the exception state
 * is saved and restored, and no object is kept but one C function in
 * atexit's list, the exit gate that keeps the names thread from asking for
 * the GIL once finalization may begin (threadnames.c, docs/design.md).
 *
 * Why a thread of its own, and not the agent: the GIL may be held for a
 * long time (or forever, by a deadlocked program), and the agent must
 * never wait for it. Why not Py_AddPendingCall: only the main thread runs
 * pending calls, so a main thread blocked in join() never did, and until
 * it did, older interpreters (2.7, 3.6, 3.8) sent every other thread through
 * the eval loop's slow path at every instruction (2-4x slower).
 *
 * With one thread state (a single-threaded program, a forked child) the
 * interpreter is not asked: the one thread is named "MainThread", or, in
 * a forked child, what the forking thread was named in the parent.
 *
 * Limits: threads the threading module does not know (C threads) have no
 * name; a program holding the GIL for seconds delays the refresh by as
 * much; a single-threaded program that renamed its main thread shows
 * "MainThread" until it starts a second thread.
 */
#ifndef PYPROF_THREADNAMES_H
#define PYPROF_THREADNAMES_H

#include <stddef.h>

#define NAMES_PERIOD_MS 250
#define NAMES_MAX 4096
#define NAMES_LEN 128

/* Looks up the C API entry points of the interpreter whose row is abi
 * (constructor). 0, or -ENOSYS if the interpreter lacks one (names then
 * stay unknown). */
struct pyabi;
int threadnames_init(const struct pyabi *abi);

/* Agent: starts the names thread once the interpreter is up. */
void threadnames_start(void);

/* Agent: asks for a refresh now (a thread without a name was seen).
 * Returns a ticket for threadnames_answered. */
unsigned threadnames_request(void);

/* Agent: whether the names thread has read the program's thread names
 * (threading._active, or the lone main thread) in a look that began after
 * the request that returned ticket; also 1 when no names thread runs to
 * answer. A look the names thread could not take (the exit gate not in
 * place yet, the GIL not created) answers nothing. */
int threadnames_answered(unsigned ticket);

/* Another look the names thread takes while it holds the GIL, at each of
 * its wakes (threadnames_request wakes it): fn returns quickly when it
 * has nothing to do (has_work false: the GIL is then not taken for it).
 * asyncio.c's, which must not wait for the GIL on the wall sampler's
 * thread. Set once, in the constructor. */
void threadnames_gil_hook(int (*has_work)(void), void (*fn)(void));

/* Agent: the generation of the table, bumped by each refresh. */
unsigned threadnames_generation(void);

/* Agent: copies the name of tid into buf; 1 if known, else 0. */
int threadnames_get(int tid, char *buf, size_t cap);

/* At exit: asks the names thread to stop (it is not waited for: it may be
 * waiting for the GIL). */
void threadnames_stop(void);

/* Before a fork (forkpause.h): the names thread ends, if it can within
 * a moment (it cannot while it waits for the GIL the forking thread
 * holds, which it takes only when the program has other threads);
 * threadnames_start (the agent, while sampling) starts it again. 1 if
 * it is gone, 0 if it was not running or is still there. */
int threadnames_pause(void);
#define NAMES_PAUSE_WAIT_MS 1000 /* at most (a busy machine's delay) */

/* Fork: prepare notes the forking thread; in the child the names thread
 * is gone, the lock may have been held, and of the table only the forking
 * thread's name is kept, as the child's main thread. The agent starts the
 * names thread again (threadnames_start) when the child samples. */
void threadnames_fork_prepare(void);
void threadnames_after_fork_child(void);

#endif /* PYPROF_THREADNAMES_H */
