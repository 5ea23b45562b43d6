/*
 * noperf.c - runs a command with perf_event_open refused, as a
 * container's default seccomp profile refuses it (tests/e2e/bursts.bats:
 * the CPU sampler's fallback tested for real, not through a setting).
 *
 * Usage: noperf EACCES|ENOSYS|EPERM COMMAND [ARG...]
 *
 * Installs a seccomp filter (no_new_privs first, as an unprivileged
 * process must) that makes perf_event_open fail with the errno named and
 * allows every other system call, then execs COMMAND; the filter is
 * inherited by its children and threads. x86-64 only (other
 * architectures: exits 2, so the test says why).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: noperf EACCES|ENOSYS|EPERM COMMAND [ARG...]\n");
		return 2;
	}
	if (!strcmp(argv[1], "EACCES"))
		err = EACCES;
	else if (!strcmp(argv[1], "ENOSYS"))
		err = ENOSYS;
	else if (!strcmp(argv[1], "EPERM"))
		err = EPERM;
	else {
		fprintf(stderr, "noperf: errno must be EACCES, ENOSYS or EPERM\n");
		return 2;
	}
#if defined(__x86_64__)
	struct sock_filter prog[] = {
		/* the architecture first: another one's numbers differ */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K,
			 SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {(unsigned short)(sizeof prog / sizeof *prog),
				   prog};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
		perror("noperf: seccomp");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("noperf: exec");
	return 127;
#else
	fprintf(stderr, "noperf: x86-64 only\n");
	return 2;
#endif
}
