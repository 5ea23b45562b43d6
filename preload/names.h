/*
 * names.h - Python thread names (threading.Thread.name), by OS thread id.
 *
 * A name lives in Python objects that pyprof cannot safely read without
 * the GIL, so pyprof asks the interpreter: every NAMES_PERIOD_MS the agent
 * queues a pending call (Py_AddPendingCall, which any thread may call
 * without the GIL). The interpreter runs it on the main thread at its next
 * safe point, with the GIL held; it reads threading._active (only if the
 * program imported threading: it never imports anything) and copies each
 * thread's name and id into a table that the agent reads under a mutex.
 * Renames show up within a period. The program sees nothing: no Python
 * code of its own runs, the exception state is saved and restored, and no
 * object is created or kept.
 *
 * Limits: the call runs only when the main thread executes Python code, so
 * names are not refreshed while it is blocked in a long system call (they
 * are kept from the last refresh); threads that the threading module does
 * not know (C threads) have no name.
 */
#ifndef PYPROF_NAMES_H
#define PYPROF_NAMES_H

#include <stddef.h>

#define NAMES_PERIOD_MS 500
#define NAMES_MAX 4096
#define NAMES_LEN 128

/* Looks up the C API entry points (constructor). 0, or -ENOSYS if the
 * interpreter lacks one (names then stay unknown). */
int names_init(int py_major);

/* Agent: queues a refresh if none is pending. */
void names_request(void);

/* Agent: the generation of the table, bumped by each refresh. */
unsigned names_generation(void);

/* Agent: copies the name of tid into buf; 1 if known, else 0. */
int names_get(int tid, char *buf, size_t cap);

/* Fork child: the lock may have been held by a thread that is gone. */
void names_after_fork_child(void);

#endif /* PYPROF_NAMES_H */
