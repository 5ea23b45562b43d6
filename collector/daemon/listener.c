/*
 * listener.c - the listening Unix socket (see listener.h).
 *
 * Why each step:
 * - Probe before unlinking: a socket file that exists may belong to a live
 *   collector (refuse: two collectors on one path would split processes
 *   between them) or to a dead one (connect gives ECONNREFUSED: remove it).
 *   The probe connect is non-blocking, so a live collector with a full
 *   backlog (EAGAIN) also counts as live instead of hanging us.
 * - umask 0177 around bind(2): the socket file is created 0600 from the
 *   start, so there is no window in which another user could connect;
 *   chmod afterwards makes the mode exact whatever the umask was.
 * - The directory check stops a classic /tmp attack: another user
 *   pre-creating /tmp/pyprof-<uid> to read or replace our socket. The
 *   directory is checked and chmod-ed through a descriptor opened with
 *   O_NOFOLLOW (checked.h), so a symbolic link planted at its name is
 *   refused rather than followed (--allow-user would otherwise chmod the
 *   link's target). A directory others may write is refused even when it
 *   is ours: they could replace the socket in it (sticky, as /tmp, is
 *   fine).
 */
#include "daemon/listener.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/fileio.h"
#include "common/path.h"

struct listener {
	int fd;
	int spare; /* /dev/null, closed to accept a client when the process
		      has no descriptor left (listener_accept); -1 if none */
	dev_t dev;
	ino_t ino;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* What the socket directory must be (checked.h): ours or root's, no
 * symbolic link, not writable by others unless sticky (as /tmp, where
 * the socket itself could be; whoever owns it, ourselves included). */
static const struct checked_rules dir_rules = {
	.what = "socket directory",
	.harm = "another user could read or replace the socket",
	.fix = "remove it (or fix it), or choose another place: --socket "
	       "PATH (and PYPROF_SOCKET=PATH for the programs), or set "
	       "XDG_RUNTIME_DIR",
	.trust_uid = -1,
	.how = CHECKED_DIR | CHECKED_STICKY_OK | CHECKED_SEARCH_OK,
};

/* Makes sure the socket's directory exists and is safe; when shared,
 * that others can reach names in it. The directory is made with mkdir
 * (its missing parents too), then opened without following a symbolic
 * link, checked and chmod-ed through that descriptor: a link planted at
 * its name is refused, and its target is never touched. */
static int prepare_dir(const char *path, int shared, char *err)
{
	mode_t mode = shared ? 0711 : 0700;
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* path fits */
	struct stat sb;
	int fd = -1, created = 0, rc;

	path_split(path, dir, sizeof(dir));
	if (mkdir(dir, 0700) == 0) {
		created = 1;
	} else if (errno == ENOENT) {
		/* its parents first (followed, as in any path), then it;
		 * "/x" or "x" with no parent to make: the cwd went away */
		char parent[sizeof(dir)];
		const char *ps = strrchr(dir, '/');
		snprintf(parent, sizeof(parent), "%.*s",
			 ps ? (int)(ps - dir) : 0, dir);
		rc = ps && ps > dir ? file_mkdirs(parent, 0700) : -ENOENT;
		if (rc == 0 && mkdir(dir, 0700) == 0)
			created = 1;
		else if (rc == 0 && errno != EEXIST)
			rc = -errno;
		if (rc < 0) {
			snprintf(err, ERR_LEN,
				 "cannot create directory %s: %s", dir,
				 strerror(-rc));
			return rc;
		}
	} else if (errno != EEXIST) {
		rc = -errno;
		snprintf(err, ERR_LEN,
			 "cannot create directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if ((fd = checked_open(dir, O_RDONLY, &dir_rules, err,
			       ERR_LEN)) < 0)
		return fd;
	rc = 0;
	if (created) {
		/* Exactly 0700 (0711), whatever the umask. */
		if (fchmod(fd, mode) < 0)
			rc = -errno;
	} else if (shared && fstat(fd, &sb) == 0 && sb.st_uid == geteuid() &&
		   (sb.st_mode & 0011) != 0011) {
		if (fchmod(fd, (sb.st_mode & 07777) | 0011) < 0)
			rc = -errno;
	}
	if (rc < 0)
		snprintf(err, ERR_LEN, "chmod %s: %s", dir,
			 strerror(-rc));
	close(fd);
	return rc;
}

/* Returns 0 if nothing (or a dead socket, now removed) is at path,
 * -EADDRINUSE if a collector answers, or another error. */
static int clear_stale(const struct sockaddr_un *sa, char *err)
{
	const char *path = sa->sun_path;
	struct stat sb;
	int fd = -1, rc;

	if (lstat(path, &sb) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, ERR_LEN, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		snprintf(err, ERR_LEN,
			 "%s exists and is not a socket", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, ERR_LEN, "socket: %s", strerror(-rc));
		return rc;
	}
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 ||
	    errno == EAGAIN || errno == EINPROGRESS) {
		snprintf(err, ERR_LEN,
			 "a collector is already listening on %s", path);
		rc = -EADDRINUSE;
		goto out;
	}
	if (errno != ECONNREFUSED) {
		rc = -errno;
		snprintf(err, ERR_LEN, "cannot probe %s: %s", path,
			 strerror(-rc));
		goto out;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, ERR_LEN,
			 "cannot remove stale socket %s: %s", path,
			 strerror(-rc));
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

int listener_open(const char *path, int shared, struct listener **out,
		  char *err)
{
	mode_t sock_mode = shared ? 0666 : 0600;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct listener *l = NULL;
	struct stat sb;
	mode_t old_mask;
	int rc, bound;

	*out = NULL;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, ERR_LEN,
			 "socket path too long (at most %zu bytes): %s",
			 sizeof(sa.sun_path) - 1, path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	l->fd = -1;
	l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	strcpy(l->path, path);
	if ((rc = prepare_dir(path, shared, err)) < 0 ||
	    (rc = clear_stale(&sa, err)) < 0)
		goto out;
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0);
	if (l->fd < 0) {
		rc = -errno;
		snprintf(err, ERR_LEN, "socket: %s", strerror(-rc));
		goto out;
	}
	old_mask = umask(0177);
	bound = bind(l->fd, (struct sockaddr *)&sa, sizeof(sa));
	rc = -errno;
	umask(old_mask);
	if (bound < 0) {
		if (rc == -EADDRINUSE)
			snprintf(err, ERR_LEN,
				 "a collector is already listening on %s",
				 path);
		else
			snprintf(err, ERR_LEN, "bind %s: %s", path,
				 strerror(-rc));
		goto out;
	}
	if (chmod(path, sock_mode) < 0 || stat(path, &sb) < 0 ||
	    listen(l->fd, SOMAXCONN) < 0) {
		rc = -errno;
		snprintf(err, ERR_LEN, "%s: %s", path, strerror(-rc));
		unlink(path);
		goto out;
	}
	l->dev = sb.st_dev;
	l->ino = sb.st_ino;
	*out = l;
	l = NULL;
	rc = 0;
out:
	if (l) {
		if (l->fd >= 0)
			close(l->fd);
		if (l->spare >= 0)
			close(l->spare);
		free(l);
	}
	return rc;
}

void listener_close(struct listener *l)
{
	struct stat sb;
	if (!l)
		return;
	close(l->fd);
	if (l->spare >= 0)
		close(l->spare);
	/* Another collector may have replaced a socket we thought stale;
	 * only remove the file we created. */
	if (stat(l->path, &sb) == 0 && sb.st_dev == l->dev &&
	    sb.st_ino == l->ino)
		unlink(l->path);
	free(l);
}

int listener_fd(const struct listener *l)
{
	return l->fd;
}

const char *listener_path(const struct listener *l)
{
	return l->path;
}

int listener_accept(struct listener *l, int *fd, pid_t *pid, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int cfd;

	cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0 && (errno == EMFILE || errno == ENFILE) &&
	    l->spare >= 0) {
		/* No descriptor left: the client would wait in the backlog
		 * with nobody to serve it, and level-triggered epoll would
		 * report it again and again. Give up the spare for a
		 * moment to accept it and close it at once: it sees the
		 * end of the stream, as when no collector listens. */
		int e;
		close(l->spare);
		cfd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
		e = cfd >= 0 ? 1 : errno == EWOULDBLOCK ? -EAGAIN
							: -errno;
		if (cfd >= 0)
			close(cfd);
		l->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return e;
	}
	if (cfd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		int e = -errno;
		close(cfd);
		return e;
	}
	*fd = cfd;
	*pid = cred.pid;
	*uid = cred.uid;
	return 0;
}

int listener_peer_served(int fd, uid_t uid, const uid_t *uids, size_t n_uids,
			 const gid_t *gids, size_t n_gids)
{
	gid_t groups[NGROUPS_MAX + 1];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	size_t n = 0;

	if (uid == geteuid())
		return 1;
	for (size_t i = 0; i < n_uids; i++)
		if (uids[i] == uid)
			return 1;
	if (!n_gids)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		groups[n++] = cred.gid;
	len = (socklen_t)(sizeof(groups) - sizeof(gid_t));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups + n, &len) == 0)
		n += len / sizeof(gid_t);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n_gids; j++)
			if (groups[i] == gids[j])
				return 1;
	return 0;
}
