/*
 * record_procs.c - the processes of `pyprof record`: the signals pyprof
 * ignores or forwards while COMMAND runs, the private collector (its own
 * process group, started and waited for, stopped with SIGTERM), and
 * COMMAND itself (LD_PRELOAD and PYPROF_* set, exec errors reported
 * through a close-on-exec pipe). cmd_record.c says in which order.
 *
 * Single-threaded, in the pyprof process and, between fork and exec, in
 * its children. The signal handler below only forwards signals (kill(2)
 * is async-signal-safe).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/record.h"
#include "common/log.h"

/* ---- signals ---------------------------------------------------------- */

/*
 * fwd_pid: written by the main flow once COMMAND is forked, read by the
 * handler. pending_sig: written by the handler when there is no COMMAND
 * yet, read by the main flow. Both are plain sig_atomic_t: one thread, and
 * the handler only ever interrupts it.
 */
static volatile sig_atomic_t fwd_pid;
static volatile sig_atomic_t pending_sig;

static struct sigaction saved_int, saved_quit, saved_term, saved_hup;

static void on_forward(int sig)
{
	int saved_errno = errno;

	if (fwd_pid > 0)
		kill((pid_t)fwd_pid, sig);
	else
		pending_sig = sig;
	errno = saved_errno;
}

void record_signals_install(void)
{
	struct sigaction ign, fwd;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	memset(&fwd, 0, sizeof(fwd));
	fwd.sa_handler = on_forward;
	sigemptyset(&fwd.sa_mask);
	fwd.sa_flags = 0; /* no SA_RESTART: poll() must see EINTR */

	sigaction(SIGINT, &ign, &saved_int);
	sigaction(SIGQUIT, &ign, &saved_quit);
	sigaction(SIGTERM, &fwd, &saved_term);
	sigaction(SIGHUP, &fwd, &saved_hup);
}

/* In a child before exec: what the caller of pyprof had, so that an
 * ignored SIGINT stays ignored (nohup, `cmd &`) and a default one is
 * default again (ignored signals survive exec, caught ones do not). */
static void signals_restore(void)
{
	sigaction(SIGINT, &saved_int, NULL);
	sigaction(SIGQUIT, &saved_quit, NULL);
	sigaction(SIGTERM, &saved_term, NULL);
	sigaction(SIGHUP, &saved_hup, NULL);
}

int record_pending_signal(void)
{
	return pending_sig;
}

/* ---- small helpers ---------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An exit status as a shell would report it: N, or 128+signal. */
static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return CMD_EXIT_FAIL;
}

const char *record_describe_status(int st, char *buf, size_t n)
{
	if (WIFEXITED(st))
		snprintf(buf, n, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, n, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, n, "stopped with wait status %#x", st);
	return buf;
}

/* Closes the ends of a pipe still open (-1: closed already). */
static void close_pipe(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* ---- the collector ---------------------------------------------------- */

static void collector_child(const struct record *r, int ready_w,
			    pid_t parent)
{
	char fdarg[16], period[16];
	char *args[20];
	int n = 0, fd;

	setpgid(0, 0);
	/* If pyprof dies, the collector writes what it has and exits. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(CMD_EXIT_FAIL);
	signals_restore();
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	fcntl(ready_w, F_SETFD, 0); /* the one descriptor it inherits */
	snprintf(fdarg, sizeof(fdarg), "%d", ready_w);

	args[n++] = (char *)r->collector;
	args[n++] = "--socket";
	args[n++] = (char *)r->sock;
	if (r->period_s) {
		snprintf(period, sizeof(period), "%d", r->period_s);
		args[n++] = "--output-dir";
		args[n++] = (char *)r->profile;
		args[n++] = "--period";
		args[n++] = period;
	} else {
		args[n++] = "--output";
		args[n++] = (char *)r->profile;
	}
	if (r->timeline[0]) {
		args[n++] = "--timeline";
		args[n++] = (char *)r->timeline;
	}
	if (r->per_thread)
		args[n++] = "--per-thread";
	args[n++] = "--summary";
	args[n++] = (char *)r->summary;
	args[n++] = "--ready-fd";
	args[n++] = fdarg;
	/* processes that end just after COMMAND (a forkserver, a resource
	 * tracker) are waited for, not taken for daemons */
	args[n++] = "--exit-grace";
	/* an attached target stays connected (its library left dormant for
	 * the next attach): its window was flushed by the stop request, and
	 * nothing more is coming that a grace would wait for */
	args[n++] = r->attached ? RECORD_ATTACH_GRACE_MS : RECORD_EXIT_GRACE_MS;
	if (!r->verbose) {
		args[n++] = "--log-level";
		args[n++] = "warn";
	}
	args[n] = NULL;
	execv(r->collector, args);
	log_error("cannot run %s: %s", r->collector, strerror(errno));
	_exit(CMD_EXIT_FAIL);
}

/* Waits for the collector's ready byte. Returns 0; -ECHILD if it exited
 * first (reaped, reason logged); -ETIMEDOUT; -EINTR if pyprof got a
 * terminating signal meanwhile. */
static int collector_wait_ready(struct record *r, int ready_r)
{
	long long deadline = now_ms() + RECORD_READY_TIMEOUT_MS;
	char buf[128];

	for (;;) {
		struct pollfd pfd = { .fd = ready_r, .events = POLLIN };
		long long left = deadline - now_ms();
		char byte;
		ssize_t got;
		int st, n;

		if (pending_sig)
			return -EINTR;
		if (left <= 0) {
			log_error("the collector did not start within %d s",
				  RECORD_READY_TIMEOUT_MS / 1000);
			return -ETIMEDOUT;
		}
		n = poll(&pfd, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			continue;
		got = read(ready_r, &byte, 1);
		if (got == 1)
			return 0;
		if (got < 0 && errno == EINTR)
			continue;
		/* EOF: every copy of the write end is closed, so the
		 * collector is gone (or closed it without writing). */
		if (waitpid(r->coll_pid, &st, 0) == r->coll_pid) {
			r->coll_pid = -1;
			log_error("the collector %s before it was ready",
				  record_describe_status(st, buf, sizeof(buf)));
		} else {
			log_error("the collector closed its ready pipe without "
				  "signalling ready");
		}
		return -ECHILD;
	}
}

int record_collector_start(struct record *r)
{
	int ready[2] = { -1, -1 };
	pid_t parent = getpid();
	int ret;

	if (pipe2(ready, O_CLOEXEC) != 0) {
		ret = -errno;
		log_error("pipe: %s", strerror(-ret));
		goto out;
	}
	r->coll_pid = fork();
	if (r->coll_pid < 0) {
		ret = -errno;
		r->coll_pid = -1;
		log_error("fork: %s", strerror(-ret));
		goto out;
	}
	if (r->coll_pid == 0) {
		close(ready[0]);
		collector_child(r, ready[1], parent);
	}
	/* Both sides call setpgid, so the group exists whichever runs
	 * first; EACCES once the child has exec'd is harmless. */
	setpgid(r->coll_pid, r->coll_pid);
	close(ready[1]);
	ready[1] = -1;
	ret = collector_wait_ready(r, ready[0]);
out:
	close_pipe(ready);
	return ret;
}

/* Stops the collector with SIGTERM (SIGKILL after a long grace period)
 * and reaps it. Returns its wait status in *status, or -1 in *status if it
 * had already been reaped. */
void record_collector_stop(struct record *r, int *status)
{
	long long deadline = now_ms() + RECORD_STOP_TIMEOUT_MS;
	int killed = 0;

	*status = -1;
	if (r->coll_pid <= 0)
		return;
	kill(r->coll_pid, SIGTERM);
	for (;;) {
		pid_t got = waitpid(r->coll_pid, status, WNOHANG);
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (got == r->coll_pid)
			break;
		if (got < 0 && errno != EINTR) {
			*status = -1;
			break;
		}
		if (!killed && now_ms() > deadline) {
			log_error("the collector did not exit within %d s of "
				  "SIGTERM; killing it",
				  RECORD_STOP_TIMEOUT_MS / 1000);
			kill(r->coll_pid, SIGKILL);
			killed = 1;
		}
		nanosleep(&ts, NULL);
	}
	r->coll_pid = -1;
}

/* ---- the command ------------------------------------------------------ */

/* The module for labels from code (r->pymod) on the command's
 * PYTHONPATH, after what the user put there. 0 or -1 (no memory). */
static int add_module_path(const struct record *r)
{
	const char *old = getenv("PYTHONPATH");
	char *path = NULL;
	if (!r->pymod[0])
		return 0;
	if (old && old[0]) {
		if (asprintf(&path, "%s:%s", old, r->pymod) < 0)
			return -1;
	} else if (!(path = strdup(r->pymod))) {
		return -1;
	}
	int rc = setenv("PYTHONPATH", path, 1);
	free(path);
	return rc;
}

static void command_child(const struct record *r, int err_w)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload = NULL;
	int e;

	signals_restore();
	/* Prepend: the user's own preloads still load, after ours. */
	if (old && old[0]) {
		if (asprintf(&preload, "%s %s", r->lib, old) < 0)
			preload = NULL;
	} else {
		preload = strdup(r->lib);
	}
	if (!preload || setenv("LD_PRELOAD", preload, 1) != 0 ||
	    setenv("PYPROF_SOCKET", r->sock, 1) != 0 ||
	    (r->hz[0] && setenv("PYPROF_HZ", r->hz, 1) != 0) ||
	    (r->mode && setenv("PYPROF_MODE", r->mode, 1) != 0) ||
	    (r->native && setenv("PYPROF_NATIVE", r->native, 1) != 0) ||
	    (r->heap_rate[0] &&
	     setenv("PYPROF_HEAP_RATE", r->heap_rate, 1) != 0) ||
	    (r->waits && setenv("PYPROF_WAITS", r->waits, 1) != 0) ||
	    (r->max_depth[0] &&
	     setenv("PYPROF_MAX_DEPTH", r->max_depth, 1) != 0) ||
	    add_module_path(r) != 0) {
		e = ENOMEM;
		goto fail;
	}
	execvp(r->command[0], r->command);
	e = errno;
fail:
	/* The parent reports it; the pipe is close-on-exec, so a successful
	 * exec shows up there as EOF. */
	while (write(err_w, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(e == ENOENT ? CMD_EXIT_NOTFOUND : CMD_EXIT_NOEXEC);
}

/* Runs COMMAND to completion. Returns its exit code (128+N for signal N),
 * or CMD_EXIT_NOEXEC / CMD_EXIT_NOTFOUND / CMD_EXIT_FAIL if it could not
 * be started (reason logged); *ran says whether it was exec'd. */
int record_command_run(struct record *r, int *ran)
{
	int errp[2] = { -1, -1 };
	struct timespec ts;
	pid_t pid;
	int ret, st, e = 0;
	ssize_t got;

	*ran = 0;
	if (pipe2(errp, O_CLOEXEC) != 0) {
		log_error("pipe: %s", strerror(errno));
		ret = CMD_EXIT_FAIL;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r->start_unix_ns = (unsigned long long)ts.tv_sec * 1000000000ull +
			   (unsigned long long)ts.tv_nsec;
	pid = fork();
	if (pid < 0) {
		log_error("fork: %s", strerror(errno));
		ret = CMD_EXIT_FAIL;
		goto out;
	}
	if (pid == 0) {
		close(errp[0]);
		command_child(r, errp[1]);
	}
	fwd_pid = pid;
	if (pending_sig) /* arrived between the last check and fwd_pid */
		kill(pid, pending_sig);
	close(errp[1]);
	errp[1] = -1;
	do
		got = read(errp[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			log_error("waitpid: %s", strerror(errno));
			ret = CMD_EXIT_FAIL;
			goto out;
		}
	}
	fwd_pid = 0;
	if (got == (ssize_t)sizeof(e)) {
		log_error("%s: %s", r->command[0],
			  e == ENOENT ? "command not found" : strerror(e));
		ret = e == ENOENT ? CMD_EXIT_NOTFOUND : CMD_EXIT_NOEXEC;
		goto out;
	}
	*ran = 1;
	ret = status_code(st);
out:
	close_pipe(errp);
	return ret;
}
