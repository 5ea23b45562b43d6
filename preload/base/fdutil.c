/*
 * fdutil.c - see fdutil.h. Constructor and agent thread; fd_park_sigsafe
 * also from the pipe()/pipe2() wrapper (interpose/fds.c), which libunwind
 * may call inside the SIGPROF handler.
 */
#include "fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How many numbers the library may take: room for its few descriptors
 * and, with native stacks past the tick, one counter per thread. */
#define FD_PARK_SLOTS 128
/* The highest soft limit above which descriptors are parked: a
 * descriptor at number N makes the kernel size the process's descriptor
 * table for N (8 bytes a number, rounded up to a power of two), and every
 * fork() and vfork() copy it. */
#define FD_ABOVE_MAX 4096
/* Below the soft limit, never past this number: at the 2^20 soft limit
 * containers set, the table for one socket there would be 8 MiB, copied
 * at every fork (and select() sees no number past 1023). */
#define FD_BELOW_CEIL 1024

static int get_nofile(struct rlimit *rl)
{
	return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, rl);
}

/* The top FD_PARK_SLOTS numbers under min(soft limit, FD_BELOW_CEIL), a
 * quarter of a lower limit; -1 when that leaves no room. */
static int below_floor(const struct rlimit *rl, int known)
{
	long top = FD_BELOW_CEIL;
	if (known && rl->rlim_cur < (rlim_t)top)
		top = (long)rl->rlim_cur;
	long slots = top >= 4 * FD_PARK_SLOTS ? FD_PARK_SLOTS : top / 4;
	if (top - slots <= 3)
		return -1; /* no room above the standard descriptors */
	return (int)(top - slots);
}

/* Where descriptors go above the soft limit (park_above): just above it,
 * or the top FD_PARK_SLOTS of the first FD_BELOW_CEIL numbers if that is
 * higher (a program that lowered its limit to 29 still has its numbers up
 * to 40 and may check them, as CPython's
 * test_close_fds_when_max_fd_is_lowered does); 0 when the hard limit
 * leaves no room or the soft limit is too high for it. */
static long above_floor(const struct rlimit *rl)
{
	if (rl->rlim_cur >= rl->rlim_max || rl->rlim_cur > FD_ABOVE_MAX)
		return 0;
	long f = (long)rl->rlim_cur;
	long top = rl->rlim_max < FD_BELOW_CEIL ? (long)rl->rlim_max
						: FD_BELOW_CEIL;
	if (top - FD_PARK_SLOTS > f)
		f = top - FD_PARK_SLOTS;
	return f;
}

int fd_floor_sigsafe(void)
{
	struct rlimit rl;
	int known = get_nofile(&rl) == 0;
	if (known && above_floor(&rl))
		return (int)above_floor(&rl);
	return below_floor(&rl, known);
}

/* Above the soft limit, where no open() or scan of the program's reaches
 * (CPython's fd_status.py checks every number below it) and a daemon's
 * closerange(3, soft limit) does not close: possible when the hard limit
 * is higher, by raising the soft limit for the moment of one F_DUPFD (a
 * number at or past the soft limit is refused otherwise). Returns the new
 * number, or -1. */
static int park_above(int fd, const struct rlimit *rl, long floor)
{
	struct rlimit up = *rl;
	up.rlim_cur = (rlim_t)floor + FD_PARK_SLOTS < rl->rlim_max
			      ? (rlim_t)floor + FD_PARK_SLOTS
			      : rl->rlim_max;
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &up, NULL) != 0)
		return -1;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
	syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, rl, NULL);
	return hi;
}

int fd_park_sigsafe(int fd)
{
	struct rlimit rl;

	if (fd < 0)
		return fd;
	int known = get_nofile(&rl) == 0;
	int hi = -1;
	long floor = known ? above_floor(&rl) : 0;
	if (floor) {
		if (fd >= floor)
			return fd;
		hi = park_above(fd, &rl, floor);
	}
	if (hi < 0) {
		/* (or every number up there taken) */
		int base = below_floor(&rl, known);
		if (base < 0 || fd >= base)
			return fd;
		hi = fcntl(fd, F_DUPFD_CLOEXEC, base);
	}
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

int fd_table_private(void)
{
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
	/* closing every number of a table unshared this way copies none */
	return syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE) == 0
		       ? 0
		       : -1;
}

int fd_table_private_possible(void)
{
	/* first above last: EINVAL from a kernel that has the call (and its
	 * CLOSE_RANGE_UNSHARE, both Linux 5.9), ENOSYS or a seccomp
	 * profile's error from one that refuses it; nothing is closed */
	return syscall(SYS_close_range, 2U, 1U, CLOSE_RANGE_UNSHARE) < 0 &&
	       errno == EINVAL;
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
