/*
 * fileio.h - writing result files atomically (and the names of the files
 * written beside a profile).
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
 *
 * Who may read what is written. Profiles carry every sampled process's
 * command line (passwords in argv included), so files are created 0600
 * and directories 0700 whatever the umask, unless file_set_group names a
 * group to share them with: then 0640 and 0750, owned by that group.
 * The setting is process-wide: pyprof-collector sets it once from
 * --output-group before writing anything.
 */
#ifndef PYPROF_FILEIO_H
#define PYPROF_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

enum {
	FILEIO_REPLACE = 0,   /* an existing file at path is replaced */
	FILEIO_NOREPLACE = 1, /* fail with -EEXIST if path exists */
	FILEIO_PRIVATE = 2,   /* or'ed in: 0600 even with file_set_group
				 (a secret such as an access token) */
	FILEIO_PUBLIC = 4     /* or'ed in: 0644, no group (what every
				 local user may read: where a socket is) */
};

/* Files from now on are 0640 and new directories 0750, given to group
 * gid; (gid_t)-1 goes back to 0600 and 0700, no group change. Call it
 * before any write (not thread-safe). */
void file_set_group(gid_t gid);

/* Writes len bytes of data to path atomically, with mode 0600 (0640 and
 * the group of file_set_group, unless FILEIO_PRIVATE), whatever the
 * umask. how is FILEIO_REPLACE or FILEIO_NOREPLACE, with FILEIO_PRIVATE
 * or FILEIO_PUBLIC (0644) or'ed in or not. Returns 0 or a negative
 * errno (-EEXIST for NOREPLACE when path exists); on failure no temporary
 * file is left behind. */
int file_write_atomic(const char *path, const void *data, size_t len,
		      int how);

/* Creates directory path and any missing parents with exactly the given
 * mode (not subject to umask); existing directories are left as they
 * are. 0 or -errno. */
int file_mkdirs(const char *path, unsigned mode);

/* FILE without its .pb.gz (or .gz, .pb) ending, into out: the base of the
 * files written beside it (BASE.heap.pb.gz, the per-thread files of
 * --output FILE). Names only, no I/O; any thread. */
void file_profile_base(const char *file, char *out, size_t cap);

#endif /* PYPROF_FILEIO_H */
