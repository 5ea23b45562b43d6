/*
 * readers.h - who reads a shared collector's profiles (--readers-group):
 * each process's files in a directory of its user's, DIR/uid-<UID>/, that
 * this user may read and no other member may, and a readers' group that
 * reads every one of them (docs/security.md, "What each member of a
 * shared collector is promised").
 *
 * The collector runs as its own user (the package's pyprof) and cannot
 * give a file to another user; it gives each user's directory a POSIX
 * ACL instead (an entry for that uid, the access ACL and the default ACL
 * its new files inherit), which the owner of a file may set without any
 * privilege. The layout:
 *
 *   DIR            0751, the readers' group: its members list it; anyone
 *                  may pass through it to a directory named exactly, and
 *                  nothing else (every file below is closed to others)
 *   DIR/uid-UID/   0750, the readers' group, + user UID r-x (access and
 *                  default ACL): its files (made 0640 by fileio.c) are
 *                  readable by UID and the readers' group, nobody else
 *
 * What holds every process (merged profiles, --output, --summary) stays
 * in DIR itself, 0640 of the readers' group: members do not read it.
 *
 * Blocking file-system calls; the collector's loop thread (the cache of
 * prepared directories is not locked).
 */
#ifndef PYPROF_READERS_H
#define PYPROF_READERS_H

#include <stddef.h>
#include <sys/types.h>

/* At start: makes the existing directory dir 0751 of group gid and checks
 * that its file system takes POSIX ACLs (by setting dir's own, which
 * changes nothing). 0, or a negative errno with one line in err naming
 * dir, what failed and what to do. */
int readers_prepare(const char *dir, gid_t gid, char *err, size_t cap);

/* The directory of uid's files under dir, "dir/uid-UID", into out; made
 * (0750, the group fileio.c gives, uid's ACL) if missing, and its ACL set
 * again the first time in this run it is used. 0 or a negative errno
 * (-ENAMETOOLONG: out is too small; -ENOTDIR: something else is at the
 * name). */
int readers_user_dir(const char *dir, unsigned uid, char *out, size_t cap);

#endif /* PYPROF_READERS_H */
