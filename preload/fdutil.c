/*
 * fdutil.c - see fdutil.h. Constructor and agent thread; fd_park_sigsafe
 * also from the pipe()/pipe2() wrapper (interpose/fds.c), which libunwind
 * may call inside the SIGPROF handler.
 */
#include "fdutil.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How many numbers below the ceiling the library may take: room for its
 * few descriptors and, with native stacks past the tick, one counter per
 * thread. Under a low limit, a quarter of it. */
#define FD_PARK_SLOTS 128

int fd_floor_sigsafe(void)
{
	struct rlimit rl;
	long top = 1024;

	/* Never past 1024: a descriptor at number N makes the kernel size
	 * the process's descriptor table for N, and every fork() copy it: at
	 * the 2^20 soft limit containers set, 8 MiB per fork for one
	 * socket. (And select() sees no number past 1023.) */
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) == 0 &&
	    rl.rlim_cur < (rlim_t)top)
		top = (long)rl.rlim_cur;
	long slots = top >= 4 * FD_PARK_SLOTS ? FD_PARK_SLOTS : top / 4;
	if (top - slots <= 3)
		return -1; /* no room above the standard descriptors */
	return (int)(top - slots);
}

int fd_park_sigsafe(int fd)
{
	int base = fd_floor_sigsafe();

	if (fd < 0 || base < 0 || fd >= base)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (hi < 0)
		return fd; /* every high number taken: keep the low one */
	close(fd);
	return hi;
}

int fd_park(int fd)
{
	return fd_park_sigsafe(fd);
}

int fd_pipe_high(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	fds[0] = fd_park(fds[0]);
	fds[1] = fd_park(fds[1]);
	return 0;
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
