/*
 * sig_handler.h - the SIGPROF handler (sig_handler.c): CPU and
 * perf_event samples into the ring; sigprocmask's body for
 * interpose/signals.c.
 */
#ifndef PYPROF_SIG_HANDLER_H
#define PYPROF_SIG_HANDLER_H

#include <signal.h>

/* The SIGPROF handler (sig_handler.c). */
void sig_prof_handler(int sig, siginfo_t *si, void *uc);

/* Fork child: the surviving thread has a new tid. */
void sig_handler_after_fork_child(void);

/* sigprocmask() (interpose/signals.c): pthread_sigmask(), except inside
 * our own unw_backtrace() call, where it changes nothing and reports the
 * mask the thread has. Any thread, any context. */
int sig_handler_sigprocmask_sigsafe(int how, const sigset_t *set, sigset_t *old);

/* Counters on fds at or above this are not opened (threads.c). */
#define PERF_FD_MAX 65536

/* Whether fd is one of our perf_event counters (sample/threads.c marks
 * them with sig_handler_perf_fd_mark): their SIGPROFs are ours. */
int sig_handler_perf_fd_sigsafe(int fd);

/* Marks fd as one of ours. The mark is never cleared: an overflow signal
 * can still be pending for a counter we closed, and a SIGPROF taken for
 * the application's would be given its default action, which kills the
 * process. (A later reuse of the number by another fasync user that also
 * signals SIGPROF would have its signals ignored: far the lesser risk.) */
void sig_handler_perf_fd_mark(int fd);

/* Marks fd as a counter opened with a random first period: its first
 * overflow sets the sampling period (PERF_EVENT_IOC_PERIOD). Before it is
 * enabled. */
void sig_handler_perf_phase_mark(int fd);

/* Marks fd as a counter in the CPU-clock thread's own descriptor table
 * (threads.c): its number names nothing in the signalled thread's table,
 * so at its first overflow the handler asks that thread to set the
 * period (sig_handler_perf_period_due) instead of doing it. Before it is
 * enabled. */
void sig_handler_perf_private_mark(int fd, int private_);

/* The CPU-clock thread: the next counter whose first overflow came and
 * whose period it is to set, at or after fd *from (updated); -1 if none.
 * Each is returned once. */
int sig_handler_perf_period_due(int *from);

/* Bumped by the handler when a counter's period is due, and woken with
 * FUTEX_WAKE: the CPU-clock thread waits on it between its ticks. */
extern unsigned sig_handler_due_word;

/* Bumps that word and wakes the CPU-clock thread: any thread, signal
 * handlers included. */
void sig_handler_wake_clock(void);

#endif /* PYPROF_SIG_HANDLER_H */
