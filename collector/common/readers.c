/*
 * readers.c - each user's directory of profiles and its ACL (see
 * readers.h).
 *
 * The ACL is written as the kernel reads it (the xattr
 * system.posix_acl_access, and system.posix_acl_default on a directory:
 * linux/posix_acl_xattr.h), so no libacl is needed: a version word, then
 * (tag, permissions, id) entries sorted by tag and id, with a mask entry
 * once a named user is in it. The mask is the mode's group bits: a file
 * made 0600 and then fchmod'ed 0640 (fileio.c) has the mask r--, so the
 * user entry it inherited (r-x) gives it read, no more.
 */
#include "common/readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/grow.h"

#define ACL_VERSION 2u
#define TAG_USER_OBJ 0x01u
#define TAG_USER 0x02u
#define TAG_GROUP_OBJ 0x04u
#define TAG_MASK 0x10u
#define TAG_OTHER 0x20u
#define NO_ID 0xffffffffu

static gid_t readers_gid = (gid_t)-1;
static unsigned *done_uids; /* directories whose ACL this run has set */
static size_t n_done, cap_done;

static uint8_t *put_le(uint8_t *p, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

static uint8_t *put_entry(uint8_t *p, unsigned tag, unsigned perm,
			  uint32_t id)
{
	p = put_le(p, tag, 2);
	p = put_le(p, perm, 2);
	return put_le(p, id, 4);
}

/* An ACL of the mode bits of owner, group and others (rwx as 4, 2, 1),
 * with a named user entry for uid when uid_perm >= 0. Its length. */
static size_t make_acl(uint8_t *buf, unsigned owner, unsigned group,
		       unsigned other, long uid, int uid_perm)
{
	uint8_t *p = put_le(buf, ACL_VERSION, 4);
	p = put_entry(p, TAG_USER_OBJ, owner, NO_ID);
	if (uid_perm >= 0)
		p = put_entry(p, TAG_USER, (unsigned)uid_perm, (uint32_t)uid);
	p = put_entry(p, TAG_GROUP_OBJ, group, NO_ID);
	if (uid_perm >= 0)
		p = put_entry(p, TAG_MASK, group | (unsigned)uid_perm, NO_ID);
	p = put_entry(p, TAG_OTHER, other, NO_ID);
	return (size_t)(p - buf);
}

int readers_prepare(const char *dir, gid_t gid, char *err, size_t cap)
{
	uint8_t acl[64];
	size_t len;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = 0;

	readers_gid = gid;
	if (fd < 0) {
		rc = -errno;
		snprintf(err, cap, "--readers-group: cannot open the output "
				   "directory %s: %s",
			 dir, strerror(-rc));
		return rc;
	}
	if (fchown(fd, (uid_t)-1, gid) < 0 || fchmod(fd, 0751) < 0) {
		rc = -errno;
		snprintf(err, cap, "--readers-group: cannot make the output "
				   "directory %s 0751 of the readers' group: %s (it must "
				   "be this collector's user's)",
			 dir, strerror(-rc));
		goto out;
	}
	/* the ACL its mode says (an entry set by hand goes: who reads is
	 * the group and, below, each user its own directory) */
	len = make_acl(acl, 7, 5, 1, -1, -1);
	if (fsetxattr(fd, "system.posix_acl_access", acl, len, 0) < 0) {
		rc = -errno;
		snprintf(err, cap, "--readers-group: the file system of %s "
				   "takes no POSIX ACL (%s), which gives each user their "
				   "own profiles; choose an output directory on one that "
				   "does (ext4, xfs, btrfs, tmpfs)",
			 dir, strerror(-rc));
	}
out:
	close(fd);
	return rc;
}

static int is_done(unsigned uid)
{
	for (size_t i = 0; i < n_done; i++)
		if (done_uids[i] == uid)
			return 1;
	return 0;
}

/* uid's ACL on its directory fd, and the default its new files take. */
static int set_user_acl(int fd, unsigned uid)
{
	uint8_t acl[64];
	size_t len = make_acl(acl, 7, 5, 0, uid, 5);
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISDIR(sb.st_mode))
		return -ENOTDIR;
	if (sb.st_uid != geteuid())
		return -EPERM;
	if ((readers_gid != (gid_t)-1 && sb.st_gid != readers_gid &&
	     fchown(fd, (uid_t)-1, readers_gid) < 0) ||
	    fchmod(fd, 0750) < 0)
		return -errno;
	if (fsetxattr(fd, "system.posix_acl_access", acl, len, 0) < 0 ||
	    fsetxattr(fd, "system.posix_acl_default", acl, len, 0) < 0)
		return -errno;
	return 0;
}

int readers_user_dir(const char *dir, unsigned uid, char *out, size_t cap)
{
	int fd, rc;

	if ((size_t)snprintf(out, cap, "%s/uid-%u", dir, uid) >= cap)
		return -ENAMETOOLONG;
	/* 0700 until its ACL is set: never open to a group it is not for */
	if (mkdir(out, 0700) < 0) {
		if (errno != EEXIST)
			return -errno;
		if (is_done(uid))
			return 0;
	}
	fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -ENOTDIR : -errno;
	rc = set_user_acl(fd, uid);
	close(fd);
	if (rc < 0)
		return rc;
	if (!is_done(uid)) {
		if (grow_array(&done_uids, &cap_done, n_done + 1,
			       sizeof(*done_uids), 16) < 0)
			return 0; /* set again next time: no harm */
		done_uids[n_done++] = uid;
	}
	return 0;
}
