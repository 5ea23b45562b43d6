/*
 * readfile.h - reading a file descriptor to its end into memory: the one
 * loop (EINTR retried, buffer doubled, a size limit) behind the views'
 * profile reader and `pyprof record`'s copy of the profile it places.
 *
 * Blocking; any thread, not signal handlers.
 */
#ifndef PYPROF_READFILE_H
#define PYPROF_READFILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reads fd to its end into *out (malloc'd, *len bytes), at most max bytes.
 * Returns 0, -E2BIG when fd holds more than max bytes, -ENOMEM, or the
 * negative errno of read(2); *out is untouched unless it returns 0.
 */
int read_fd_all(int fd, size_t max, uint8_t **out, size_t *len);

#endif /* PYPROF_READFILE_H */
