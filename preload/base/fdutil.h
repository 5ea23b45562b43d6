/*
 * fdutil.h - keeping the library's file descriptors out of the program's way.
 *
 * Agent thread, constructor and the CPU-clock sampler thread, except the _sigsafe functions (bare system
 * calls), which the pipe()/pipe2() wrapper also calls: libunwind opens its
 * pipe there, possibly inside the SIGPROF handler.
 *
 * A program owns its descriptor numbers: it dup2()s onto 0, 1 and 2, expects
 * the next open() to return the lowest free number, closes ranges when it
 * daemonizes, and its tests list /proc/self/fd. The library's long-lived
 * descriptors (every one is listed in docs/environment.md#descriptors)
 * therefore live high up, close-on-exec, in the top FD_PARK_SLOTS numbers
 * under min(soft RLIMIT_NOFILE, 1024) (a quarter of a lower limit), where
 * programs rarely look; and before the library closes or writes one it
 * checks that the number still names the object it opened, since a program
 * that closed it may have reused the number for a file of its own. Every
 * descriptor the library keeps is opened through fd_park or fd_pipe_high.
 *
 * Identity is the (device, inode) pair, so a kept descriptor must be of a
 * kind with an inode of its own: a socket, a pipe, a /proc file. Every
 * eventfd, timerfd or perf counter shares one anonymous inode (perf
 * counters are told apart by their event id instead, threads.c).
 */
#ifndef PYPROF_FDUTIL_H
#define PYPROF_FDUTIL_H

#include <sys/types.h>

struct fd_id {
	dev_t dev;
	ino_t ino;
};

/* The lowest number the library parks at, or -1 when the limit leaves
 * no room (then descriptors stay where the kernel put them). */
int fd_floor_sigsafe(void);

/* Moves fd to a high number (close-on-exec) and returns the new number;
 * returns fd itself (or a negative fd) when no high number is free. */
int fd_park(int fd);
int fd_park_sigsafe(int fd);

/* A non-blocking, close-on-exec pipe, both ends parked. 0 or -1. */
int fd_pipe_high(int fds[2]);

/* Opens path (open(2) flags, close-on-exec added) and moves the
 * descriptor high (fd_park). The descriptor, or -1 (errno set). */
int fd_open_parked(const char *path, int flags);

/* Gives the calling thread a descriptor table of its own, empty (Linux
 * 5.9+'s close_range with CLOSE_RANGE_UNSHARE): what it opens afterwards
 * takes no number of the program's, even for a moment, and the program
 * cannot close it. For a thread of ours that needs none of the program's
 * descriptors (the CPU-clock sampler: its /proc/self/task/TID/syscall
 * files). 0, or -1 where the kernel refuses (the thread then shares the
 * program's table, as every thread does). */
int fd_table_private(void);

/* Whether fd_table_private can succeed here (the kernel has close_range
 * and no seccomp profile refuses it); changes nothing. */
int fd_table_private_possible(void);

/* Records what fd names now. Returns 0, or -1 if fd is not open. */
int fd_id_get(int fd, struct fd_id *id);

/* 1 if fd is open and still names the object recorded in id. */
int fd_is(int fd, const struct fd_id *id);

/* Closes fd only if it still names id's object. */
void fd_close_own(int fd, const struct fd_id *id);

#endif
