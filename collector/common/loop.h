/*
 * loop.h - the collector's event loop: epoll over file descriptors, plus
 * timers, on one thread.
 *
 * Everything the collector does runs from callbacks of this loop: the
 * listening socket, each client connection, the signal fd, and timers (the
 * later --period writes and HTTP time-outs plug in the same way). Callbacks
 * must not block; a callback may add or remove any fd or timer, including
 * its own, and the loop never calls a callback for an fd after it was
 * removed, even when the fd number is reused within the same epoll batch
 * (each registration carries a generation number).
 *
 * Level-triggered: a callback that leaves data unread is called again on
 * the next round, which is how a busy client yields to the others.
 *
 * Single-threaded: every function here must be called on the loop's thread.
 */
#ifndef PYPROF_LOOP_H
#define PYPROF_LOOP_H

#include <stdint.h>
#include <sys/epoll.h>

struct loop;
struct loop_timer;

/* events: EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP as epoll gives
 * them. */
typedef void (*loop_fd_fn)(struct loop *loop, int fd, uint32_t events,
			   void *arg);
typedef void (*loop_timer_fn)(struct loop *loop, struct loop_timer *timer,
			      void *arg);

/* A new loop with its own epoll fd, or NULL (errno set). */
struct loop *loop_new(void);
/* Frees the loop and any timers still pending; does not close the fds that
 * are still registered (their owners do). NULL is fine. */
void loop_free(struct loop *loop);

/* Watches fd for events (EPOLLIN and/or EPOLLOUT; errors and hang-ups are
 * always reported) and calls fn(loop, fd, events, arg) when they occur.
 * The caller keeps owning fd. Returns 0, -EEXIST if fd is already
 * watched, -ENOMEM, or the error from epoll_ctl. */
int loop_add_fd(struct loop *loop, int fd, uint32_t events, loop_fd_fn fn,
		void *arg);
/* Changes the events watched on fd (0 pauses it). 0, -ENOENT or epoll's
 * error. */
int loop_mod_fd(struct loop *loop, int fd, uint32_t events);
/* Stops watching fd; call it before closing fd. Pending events for it in
 * the current round are dropped. 0 or -ENOENT. */
int loop_del_fd(struct loop *loop, int fd);

/* Calls fn once after delay_ns, then every interval_ns if interval_ns > 0.
 * Returns the timer, owned by the loop, or NULL (ENOMEM). A one-shot timer
 * is freed after its callback returns: do not use the pointer after that. */
struct loop_timer *loop_add_timer(struct loop *loop, uint64_t delay_ns,
				  uint64_t interval_ns, loop_timer_fn fn,
				  void *arg);
/* Cancels and frees a pending timer (also from inside its own callback).
 * NULL is fine. */
void loop_del_timer(struct loop *loop, struct loop_timer *timer);

/* Runs callbacks until loop_stop is called. Returns 0, or the negative
 * errno of a failed epoll_wait. */
int loop_run(struct loop *loop);
/* Makes loop_run return after the current round. */
void loop_stop(struct loop *loop);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t loop_now_ns(void);

#endif /* PYPROF_LOOP_H */
