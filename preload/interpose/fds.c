/*
 * interpose/fds.c - pipe() and pipe2() as the program sees them: the same
 * system call, except for the pipe libunwind (PYPROF_NATIVE) opens for
 * itself, which is parked high (fdutil.h) like every descriptor the
 * library keeps.
 *
 * libunwind checks addresses by writing a byte of them into a pipe of its
 * own, opened at its first unwind and opened again whenever a read from
 * it fails (the program closed it). Left alone it takes the lowest free
 * numbers, 3 and 4 in a fresh process, which a program that lists or
 * passes its descriptors sees (CPython's test_subprocess.test_pass_fds),
 * and after a daemon's closerange a file the program opens next could get
 * those numbers under libunwind. A call whose return address is in
 * libunwind's code has its two ends moved up; every other caller gets
 * exactly what the kernel gave.
 *
 * Contexts: any thread, signal handlers (libunwind reopens its pipe inside
 * the SIGPROF handler; the program's own handlers may call pipe), fork and
 * vfork children: bare system calls only (tools/check-sigsafe).
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fdutil.h"
#include "native/native.h"

static int pipe_common(int fds[2], int flags, const void *caller)
{
	int rc = (int)syscall(SYS_pipe2, fds, flags);
	if (rc == 0 && native_in_libunwind_sigsafe(caller)) {
		fds[0] = fd_park_sigsafe(fds[0]);
		fds[1] = fd_park_sigsafe(fds[1]);
	}
	return rc;
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
	return pipe_common(fds, flags, __builtin_return_address(0));
}

__attribute__((visibility("default"))) int pipe(int fds[2])
{
	return pipe_common(fds, 0, __builtin_return_address(0));
}
