/*
 * attach_inject.c - getting the library into a running interpreter, and
 * running the target's own interpreter.
 *
 * PEP 768 (3.14+): a debugger writes the path of a script into the
 * target's main thread state and raises a flag its eval loop checks; the
 * interpreter runs the script at its next safe point (between bytecodes,
 * GIL held, no allocator or loader lock taken). remote_exec (remote.h)
 * does exactly that from this process, at the places the target's own
 * _Py_DebugOffsets gives, with process_vm_writev: no interpreter runs for
 * it, least of all the target's own program (which its user may have
 * made). The script loads libpyprof.so with ctypes and calls
 * pyprof_attach_start with the settings as text (preload/agent/attach.c).
 *
 * `pyprof dump` still runs an interpreter, CPython's own reader
 * (_remote_debugging): one that attach_target_check found trusted, run
 * isolated, from /, with the target's rights (attach_run_python_start).
 *
 * Single-threaded, in the pyprof process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "common/log.h"
#include "remote/remote.h"

/* Reads fd to its end into buf (size n, NUL-terminated, what does not fit
 * dropped). */
static void drain(int fd, char *buf, size_t n)
{
	size_t len = 0;
	char scratch[512];

	for (;;) {
		char *to = len + 1 < n ? buf + len : scratch;
		size_t room = len + 1 < n ? n - 1 - len : sizeof scratch;
		ssize_t r = read(fd, to, room);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (to == buf + len)
			len += (size_t)r;
	}
	if (n)
		buf[len] = '\0';
}

/* The last non-empty line of text, in place. */
static const char *last_line(char *text)
{
	size_t len = strlen(text);
	char *p;

	while (len && text[len - 1] == '\n')
		text[--len] = '\0';
	p = strrchr(text, '\n');
	return p ? p + 1 : text;
}

int attach_run_python_start(const struct attach_target *t, const char *code,
			    struct attach_run *run)
{
	int po[2], pe[2];
	pid_t child;

	if (pipe2(po, O_CLOEXEC) != 0)
		return -1;
	if (pipe2(pe, O_CLOEXEC) != 0) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	child = fork();
	if (child == 0) {
		/* a trusted interpreter (attach_target_check's), isolated
		 * (-I: no PYTHON* variable, no user site, neither the
		 * current directory nor the script's on sys.path), from /,
		 * with the target's rights when we are root: nothing another
		 * user wrote is imported, and what the reader parses of the
		 * target's memory can do no more than the target's user */
		static char *const env[] = { "PATH=/usr/bin:/bin",
					     "LC_ALL=C.UTF-8", NULL };
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		signal(SIGINT, SIG_IGN);
		if (chdir("/") != 0)
			_exit(126);
		if (geteuid() == 0 && t->uid != 0 &&
		    (setgroups(0, NULL) != 0 ||
		     (t->gid != (gid_t)-1 && setgid(t->gid) != 0) ||
		     setuid(t->uid) != 0)) {
			fprintf(stderr, "cannot take the rights of uid %u\n",
				(unsigned)t->uid);
			_exit(126);
		}
		execle(t->python, t->python, "-I", "-S", "-c", code,
		       (char *)NULL, env);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	if (child < 0) {
		close(po[0]);
		close(pe[0]);
		return -1;
	}
	run->child = child;
	run->out_fd = po[0];
	run->err_fd = pe[0];
	return 0;
}

int attach_run_python_finish(struct attach_run *run, char *out, size_t n,
			     char *err, size_t errn)
{
	char errbuf[8192];
	int st;

	out[0] = '\0';
	err[0] = '\0';
	/* stdout first: the snippets write little, and stderr only when
	 * they fail, so neither pipe fills while the other is read */
	drain(run->out_fd, out, n);
	drain(run->err_fd, errbuf, sizeof errbuf);
	close(run->out_fd);
	close(run->err_fd);
	while (waitpid(run->child, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	snprintf(err, errn, "%s", last_line(errbuf));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !err[0])
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int attach_run_python(const struct attach_target *t, const char *code,
		      char *out, size_t n, char *err, size_t errn)
{
	struct attach_run run;

	out[0] = '\0';
	err[0] = '\0';
	if (attach_run_python_start(t, code, &run) != 0)
		return -1;
	return attach_run_python_finish(&run, out, n, err, errn);
}

/* s as a Python expression for its bytes, whatever they hold. */
static void py_bytes(char *out, size_t n, const char *s)
{
	size_t len = 0;

	len += (size_t)snprintf(out, n, "bytes.fromhex('");
	for (; *s && len + 4 < n; s++)
		len += (size_t)snprintf(out + len, n - len, "%02x",
					(unsigned char)*s);
	snprintf(out + len, n - len, "')");
}

/* The script the target runs. It names nothing in the program's
 * namespaces but what it deletes again, raises nothing into it, and does
 * nothing once the deadline passed (the attach command gave up).
 *
 * It runs on a thread of the program's, which waits meanwhile: as little
 * as can be, and without letting the GIL go, which a loaded server's
 * other threads would take for up to a switch interval (5 ms) each time.
 * It imports _ctypes, not ctypes (ctypes imports sysconfig, struct and
 * threading too: 2.8 to 3.2 ms against 0.5 to 0.7 on the development
 * machine), and loads it straight from its file in the standard
 * library's lib-dynload, as the import system would (registered in
 * sys.modules): the path finder would stat the current directory and
 * each entry of sys.path before it, and every stat lets the GIL go; the
 * loader's dlopen keeps it. Where that file is not (another layout), a
 * plain import. It calls pyprof_attach_start without letting the GIL go
 * either (FUNCFLAG_PYTHONAPI, as ctypes.PyDLL, the fallback where
 * _ctypes lacks what is used); the library's start runs on a thread of
 * its own (preload/agent/attach.c). */
/* The script a target runs (PEP 768): loads the library and calls
 * pyprof_attach_start with the settings; too late (past the attach's
 * deadline), it removes itself if it is still this attach's. _ctypes
 * alone, loaded from the standard library's lib-dynload (not ctypes:
 * importing it took 3 ms of the target's main thread, 20-30 ms under
 * load); PyDLL's call keeps the GIL. Arguments: the token, the deadline,
 * the script's path, the token, the library's path, the settings. */
#define ATTACH_SCRIPT                                                       \
	"# pyprof attach: load libpyprof.so and start it (%s)\n"            \
	"def _pyprof_attach():\n"                                           \
	"    import time, os\n"                                             \
	"    if time.time() > %.3f:\n"                                      \
	"        # too late: the attach is over; this file goes, if\n"      \
	"        # it is still this script (no later attach wrote it)\n"    \
	"        path = %s\n"                                               \
	"        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)\n"            \
	"        try:\n"                                                    \
	"            os.lockf(fd, os.F_TLOCK, 0)\n"                         \
	"            if b'%s' in os.read(fd, 1 << 16):\n"                   \
	"                os.unlink(path)\n"                                 \
	"        finally:\n"                                                \
	"            os.close(fd)\n"                                        \
	"        return\n"                                                  \
	"    lib = os.fsdecode(%s)\n"                                       \
	"    import sys\n"                                                  \
	"    if not ('_ctypes' in sys.modules or\n"                         \
	"            '_ctypes' in sys.builtin_module_names):\n"             \
	"        try:\n"                                                    \
	"            import _imp, _frozen_importlib as b\n"                 \
	"            import _frozen_importlib_external as e\n"              \
	"            b._load(e.spec_from_file_location('_ctypes',\n"        \
	"                os.path.join(sys._stdlib_dir, 'lib-dynload',\n"    \
	"                    '_ctypes' + _imp.extension_suffixes()[0])))\n" \
	"        except Exception:\n"                                       \
	"            pass\n"                                                \
	"    try:\n"                                                        \
	"        import _ctypes\n"                                          \
	"        class start(_ctypes.CFuncPtr):\n"                          \
	"            _flags_ = (_ctypes.FUNCFLAG_CDECL |\n"                 \
	"                       _ctypes.FUNCFLAG_PYTHONAPI)\n"              \
	"        h = _ctypes.dlopen(lib, os.RTLD_NOW | os.RTLD_LOCAL)\n"    \
	"        start = start(_ctypes.dlsym(h, 'pyprof_attach_start'))\n"  \
	"    except (ImportError, AttributeError, TypeError):\n"            \
	"        import ctypes\n"                                           \
	"        start = ctypes.PyDLL(lib).pyprof_attach_start\n"           \
	"    start(%s)\n"                                                   \
	"try:\n"                                                            \
	"    _pyprof_attach()\n"                                            \
	"except Exception:\n"                                               \
	"    pass\n"                                                        \
	"finally:\n"                                                        \
	"    del _pyprof_attach\n"

static int write_script(const char *path, const char *lib, const char *config,
			double deadline_unix)
{
	char libx[2 * CMD_PATH_MAX + 32], cfgx[2 * 2048 + 32];
	char pathx[2 * CMD_PATH_MAX + 32], token[64];
	char tmp[CMD_PATH_MAX + 16];
	struct timespec now;
	FILE *f;
	int fd;

	/* renamed into place: a target that opens it meanwhile reads the
	 * old script or the new one, never half of one (a syntax error
	 * would be printed on its stderr) */
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;

	if (strlen(config) >= 2048)
		return -E2BIG;
	py_bytes(libx, sizeof libx, lib);
	py_bytes(cfgx, sizeof cfgx, config);
	py_bytes(pathx, sizeof pathx, path);
	/* this script's own mark: a late run removes the file only if it
	 * is still this script (attach_inject's lock) */
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(token, sizeof token, "pyprof-%d-%lld.%09ld", (int)getpid(),
		 (long long)now.tv_sec, now.tv_nsec);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fprintf(f, ATTACH_SCRIPT, token, deadline_unix, pathx, token, libx, cfgx);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* One line for what remote_exec said. */
static void say_failure(const struct attach_target *t, int rc, const char *err)
{
	if (rc == -ENOTSUP && strstr(err, "not enabled"))
		log_error("remote debugging is off in process %d "
			  "(PYTHON_DISABLE_REMOTE_DEBUG, -X "
			  "disable-remote-debug, or a build without it): "
			  "restart it without them, or with PYPROF_START=off "
			  "LD_PRELOAD=libpyprof.so and use `pyprof ctl`",
			  (int)t->pid);
	else if (rc == -EPERM || rc == -EACCES)
		log_error("not allowed to write into process %d (%s): run "
			  "pyprof as its user, or with CAP_SYS_PTRACE",
			  (int)t->pid, err);
	else
		log_error("cannot attach to process %d: %s", (int)t->pid,
			  err[0] ? err : strerror(-rc));
}

/* The lock (lockf) of the script file at path, if one is there: its
 * descriptor, -ENOENT when there is none, -EAGAIN when a late run of it
 * holds the lock for over a second (a process stopped there). */
static int lock_script(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -ENOENT;
	for (int i = 0; i < 100; i++) {
		if (lockf(fd, F_TLOCK, 0) == 0)
			return fd;
		poll(NULL, 0, 10);
	}
	close(fd);
	return -EAGAIN;
}

static int script_path(char *out, size_t n, const char *dir, pid_t pid)
{
	return snprintf(out, n, "%s/%d.py", dir, (int)pid) >= (int)n ||
			       strchr(out, '\'') || strchr(out, '\\')
		       ? -1
		       : 0;
}

static void target_py(const struct attach_target *t, struct remote_py *py)
{
	memset(py, 0, sizeof *py);
	py->pid = t->pid;
	py->runtime = t->runtime;
	py->major = t->major;
	py->minor = t->minor;
	py->from_block = t->from_block;
}

int attach_spread(const struct attach_target *t, const char *dir)
{
	char script[CMD_PATH_MAX], err[256] = "";
	struct remote_py py;
	int n;

	if (script_path(script, sizeof script, dir, t->pid) != 0)
		return -1;
	target_py(t, &py);
	n = remote_exec_spread(&py, script, err, sizeof err);
	if (n < 0)
		log_debug("no request written into process %d's other "
			  "threads: %s",
			  (int)t->pid, err);
	else
		log_debug("the main thread of process %d has not taken the "
			  "request: written into its %d other thread state(s)",
			  (int)t->pid, n);
	return n;
}

/* A thread that took its request just as it was withdrawn still opens the
 * file: it holds the GIL from its flag to its open, microseconds unless
 * it loses its CPU. The file stays this long after a withdrawal (a
 * missing file would be reported on the program's stderr). */
#define ATTACH_WITHDRAW_GRACE_MS 200

int attach_script_done(const struct attach_target *t, const char *dir,
		       int spread)
{
	char script[CMD_PATH_MAX];
	struct remote_py py;
	int main_pending = 0, n;

	if (script_path(script, sizeof script, dir, t->pid) != 0)
		return 0;
	target_py(t, &py);
	n = remote_exec_withdraw(&py, script, spread, &main_pending);
	if (n < 0) {
		/* left for the late run or the sweep: cannot tell whether a
		 * request still names the file */
		log_debug("cannot withdraw the requests in process %d (%s): "
			  "%s stays",
			  (int)t->pid, strerror(-n), script);
		return 0;
	}
	if (n > 0) {
		log_debug("withdrew %d request(s) no thread of process %d had "
			  "taken",
			  n, (int)t->pid);
		poll(NULL, 0, ATTACH_WITHDRAW_GRACE_MS);
	}
	unlink(script);
	return main_pending;
}

int attach_inject(const struct attach_target *t, const char *lib,
		  const char *config, const char *dir, double deadline_unix)
{
	char script[CMD_PATH_MAX], err[1024] = "";
	struct remote_py py;
	int rc;

	/* dir/PID.py, left in place while a request names it: the target
	 * opens the file when a thread holding the request next runs
	 * Python code, and a missing file would be reported on its stderr.
	 * When the attach is over, attach_script_done withdraws the requests
	 * no thread took, then removes it; a run that slipped past the
	 * withdrawal late does nothing but remove it (the deadline); the
	 * next attach replaces it, and attach_sweep removes those of
	 * processes that are gone. */
	if (script_path(script, sizeof script, dir, t->pid) != 0) {
		log_error("cannot use the temporary directory %s", dir);
		return -1;
	}
	/* A script left by an attach that timed out removes itself when the
	 * process runs it late, if it is still that script; under the lock
	 * of the file in place, taken here until our request is made, it
	 * cannot take ours for its own. */
	int lfd = lock_script(script);
	if (lfd == -EAGAIN) {
		log_error("process %d is running the script of an earlier "
			  "attach: try again",
			  (int)t->pid);
		return -1;
	}
	rc = write_script(script, lib, config, deadline_unix);
	if (rc < 0) {
		if (lfd >= 0)
			close(lfd);
		log_error("cannot write %s: %s", script, strerror(-rc));
		return -1;
	}
	target_py(t, &py);
	rc = remote_exec(&py, script, err, sizeof err);
	if (lfd >= 0)
		close(lfd);
	if (rc < 0) {
		say_failure(t, rc, err);
		return -1;
	}
	log_debug("remote exec of %s written into process %d", script,
		  (int)t->pid);
	return 0;
}

/* ---- the per-user directory ------------------------------------------- */

int attach_dir(char *out, size_t n)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;

	/* the socket's path must fit in sun_path (108) with "/PID.sock" */
	if (!tmp || tmp[0] != '/' || strlen(tmp) > 60)
		tmp = "/tmp";
	if (snprintf(out, n, "%s/pyprof-attach.%u", tmp,
		     (unsigned)geteuid()) >= (int)n)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(out, &st) != 0)
		return -errno;
	/* another user's directory, or a link, would let them swap the
	 * script the target runs */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077))
		return -EPERM;
	return 0;
}

void attach_dir_refused(const char *dir, int rc)
{
	struct stat st;

	if (rc == -EPERM && lstat(dir, &st) == 0 && st.st_uid != geteuid())
		log_error("cannot use %s: another user (uid %u) made it, where "
			  "attach keeps its files; remove it (as root), or set "
			  "TMPDIR to a directory of your own",
			  dir, (unsigned)st.st_uid);
	else if (rc == -EPERM)
		log_error("cannot use %s: others may read or write it, or it "
			  "is a link; remove it, or set TMPDIR to a directory "
			  "of your own",
			  dir);
	else
		log_error("cannot use %s: %s", dir, strerror(-rc));
}

void attach_sweep(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char proc[64], path[CMD_PATH_MAX];
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || (strcmp(end, ".py") && strcmp(end, ".sock") &&
				 strcmp(end, ".py.tmp")))
			continue;
		snprintf(proc, sizeof proc, "/proc/%ld", pid);
		if (access(proc, F_OK) == 0)
			continue;
		if (cmd_join_path(path, sizeof path, dir, e->d_name) == 0)
			unlink(path);
	}
	closedir(d);
}
