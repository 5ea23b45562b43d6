/*
 * fdutil.c - see fdutil.h. Constructor and agent thread only.
 */
#include "fdutil.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* How many numbers below the ceiling the library may take. */
#define FD_PARK_SLOTS 128

static int park_base(void)
{
	struct rlimit rl;
	rlim_t top = 1024;

	/* Never past 1024: select() cannot see higher numbers, and a huge
	 * limit (containers set 2^20) would make the kernel grow the
	 * program's descriptor table to that size for one socket. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	if (top <= FD_PARK_SLOTS + 3)
		return -1;
	return (int)(top - FD_PARK_SLOTS);
}

int fd_park(int fd)
{
	int base = park_base();

	if (fd < 0 || base < 0 || fd >= base)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

int fd_open_parked(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	return fd < 0 ? -1 : fd_park(fd);
}

int fd_id_get(int fd, struct fd_id *id)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

int fd_is(int fd, const struct fd_id *id)
{
	struct fd_id now;

	return fd_id_get(fd, &now) == 0 && now.dev == id->dev &&
	       now.ino == id->ino;
}

void fd_close_own(int fd, const struct fd_id *id)
{
	if (fd_is(fd, id))
		close(fd);
}
