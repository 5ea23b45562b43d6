/*
 * lastthread.h - noticing that the program's last thread has ended.
 *
 * Agent thread only.
 *
 * A process ends when its last thread does: glibc calls exit(0) when the
 * last thread returns or calls pthread_exit. The library's own threads
 * (agent, names, wall sampler) would keep such a process alive for ever:
 * a child forked from a non-main thread whose thread function returns,
 * or a main thread that calls pthread_exit after its workers end. The
 * agent asks program_gone() now and then; when it says so, the library
 * sends what it has, ends its threads, and the last of them to return
 * lets glibc end the process with status 0, as it would have without us.
 */
#ifndef PYPROF_LASTTHREAD_H
#define PYPROF_LASTTHREAD_H

/* 1 when every thread of the program (all but the library's own) has
 * ended. Cheap when the main thread still runs: one read of
 * /proc/self/stat. */
int program_gone(void);

/* Opens what program_gone reads (once per process; a fork child's
 * handler calls it before the program goes on). */
void program_gone_prepare(void);

#endif
