/*
 * checked.h - opening a path that another local user may have reached
 * first: the push spool and its window files, the push password and
 * token files, the collector's socket directory, the directory `pyprof
 * ctl` connects in. One set of checks for all of them, as ssh checks its
 * keys, so that none is forgotten in one place:
 *
 * - never through a symbolic link at the name itself (O_NOFOLLOW);
 * - only the kind of file asked for (a regular file, or a directory):
 *   a FIFO or a device is refused, and opening never blocks (O_NONBLOCK
 *   while opening, cleared after the checks);
 * - owned by us (the effective uid), root, or one more trusted uid;
 * - not writable by group or others (a directory may be, with the
 *   sticky bit, when the rules allow it: /tmp); a secret not readable by
 *   others either.
 *
 * A refusal is one line in err, "refusing WHAT PATH: REASON; FIX", naming
 * the path, what is wrong and what to do; the caller logs it as it is.
 * The parent directories are not checked (the path is the user's to
 * choose), only the name itself.
 *
 * Any thread; blocking only as open(2) of a regular file or directory.
 */
#ifndef PYPROF_CHECKED_H
#define PYPROF_CHECKED_H

#include <stddef.h>

enum {
	CHECKED_FILE = 0,      /* a regular file */
	CHECKED_DIR = 1,       /* a directory */
	CHECKED_SECRET = 2,    /* or'ed in: no access at all for others */
	CHECKED_STICKY_OK = 4, /* or'ed in: a directory others may write
				   if it is sticky (only to find names in
				   it, as a socket's) */
	CHECKED_SEARCH_OK = 8  /* or'ed in: a directory we may search but
				   not read is opened O_PATH (enough to
				   check it, not to list or chmod it) */
};

struct checked_rules {
	const char *what; /* "spool directory", "--push-password-file" */
	const char *harm; /* what another owner could do; may be NULL */
	const char *fix;  /* the remedy, after "; " */
	long trust_uid;	  /* one more trusted owner, or -1 */
	unsigned how;	  /* CHECKED_FILE or CHECKED_DIR, | flags */
};

/*
 * Opens path with flags (O_RDONLY, O_RDWR...; O_NOFOLLOW, O_CLOEXEC and,
 * for a directory, O_DIRECTORY are added) and checks what it opened.
 * Returns the descriptor (blocking mode), -EPERM after a refusal with its
 * line in err, or another negative errno (err says what failed; -ENOENT
 * when nothing is there).
 */
int checked_open(const char *path, int flags, const struct checked_rules *r,
		 char *err, size_t cap);

/* The owner and mode checks alone, on a descriptor already open at path
 * (named in err). 0 or -EPERM (err filled), or the errno of fstat. */
int checked_fd(int fd, const char *path, const struct checked_rules *r,
	       char *err, size_t cap);

#endif /* PYPROF_CHECKED_H */
