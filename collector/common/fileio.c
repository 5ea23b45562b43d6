/*
 * fileio.c - atomic file writes and mkdir -p (see fileio.h).
 *
 * The temporary name is ".<name>.<pid>.<counter>.tmp" beside the target,
 * so rename(2) stays within one file system, and a reader listing the
 * directory for "*.pb.gz" never matches it. RENAME_NOREPLACE (Linux 3.15,
 * renameat2(2)) makes "pick a name that does not exist yet" race-free even
 * against other writers; file systems without it get link(2) + unlink(2),
 * which has the same effect.
 */
#include "common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/path.h"

/* Any thread may write (the loop, the push thread's spool): the counter
 * that keeps temporary names apart is atomic; relaxed, as only its
 * uniqueness matters. */
static _Atomic unsigned tmp_counter;
static gid_t share_gid = (gid_t)-1;

void file_set_group(gid_t gid)
{
	share_gid = gid;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Splits path into directory (for fsync) and base name. */
static void split_path(const char *path, char *dir, size_t dir_len,
		       const char **base)
{
	*base = path_split(path, dir, dir_len);
}

static int place_file(const char *tmp, const char *path, int how)
{
	if (how == FILEIO_REPLACE)
		return rename(tmp, path) < 0 ? -errno : 0;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* No RENAME_NOREPLACE here: link fails with EEXIST just the same. */
	if (link(tmp, path) < 0)
		return -errno;
	unlink(tmp);
	return 0;
}

int file_write_atomic(const char *path, const void *data, size_t len,
		      int how)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *base;
	int fd = -1, dfd = -1, err;
	int have_tmp = 0;
	gid_t gid = (how & (FILEIO_PRIVATE | FILEIO_PUBLIC)) ? (gid_t)-1
							     : share_gid;
	mode_t mode = (how & FILEIO_PUBLIC) ? 0644
		      : gid != (gid_t)-1    ? 0640
					    : 0600;

	how &= ~(FILEIO_PRIVATE | FILEIO_PUBLIC);

	split_path(path, dir, sizeof(dir), &base);
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.%d.%u.tmp", dir, base,
		     (int)getpid(),
		     atomic_fetch_add_explicit(&tmp_counter, 1u,
					       memory_order_relaxed)) >= (int)sizeof(tmp)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	have_tmp = 1;
	/* Exactly this mode, whatever the umask; the group first, so that
	 * the file is never readable by a group it was not meant for. */
	if ((gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) < 0) ||
	    fchmod(fd, mode) < 0) {
		err = -errno;
		goto out;
	}
	if ((err = write_all(fd, data, len)) < 0)
		goto out;
	if (fsync(fd) < 0) {
		err = -errno;
		goto out;
	}
	if (close(fd) < 0) {
		fd = -1;
		err = -errno;
		goto out;
	}
	fd = -1;
	if ((err = place_file(tmp, path, how)) < 0)
		goto out;
	have_tmp = 0;
	/* Make the rename itself durable. Failure here is not worth
	 * reporting: the file is complete and in place. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	err = 0;
out:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (have_tmp)
		unlink(tmp);
	return err;
}

int file_mkdirs(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	struct stat sb;

	if (len == 0 || len >= sizeof(buf))
		return len ? -ENAMETOOLONG : -ENOENT;
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = 0;
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char saved = *p;
		*p = 0;
		if (mkdir(buf, (mode_t)mode) == 0) {
			/* The umask may have taken bits away (or left group
			 * bits in): the mode asked for, exactly. */
			if (chmod(buf, (mode_t)mode) < 0)
				return -errno;
			/* A directory shared with a group is that group's. */
			if ((mode & 070) && share_gid != (gid_t)-1 &&
			    chown(buf, (uid_t)-1, share_gid) < 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		*p = saved;
		if (saved == 0)
			break;
	}
	if (stat(path, &sb) < 0)
		return -errno;
	return S_ISDIR(sb.st_mode) ? 0 : -ENOTDIR;
}

/* The suffixes are tried longest first: "x.pb.gz" gives "x", not "x.pb". */
void file_profile_base(const char *file, char *out, size_t cap)
{
	static const char *const ends[] = { ".pb.gz", ".gz", ".pb" };
	size_t len = strlen(file);
	snprintf(out, cap, "%s", file);
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t e = strlen(ends[i]);
		const char *slash = strrchr(file, '/');
		size_t name_at = slash ? (size_t)(slash - file) + 1 : 0;
		/* not the whole name: "x/.gz" keeps its base */
		if (len > name_at + e && strcmp(file + len - e, ends[i]) == 0 &&
		    len - e < cap) {
			out[len - e] = 0;
			break;
		}
	}
}
