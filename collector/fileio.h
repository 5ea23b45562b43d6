/*
 * fileio.h - writing result files atomically.
 *
 * A reader (go tool pprof, the pyprof command, a script polling the
 * output directory) must never see a half-written profile or summary: we
 * write a temporary file in the same directory, fsync it, rename it over
 * the final name, and fsync the directory. A crash leaves either the old
 * file or the new one, plus at worst a hidden ".*.tmp" file.
 *
 * Blocking I/O, called from the collector's loop thread: profiles are
 * written when a process ends and at shutdown, and are small next to the
 * time between them. (A later --period with many processes may move this
 * to a worker; the interface would not change.)
 */
#ifndef PYPROF_FILEIO_H
#define PYPROF_FILEIO_H

#include <stddef.h>

enum {
	FILEIO_REPLACE = 0,   /* an existing file at path is replaced */
	FILEIO_NOREPLACE = 1  /* fail with -EEXIST if path exists */
};

/* Writes len bytes of data to path atomically, with mode 0666 & ~umask.
 * how is FILEIO_REPLACE or FILEIO_NOREPLACE. Returns 0 or a negative
 * errno (-EEXIST for NOREPLACE when path exists); on failure no temporary
 * file is left behind. */
int file_write_atomic(const char *path, const void *data, size_t len,
		      int how);

/* Creates directory path and any missing parents with the given mode
 * (subject to umask); existing directories are fine. 0 or -errno. */
int file_mkdirs(const char *path, unsigned mode);

#endif /* PYPROF_FILEIO_H */
