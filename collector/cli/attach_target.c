/*
 * attach_target.c - the checks `pyprof attach` and `pyprof dump` make on
 * the target before touching it. Each refusal is one line that says what
 * to do instead. In order: the process exists; it is ours, or we have
 * CAP_SYS_PTRACE; Yama lets us at it; it sees the same files and pids as
 * we do (not in a container seen from the host); it runs CPython, whose
 * version and build are read from its files and memory (remote.h: the
 * _Py_DebugOffsets block), never by running anything of the target's:
 * 3.14+ and not free-threaded. For dump, a python of that version that
 * root (or we) owns and no one else can change, to run CPython's own
 * reader with.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/attach.h"
#include "common/log.h"
#include "remote/remote.h"
#include "common/usage.h"

#define CAP_SYS_PTRACE_BIT 19

int attach_parse_pid(const char *cmd, const char *arg, pid_t *pid)
{
	unsigned long v;

	if (!arg || cmd_parse_uint(arg, 1, 4194304, &v) != 0) {
		usage_error(cmd, "PID must be a process id (an integer from 1 "
				 "to 4194304), not '%s'",
			    arg ? arg : "");
		return -1;
	}
	*pid = (pid_t)v;
	return 0;
}

/* Reads a small file into buf (NUL-terminated). Its length, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, buf, n - 1);
	if (len < 0)
		len = -errno;
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	return len;
}

/* Whether our effective capabilities hold CAP_SYS_PTRACE. */
static int have_cap_ptrace(void)
{
	char buf[4096], *p;

	if (read_small("/proc/self/status", buf, sizeof buf) <= 0)
		return 0;
	p = strstr(buf, "\nCapEff:");
	if (!p)
		return 0;
	return (strtoull(p + 8, NULL, 16) >> CAP_SYS_PTRACE_BIT) & 1;
}

static const char *user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(buf, n, "%s", pw->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)uid);
	return buf;
}

/* Yama's ptrace_scope (-1 without Yama). PYPROF_TEST_YAMA_FILE stands in
 * for /proc/sys/kernel/yama/ptrace_scope in the tests (a kernel setting
 * they cannot change). */
static int yama_scope(void)
{
	const char *path = getenv("PYPROF_TEST_YAMA_FILE");
	char buf[32];

	if (read_small(path && *path ? path
				     : "/proc/sys/kernel/yama/ptrace_scope",
		       buf, sizeof buf) <= 0)
		return -1;
	return atoi(buf);
}

static int check_owner(const struct attach_target *t, int cap)
{
	char name[64];

	if (t->uid == geteuid() || cap)
		return 0;
	user_name(t->uid, name, sizeof name);
	log_error("process %d belongs to %s: attaching needs the same user or "
		  "CAP_SYS_PTRACE (run pyprof as %s%s)",
		  (int)t->pid, name, name, t->uid ? ", or as root" : "");
	return -1;
}

static int check_yama(const struct attach_target *t, int cap,
		      const char *lib)
{
	int scope = yama_scope();

	if (scope >= 3) {
		log_error("Yama ptrace_scope is 3: no process may be attached "
			  "to until reboot; start the program with "
			  "PYPROF_START=off LD_PRELOAD=%s and use `pyprof ctl`",
			  lib);
		return -1;
	}
	if (scope == 2 && !cap) {
		log_error("Yama ptrace_scope is 2: only root (CAP_SYS_PTRACE) "
			  "may attach to process %d; run pyprof as root",
			  (int)t->pid);
		return -1;
	}
	if (scope == 1 && !cap) {
		log_error("Yama ptrace_scope is 1: only a parent may attach to "
			  "process %d; run pyprof with CAP_SYS_PTRACE (sudo), "
			  "or allow it with `sudo sysctl "
			  "kernel.yama.ptrace_scope=0`",
			  (int)t->pid);
		return -1;
	}
	return 0;
}

/* 1 if /proc/PID/ns/NAME differs from ours, 0 if not or unknown. */
static int other_ns(pid_t pid, const char *name)
{
	char a[64], b[64], pa[64], pb[64];
	ssize_t na, nb;

	snprintf(pa, sizeof pa, "/proc/%d/ns/%s", (int)pid, name);
	snprintf(pb, sizeof pb, "/proc/self/ns/%s", name);
	na = readlink(pa, a, sizeof a - 1);
	nb = readlink(pb, b, sizeof b - 1);
	if (na <= 0 || nb <= 0)
		return 0;
	return na != nb || memcmp(a, b, (size_t)na) != 0;
}

static int check_namespaces(const struct attach_target *t, const char *lib)
{
	const char *which = other_ns(t->pid, "mnt")   ? "mount"
			    : other_ns(t->pid, "pid") ? "pid"
						      : NULL;

	if (!which)
		return 0;
	log_error("process %d is in another %s namespace (a container?): %s "
		  "is not reachable from inside it; run pyprof inside it "
		  "(kubectl exec, docker exec, or nsenter -t %d -m -p)",
		  (int)t->pid, which, lib, (int)t->pid);
	return -1;
}

/* Whether path (absolute, links resolved) and every directory above it
 * belong to root or to us and no one else may write them: a file the
 * target's user cannot have made or swapped. */
static int trusted_file(const char *path)
{
	char dir[CMD_PATH_MAX];
	struct stat st;
	char *slash;

	if (path[0] != '/' || snprintf(dir, sizeof dir, "%s", path) >=
				      (int)sizeof dir)
		return 0;
	if (stat(dir, &st) != 0 || !S_ISREG(st.st_mode) ||
	    !(st.st_mode & S_IXUSR))
		return 0;
	for (;;) {
		if (lstat(dir, &st) != 0 ||
		    (st.st_uid != 0 && st.st_uid != geteuid()) ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return 0;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	return lstat("/", &st) == 0 && st.st_uid == 0 &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* A python of the target's version that we trust, for `dump`'s reader
 * (CPython's own _remote_debugging): pythonX.Y on our PATH, else the
 * target's own program when it is such a file; never a file the target's
 * user could have made (trusted_file). 0, or -1 after saying why. */
static int find_trusted_python(struct attach_target *t)
{
	char name[48], cand[CMD_PATH_MAX], real[PATH_MAX];
	const char *dirs = getenv("PATH");

	snprintf(name, sizeof name, "python%d.%d", t->major, t->minor);
	for (const char *d = dirs ? dirs : "/usr/bin:/bin"; *d;) {
		size_t len = strcspn(d, ":");
		if (len && d[0] == '/' &&
		    snprintf(cand, sizeof cand, "%.*s/%s", (int)len, d, name) <
			    (int)sizeof cand &&
		    realpath(cand, real) && trusted_file(real)) {
			snprintf(t->python, sizeof t->python, "%s", real);
			return 0;
		}
		d += len + (d[len] == ':');
	}
	if (realpath(t->exe, real) && trusted_file(real)) {
		snprintf(t->python, sizeof t->python, "%s", real);
		return 0;
	}
	log_error("no %s to read process %d with that root (or you) owns "
		  "and no one else may change: pyprof does not run the "
		  "target's own %s; put a trusted %s on PATH",
		  name, (int)t->pid, t->exe, name);
	return -1;
}

/* The target's interpreter and its version, read from its files and
 * memory (remote.h): nothing of the target's runs. 0, or -1 after saying
 * why. */
static int find_version(struct attach_target *t, const char *lib, int dump)
{
	struct remote_py py;
	char why[256] = "";
	int rc = remote_py_find(t->pid, &py, why, sizeof why);

	if (rc == -ENOENT) {
		log_error("process %d (%s) is not a Python process: %s",
			  (int)t->pid, t->comm, why);
		return -1;
	}
	if (rc < 0) {
		log_error("cannot read process %d (%s): %s", (int)t->pid,
			  t->comm, why[0] ? why : strerror(-rc));
		return -1;
	}
	t->lib_loaded = py.lib_loaded;
	t->major = py.major;
	t->minor = py.minor;
	t->runtime = py.runtime;
	t->from_block = py.from_block;
	if (py.free_threaded) {
		log_error("process %d runs a free-threaded Python %d.%d, which "
			  "pyprof does not support yet",
			  (int)t->pid, t->major, t->minor);
		return -1;
	}
	if (t->major == 0) {
		log_error("cannot tell the Python version of process %d (%s, "
			  "in %s): it states none pyprof can read",
			  (int)t->pid, t->comm, py.file);
		return -1;
	}
	if (dump == ATTACH_DUMP_OUTSIDE)
		return 0; /* remote_dump reads every version */
	if (dump && (t->major < 3 ||
		     (t->major == 3 && t->minor < ATTACH_MIN_MINOR))) {
		log_error("process %d runs Python %d.%d: pyprof dump --native "
			  "reads stacks with the interpreter's own remote "
			  "unwinder, which came in 3.14 (`pyprof dump %d` "
			  "without --native reads its Python stacks)",
			  (int)t->pid, t->major, t->minor, (int)t->pid);
		return -1;
	}
	if (t->major < 3 || (t->major == 3 && t->minor < ATTACH_MIN_MINOR)) {
		log_error("process %d runs Python %d.%d, which has no safe point "
			  "to load a profiler into (PEP 768 came in 3.14): "
			  "`pyprof record --pid %d` profiles it from outside, "
			  "with nothing loaded; or start it with "
			  "PYPROF_START=off LD_PRELOAD=%s and use "
			  "`pyprof ctl start`",
			  (int)t->pid, t->major, t->minor, (int)t->pid, lib);
		return -1;
	}
	if (!t->from_block) {
		log_error("process %d runs Python %d.%d but states no "
			  "_Py_DebugOffsets pyprof can read",
			  (int)t->pid, t->major, t->minor);
		return -1;
	}
	return 0;
}

/* The process's real group (its /proc/PID/status Gid line), for a reader
 * run with the target's rights. */
static gid_t target_gid(pid_t pid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (read_small(path, buf, sizeof buf) <= 0 ||
	    !(p = strstr(buf, "\nGid:")))
		return (gid_t)-1;
	return (gid_t)strtoul(p + 5, NULL, 10);
}

int attach_target_check(pid_t pid, const char *lib, int dump,
			struct attach_target *t)
{
	char path[64];
	struct stat st;
	ssize_t n;
	int cap = have_cap_ptrace();

	memset(t, 0, sizeof *t);
	t->pid = pid;
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	if (stat(path, &st) != 0) {
		log_error("no process %d", (int)pid);
		return -1;
	}
	t->uid = st.st_uid;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	if (read_small(path, t->comm, sizeof t->comm) > 0)
		t->comm[strcspn(t->comm, "\n")] = '\0';
	cmd_printable_lines(t->comm); /* its name, chosen by its user */
	/* reading from outside needs no path into the target's namespaces:
	 * its files are read through /proc/PID/map_files */
	if (check_owner(t, cap) < 0 || check_yama(t, cap, lib) < 0 ||
	    (dump != ATTACH_DUMP_OUTSIDE && check_namespaces(t, lib) < 0))
		return -1;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	n = readlink(path, t->exe, sizeof t->exe - 1);
	if (n <= 0) {
		log_error("cannot read process %d's program (%s): %s", (int)pid,
			  path, strerror(n < 0 ? errno : ENOENT));
		return -1;
	}
	t->exe[n] = '\0';
	t->gid = target_gid(pid);
	if (find_version(t, lib, dump) < 0)
		return -1;
	/* only dump runs an interpreter (the reader); attach writes PEP
	 * 768's request itself */
	return dump == ATTACH_DUMP_NATIVE ? find_trusted_python(t) : 0;
}
