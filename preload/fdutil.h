/*
 * fdutil.h - keeping the library's file descriptors out of the program's way.
 *
 * Agent thread, constructor and the CPU-clock sampler thread (fcntl and
 * fstat are async-signal-safe, but nothing here is called from a handler).
 *
 * A program owns its descriptor numbers: it dup2()s onto 0, 1 and 2, expects
 * the next open() to return the lowest free number, closes ranges when it
 * daemonizes, and its tests list /proc/self/fd. The library's long-lived
 * descriptors (the collector socket, the agent's eventfd, perf counters)
 * therefore live high up, just under min(RLIMIT_NOFILE, 1024), where
 * programs rarely look; and before the library closes or writes one it
 * checks that the number still names the object it opened, since a program
 * that closed it may have reused the number for a file of its own.
 */
#ifndef PYPROF_FDUTIL_H
#define PYPROF_FDUTIL_H

#include <sys/types.h>

struct fd_id {
	dev_t dev;
	ino_t ino;
};

/* Moves fd to a high number (close-on-exec) and returns the new number;
 * returns fd itself when no high number is free. */
int fd_park(int fd);

/* Opens path (open(2) flags, close-on-exec added) and moves the
 * descriptor high (fd_park). The descriptor, or -1 (errno set). */
int fd_open_parked(const char *path, int flags);

/* Records what fd names now. Returns 0, or -1 if fd is not open. */
int fd_id_get(int fd, struct fd_id *id);

/* 1 if fd is open and still names the object recorded in id. */
int fd_is(int fd, const struct fd_id *id);

/* Closes fd only if it still names id's object. */
void fd_close_own(int fd, const struct fd_id *id);

#endif
