/*
 * checked.c - opening paths another user may have reached first (see
 * checked.h).
 *
 * Why each step: O_NOFOLLOW makes a symbolic link at the name fail with
 * ELOOP instead of opening its target (/etc/shadow); O_NONBLOCK makes a
 * FIFO put in place of a file return at once instead of waiting for a
 * writer forever; the type, owner and mode are then read from the
 * descriptor itself (fstat), so nothing can be swapped between the check
 * and the use.
 */
#include "common/checked.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse(const char *path, const struct checked_rules *r,
		  char *err, size_t cap, const char *reason)
{
	snprintf(err, cap, "refusing %s %s: %s; %s", r->what, path, reason,
		 r->fix);
	return -EPERM;
}

static int trusted(const struct checked_rules *r, uid_t uid)
{
	return uid == geteuid() || uid == 0 ||
	       (r->trust_uid >= 0 && uid == (uid_t)r->trust_uid);
}

int checked_fd(int fd, const char *path, const struct checked_rules *r,
	       char *err, size_t cap)
{
	int dir = r->how & CHECKED_DIR;
	char reason[512];
	struct stat sb;
	mode_t bad;

	if (fstat(fd, &sb) < 0) {
		int e = errno;
		snprintf(err, cap, "%s %s: %s", r->what, path, strerror(e));
		return -e;
	}
	if (dir ? !S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode))
		return refuse(path, r, err, cap, dir ? "not a directory" : "not a regular file");
	if (!trusted(r, sb.st_uid)) {
		snprintf(reason, sizeof(reason), "owned by uid %u, not by us "
						 "(uid %u) or root%s%s",
			 (unsigned)sb.st_uid,
			 (unsigned)geteuid(), r->harm ? ": " : "",
			 r->harm ? r->harm : "");
		return refuse(path, r, err, cap, reason);
	}
	bad = S_IWGRP | S_IWOTH;
	if (r->how & CHECKED_SECRET)
		bad |= S_IRWXO;
	if (dir && (r->how & CHECKED_STICKY_OK) && (sb.st_mode & S_ISVTX))
		bad &= ~(mode_t)(S_IWGRP | S_IWOTH);
	if (sb.st_mode & bad) {
		snprintf(reason, sizeof(reason), "%s by others (mode %04o)",
			 (sb.st_mode & bad & (S_IWGRP | S_IWOTH)) ? "writable"
								  : "readable",
			 (unsigned)(sb.st_mode & 07777));
		return refuse(path, r, err, cap, reason);
	}
	return 0;
}

/* Why open failed, for err: a link and a wrong kind are refusals. */
static int open_failed(const char *path, const struct checked_rules *r,
		       int e, char *err, size_t cap)
{
	struct stat sb;

	if ((e == ELOOP || e == ENOTDIR) && lstat(path, &sb) == 0 &&
	    S_ISLNK(sb.st_mode))
		return refuse(path, r, err, cap, "it is a symbolic link");
	if (e == ENOTDIR || e == ENXIO)
		return refuse(path, r, err, cap, (r->how & CHECKED_DIR) ? "not a directory" : "not a regular file");
	snprintf(err, cap, "%s %s: %s", r->what, path, strerror(e));
	return -e;
}

int checked_open(const char *path, int flags, const struct checked_rules *r,
		 char *err, size_t cap)
{
	int extra = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
		    ((r->how & CHECKED_DIR) ? O_DIRECTORY : 0);
	int fd = open(path, flags | extra), rc;

	if (fd < 0 && errno == EACCES && (r->how & CHECKED_DIR) &&
	    (r->how & CHECKED_SEARCH_OK))
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return open_failed(path, r, errno, err, cap);
	if ((rc = checked_fd(fd, path, r, err, cap)) < 0) {
		close(fd);
		return rc;
	}
	if (!(flags & O_NONBLOCK) && !(r->how & CHECKED_DIR)) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	}
	return fd;
}
