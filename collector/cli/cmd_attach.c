/*
 * cmd_attach.c - `pyprof attach PID`: profile a running CPython process
 * (3.14+) for a window, without restarting it.
 *
 * The sequence: the checks on the target (attach_target.c); a private
 * collector as `record` runs one (record_procs.c), listening on the
 * target's own socket in the per-user directory (attach.h); the script
 * that loads the library into the target, started dormant
 * (attach_inject.c), unless a previous attach left it there; then, over
 * the control channel (`pyprof ctl`, docs/dormant.md): start for the
 * window, stop (the library goes back to dormant: timers disarmed, its
 * agent asleep), flush; the collector writes the profile, placed and
 * reported as `record` does (record_result.c).
 *
 * --collector SOCKET instead loads the library sampling, reporting to a
 * running collector, as if the process had been started with it.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "cli/record.h"
#include "common/errbuf.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/envcheck.h"
#include "pyprof/wire.h"

#define ATT "pyprof attach"	  /* for usage_error */
#define ATTACH_DEFAULT_TIMEOUT 10 /* s for the target to load the library */

enum {
	OPT_HZ = 256,
	OPT_MODE,
	OPT_MAX_DEPTH,
	OPT_FORMAT,
	OPT_PER_THREAD,
	OPT_NATIVE,
	OPT_HEAP,
	OPT_HEAP_RATE,
	OPT_WAITS,
	OPT_DURATION,
	OPT_TIMEOUT,
	OPT_COLLECTOR
};

/* the help text as it prints */
/* clang-format off */
void cmd_attach_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof attach PID [OPTIONS]\n"
"\n"
"Loads libpyprof.so into the running CPython process PID (3.14+, through\n"
"its remote-debugging hook, PEP 768), profiles it for a window, writes\n"
"the profile and leaves the process running as before, the library\n"
"dormant in it (a second attach reuses it).\n"
"\n"
"Options:\n"
"  -o, --output FILE   where to write the profile (default %s, or\n"
"                      pyprof.svg, .folded, .speedscope.json by format)\n"
"      --format F      pprof (default), svg, folded or speedscope\n"
"      --duration S    profile for S seconds (default: until Ctrl-C)\n"
"      --hz N          samples per second, 1 to %d (default %d)\n"
"      --mode MODE     cpu (default) or wall; a process keeps the mode of\n"
"                      its first attach\n"
"      --max-depth N   deepest stack kept, 1 to %d frames\n"
"      --native        native stacks too (CPU mode; needs libunwind8)\n"
"      --per-thread    also one profile per thread, beside the profile\n"
"      --heap          also a heap profile beside FILE: what Python\n"
"                      allocated from the attach on (not C's own malloc)\n"
"      --heap-rate N   --heap, bytes between samples (default %d)\n"
"      --waits[=RATE]  also block and mutex profiles beside FILE: where\n"
"                      threads waited for locks and the GIL, and whose\n"
"                      code held them (RATE as record's, default 10us)\n"
"      --collector S   instead, have the process report to the running\n"
"                      collector on socket S, sampling, as if started\n"
"                      with the library (then see `pyprof ctl`)\n"
"      --timeout S     how long the process may take to load the library\n"
"                      (it does so when it next runs Python code; default\n"
"                      %d)\n"
"  -v, --verbose       say what pyprof does\n"
"  -h, --help          this text\n"
"\n"
"Needs the same user as PID, or CAP_SYS_PTRACE. Exit status: 0 when the\n"
"profile was written, 1 when pyprof refused or failed (one line says\n"
"why), 2 on a usage error.\n",
		RECORD_DEFAULT_OUTPUT, PYPROF_MAX_HZ, PYPROF_DEFAULT_HZ,
		PYPROF_MAX_MAX_DEPTH, RECORD_DEFAULT_HEAP_RATE,
		ATTACH_DEFAULT_TIMEOUT);
}
/* clang-format on */

/* PYPROF_WAITS's value as the library will read it, checked by the
 * library's own rule before anything is loaded. 0, or -1 (said). */
static const char *waits_var(const char *name, void *arg)
{
	if (!strcmp(name, "PYPROF_WAITS"))
		return arg;
	if (!strcmp(name, "PYPROF_SOCKET"))
		return "/pyprof-attach.sock"; /* made later, always valid */
	return NULL;
}

/* --waits's value is a plain yes (the default rate) or no. */
static int waits_plain(const char *v)
{
	return !strcmp(v, "1") || !strcasecmp(v, "true") ||
	       !strcasecmp(v, "yes") || !strcasecmp(v, "on");
}

static int waits_off(const char *v)
{
	return !strcmp(v, "0") || !strcasecmp(v, "false") ||
	       !strcasecmp(v, "no") || !strcasecmp(v, "off");
}

static int check_waits(const char *value)
{
	char err[256];

	if (config_validate(waits_var, (void *)value, err, sizeof err) == 0)
		return 0;
	usage_error(ATT, "--waits: %s", err);
	return -1;
}

static int number(const char *name, const char *arg, unsigned long hi,
		  unsigned long *v)
{
	if (cmd_parse_uint(arg, 1, hi, v) == 0)
		return 0;
	usage_error(ATT, "%s accepts an integer from 1 to %lu, not '%s'", name,
		    hi, arg);
	return -1;
}

static int set_option(struct attach *a, int c, const char *arg)
{
	struct record *r = &a->r;
	unsigned long v;

	switch (c) {
	case 'o':
		r->output = arg;
		return 0;
	case 'v':
		r->verbose = 1;
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "pprof"))
			r->format = NULL;
		else if (!strcmp(arg, "svg") || !strcmp(arg, "folded") ||
			 !strcmp(arg, "speedscope"))
			r->format = arg;
		else
			return usage_error(ATT, "--format accepts pprof, svg, "
						"folded or speedscope, not '%s'",
					   arg),
			       -1;
		return 0;
	case OPT_MODE:
		if (strcmp(arg, "cpu") && strcmp(arg, "wall"))
			return usage_error(ATT, "--mode accepts cpu or wall, "
						"not '%s'",
					   arg),
			       -1;
		r->mode = arg;
		return 0;
	case OPT_HZ:
		if (number("--hz", arg, PYPROF_MAX_HZ, &v) < 0)
			return -1;
		snprintf(r->hz, sizeof r->hz, "%lu", v);
		return 0;
	case OPT_MAX_DEPTH:
		if (number("--max-depth", arg, PYPROF_MAX_MAX_DEPTH, &v) < 0)
			return -1;
		snprintf(r->max_depth, sizeof r->max_depth, "%lu", v);
		return 0;
	case OPT_DURATION:
		return number("--duration", arg, 86400, &a->duration);
	case OPT_TIMEOUT:
		return number("--timeout", arg, 3600, &a->timeout);
	case OPT_NATIVE:
		r->native = "1";
		return 0;
	case OPT_PER_THREAD:
		r->per_thread = 1;
		return 0;
	case OPT_COLLECTOR:
		if (arg[0] != '/')
			return usage_error(ATT, "--collector expects the "
						"collector's socket as an "
						"absolute path, not '%s'",
					   arg),
			       -1;
		a->collector = arg;
		return 0;
	case OPT_HEAP:
		if (!r->heap_rate[0])
			snprintf(r->heap_rate, sizeof r->heap_rate, "%u",
				 RECORD_DEFAULT_HEAP_RATE);
		return 0;
	case OPT_HEAP_RATE:
		if (number("--heap-rate", arg, 1ul << 30, &v) < 0)
			return -1;
		snprintf(r->heap_rate, sizeof r->heap_rate, "%lu", v);
		return 0;
	case OPT_WAITS:
		r->waits = arg ? arg : "1";
		return check_waits(r->waits);
	}
	return -1;
}

/* 0, 1 for --help, -1 on a usage error (said). */
static int parse(struct attach *a, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "native", no_argument, NULL, OPT_NATIVE },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "heap", no_argument, NULL, OPT_HEAP },
		{ "heap-rate", required_argument, NULL, OPT_HEAP_RATE },
		{ "waits", optional_argument, NULL, OPT_WAITS },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "collector", required_argument, NULL, OPT_COLLECTOR },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longs, NULL)) != -1) {
		if (c == 'h') {
			cmd_attach_usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':')
			return usage_error(ATT, "%s option '%s'",
					   c == ':' ? "missing value for"
						    : "unknown",
					   argv[optind - 1]),
			       -1;
		if ((rc = set_option(a, c, optarg)) < 0)
			return rc;
	}
	if (optind != argc - 1)
		return usage_error(ATT, "expects one PID"), -1;
	if (attach_parse_pid(ATT, argv[optind], &a->pid) < 0)
		return -1;
	if (a->collector && (a->duration || a->r.per_thread || a->r.format ||
			     a->r.output != NULL))
		return usage_error(ATT, "--collector: the collector writes the "
					"profiles (no -o, --format, "
					"--duration or --per-thread)"),
		       -1;
	if (a->r.per_thread && a->r.format)
		return usage_error(ATT, "--per-thread: pprof format only"), -1;
	if (a->r.heap_rate[0] && a->r.format)
		return usage_error(ATT, "--heap writes pprof files only: it "
					"cannot be combined with --format"),
		       -1;
	if (a->r.waits && a->r.format)
		return usage_error(ATT, "--waits writes pprof files only: it "
					"cannot be combined with --format"),
		       -1;
	return 0;
}

/* ---- talking to the collector: `pyprof ctl`, its output captured ------ */

/* The answer (arg: a struct ctl_answer) kept: the request names one
 * pid, and the collector answers for that process only. */
static void keep_answer(const struct ctl_answer *got, void *arg)
{
	*(struct ctl_answer *)arg = *got;
}

int attach_ctl(const struct attach *a, const char *sock,
	       struct ctl_request *q, struct ctl_answer *ans, char *err,
	       size_t n)
{
	struct ctl_answer mine = { .pid = (uint64_t)a->pid,
				   .status = WIRE_CTL_NO_REPLY };
	struct ctl_result res;

	static const char *const verbs[] = { "?", "start", "stop", "flush",
					     "status" };
	const char *verb = q->verb >= 1 && q->verb <= 4 ? verbs[q->verb] : "?";
	char line[1024];

	q->pid = (uint64_t)a->pid;
	if (ctl_send(sock, q, keep_answer, &mine, &res, err, n) < 0) {
		log_debug("ctl %s: 1 %s", verb, err);
		return -1;
	}
	/* as the tests read it: "ctl VERB: 0 pid=... status=ok ..." */
	ctl_answer_format(&mine, line, sizeof line);
	log_debug("ctl %s: %d %s", verb, ctl_answer_failed(&mine), line);
	if (ans)
		*ans = mine;
	if (!res.answers && res.note[0]) {
		snprintf(err, n, "%s", res.note);
		return -1;
	}
	if (ctl_answer_failed(&mine)) {
		snprintf(err, n, "it %s%s%s",
			 mine.status == WIRE_CTL_REFUSED ? "refused"
							 : "did not answer",
			 mine.msg[0] ? ": " : "", mine.msg);
		return -1;
	}
	return 0;
}

volatile sig_atomic_t attach_stop_sig;

static void on_stop(int sig)
{
	attach_stop_sig = sig;
}

void attach_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop; /* no SA_RESTART: sleeps end at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

double attach_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void attach_nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int attach_target_alive(const struct attach *a)
{
	return kill(a->pid, 0) == 0 || errno == EPERM;
}

/* How long the main thread alone has to take the request before it is
 * written into the other threads' states too: a main thread that runs
 * Python code takes it within a few ms, one that sleeps in steps within
 * its next step. */
#define ATTACH_SPREAD_AFTER_S 0.5

/* Until the target answers on sock (it loaded the library and
 * connected): 0; -ETIMEDOUT, -EINTR, -ESRCH (it ended). Where attach
 * made a request (the library was not loaded), it is written into the
 * other threads too after ATTACH_SPREAD_AFTER_S, and withdrawn from
 * every thread that did not take it when this returns (a->main_untaken
 * says whether the main thread was one). */
int attach_wait_connected(struct attach *a, const char *sock, double until)
{
	double spread_at = attach_now_s() + ATTACH_SPREAD_AFTER_S;
	int spread = 0, rc;
	char err[ERR_LEN];

	for (;;) {
		struct ctl_request q = { .verb = WIRE_VERB_STATUS, .mode = -1 };
		if (attach_ctl(a, sock, &q, &a->status, err, sizeof err) == 0) {
			rc = 0;
			break;
		}
		if (attach_stop_sig) {
			rc = -EINTR;
			break;
		}
		if (!attach_target_alive(a))
			return -ESRCH;
		if (attach_now_s() > until) {
			rc = -ETIMEDOUT;
			break;
		}
		if (!a->t.lib_loaded && !spread &&
		    attach_now_s() > spread_at)
			spread = attach_spread(&a->t, a->dir) > 0 ? 1 : -1;
		attach_nap_ms(100);
	}
	if (!a->t.lib_loaded)
		a->main_untaken = attach_script_done(&a->t, a->dir,
						     spread > 0);
	return rc;
}

/* The call a thread of pid is blocked in, by its system call's name
 * (/proc/PID/task/TID/syscall, readable where its memory is), into out;
 * "" when unknown or running. */
static void blocked_call(pid_t pid, pid_t tid, char *out, size_t n)
{
	static const struct {
		long nr;
		const char *name;
	} calls[] = {
		{ SYS_accept, "accept" },
		{ SYS_accept4, "accept4" },
		{ SYS_futex, "futex: a lock, a join or a condition" },
		{ SYS_clock_nanosleep, "clock_nanosleep" },
		{ SYS_ppoll, "ppoll" },
		{ SYS_pselect6, "pselect6" },
		{ SYS_epoll_pwait, "epoll_pwait" },
		{ SYS_read, "read" },
		{ SYS_recvfrom, "recvfrom" },
		{ SYS_recvmsg, "recvmsg" },
		{ SYS_connect, "connect" },
		{ SYS_wait4, "wait4" },
		{ SYS_waitid, "waitid" },
#ifdef SYS_nanosleep
		{ SYS_nanosleep, "nanosleep" },
#endif
#ifdef SYS_poll
		{ SYS_poll, "poll" },
#endif
#ifdef SYS_select
		{ SYS_select, "select" },
#endif
#ifdef SYS_epoll_wait
		{ SYS_epoll_wait, "epoll_wait" },
#endif
#ifdef SYS_pause
		{ SYS_pause, "pause" },
#endif
	};
	char path[64], buf[64];
	int fd;
	ssize_t len;
	long nr;

	out[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid,
		 (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = '\0';
	if (sscanf(buf, "%ld", &nr) != 1)
		return; /* "running" */
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
		if (calls[i].nr == nr) {
			snprintf(out, n, "%s", calls[i].name);
			return;
		}
	snprintf(out, n, "system call %ld", nr);
}

/* The settings the library starts with: "PYPROF_NAME=value" lines. */
void attach_make_config(const struct attach *a, const char *sock, int start,
			char *out, size_t n)
{
	const struct record *r = &a->r;
	size_t len = 0;

#define ADD(...)                                                    \
	do {                                                        \
		int w_ = snprintf(out + len, n - len, __VA_ARGS__); \
		if (w_ > 0 && (size_t)w_ < n - len)                 \
			len += (size_t)w_;                          \
	} while (0)
	out[0] = '\0';
	ADD("PYPROF_SOCKET=%s\n", sock);
	ADD("PYPROF_START=%s\n", start ? "on" : "off");
	if (r->hz[0])
		ADD("PYPROF_HZ=%s\n", r->hz);
	if (r->mode)
		ADD("PYPROF_MODE=%s\n", r->mode);
	if (r->max_depth[0])
		ADD("PYPROF_MAX_DEPTH=%s\n", r->max_depth);
	if (r->native)
		ADD("PYPROF_NATIVE=%s\n", r->native);
	if (r->heap_rate[0])
		ADD("PYPROF_HEAP_RATE=%s\n", r->heap_rate);
	if (r->waits)
		ADD("PYPROF_WAITS=%s\n", r->waits);
	/* the program's own children are not ours to profile */
	ADD("PYPROF_CHILDREN=0\n");
#undef ADD
}

/* Why the target did not come, after the collector stopped. */
void attach_say_not_connected(const struct attach *a, int why)
{
	char buf[RECORD_SUMMARY_MAX];
	struct cmd_summary sum;
	int fd = open(a->r.summary, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[len > 0 ? len : 0] = '\0';
	if (len > 0 && cmd_summary_parse(buf, &sum) == 0 && sum.n_reasons) {
		log_error("process %d is not profiled: %s", (int)a->pid,
			  sum.reasons[0].why);
		return;
	}
	if (why == -ESRCH)
		log_error("process %d ended before it loaded the library",
			  (int)a->pid);
	else if (why == -ETIMEDOUT && a->t.lib_loaded)
		log_error("process %d has pyprof loaded but did not connect "
			  "within %lu s: it reports to another collector "
			  "(`pyprof ctl status` there) or is not running",
			  (int)a->pid, a->timeout);
	else if (why == -ETIMEDOUT && a->main_untaken) {
		char call[64], in[96] = "";

		blocked_call(a->pid, a->pid, call, sizeof call);
		if (call[0])
			snprintf(in, sizeof in, " (%s)", call);
		log_error("process %d ran no Python code within %lu s: its "
			  "main thread is blocked in one call%s and no other "
			  "thread ran Python code; nothing was loaded, and "
			  "the request is withdrawn. `pyprof dump %d` reads "
			  "its stacks from outside; attach again once it runs "
			  "Python code, or start it with PYPROF_START=off "
			  "LD_PRELOAD=libpyprof.so",
			  (int)a->pid, a->timeout, in, (int)a->pid);
	} else if (why == -ETIMEDOUT)
		log_error("process %d ran the attach script but the library "
			  "did not connect within %lu s (a process that "
			  "crawls, or the library refused without a word): "
			  "try again with -v, or a longer --timeout",
			  (int)a->pid, a->timeout);
}

/*
 * A library an earlier attach loaded keeps what it was loaded with: the
 * mode (the collector keeps one sample type per process, and the wall
 * and CPU samplers are set up at load) and native stacks (libunwind and
 * every thread's preparation). A window that asks otherwise is refused
 * in one line, before it starts; one that does not say which mode hears
 * which it gets. 0, or -1 (said).
 */
static int check_loaded(const struct attach *a)
{
	const struct record *r = &a->r;
	const char *mode = ctl_mode_name(a->status.mode);

	if (!a->t.lib_loaded)
		return 0;
	if (r->mode && strcmp(r->mode, mode)) {
		log_error("process %d samples in %s mode, as its first attach "
			  "loaded pyprof (the library stays): --mode %s needs "
			  "a process not attached to before",
			  (int)a->pid, mode, r->mode);
		return -1;
	}
	if (r->native && !a->status.native) {
		log_error("process %d has pyprof loaded without native stacks "
			  "by an earlier attach (the library stays), and they "
			  "cannot be added later: --native needs a process not "
			  "attached to before",
			  (int)a->pid);
		return -1;
	}
	if (!r->mode && !strcmp(mode, "wall"))
		log_info("process %d samples in wall mode, as its first attach "
			 "loaded pyprof",
			 (int)a->pid);
	return 0;
}

/* The start request of a's options: --hz, --mode (the rest as given). */
void attach_start_request(const struct attach *a, struct ctl_request *q)
{
	const struct record *r = &a->r;
	unsigned long hz = r->hz[0] ? strtoul(r->hz, NULL, 10) : 0;

	memset(q, 0, sizeof *q);
	q->verb = WIRE_VERB_START;
	q->mode = -1;
	if (hz)
		q->period_ns = 1000000000ull / hz;
	if (r->mode)
		q->mode = strcmp(r->mode, "wall") ? WIRE_MODE_CPU
						  : WIRE_MODE_WALL;
}

/* Starts sampling for the window, waits for its end, stops. 0 or -1. */
static int run_window(struct attach *a)
{
	const struct record *r = &a->r;
	struct ctl_request q;
	struct ctl_answer ans;
	char err[ERR_LEN];
	double end;

	attach_start_request(a, &q);
	q.lease_ms = (uint64_t)a->duration * 1000u;
	q.native = r->native != NULL;
	if (r->heap_rate[0])
		q.heap_rate = strtoull(r->heap_rate, NULL, 10);
	/* a library loaded by an earlier attach took its waits setting
	 * then: the window asks for them (pyprof ctl start --waits) */
	if (r->waits && a->t.lib_loaded && !waits_off(r->waits)) {
		unsigned long long ns = PYPROF_DEFAULT_WAITS_NS;
		if (!waits_plain(r->waits) &&
		    config_waits_rate(r->waits, &ns) < 0)
			ns = PYPROF_DEFAULT_WAITS_NS;
		q.waits_ns = ns;
	}
	if (attach_ctl(a, r->sock, &q, &ans, err, sizeof err) != 0) {
		log_error("process %d did not start sampling: %s", (int)a->pid,
			  err);
		return -1;
	}
	if (ans.msg[0])
		log_warn("process %d: %s", (int)a->pid, ans.msg);
	if (a->duration)
		log_info("attached to process %d (%s): profiling for %lu s",
			 (int)a->pid, a->t.comm, a->duration);
	else
		log_info("attached to process %d (%s): profiling until "
			 "Ctrl-C",
			 (int)a->pid, a->t.comm);
	end = attach_now_s() + (double)a->duration;
	while (!attach_stop_sig && attach_target_alive(a) &&
	       (!a->duration || attach_now_s() < end))
		attach_nap_ms(50);
	if (attach_target_alive(a)) {
		struct ctl_request stop = { .verb = WIRE_VERB_STOP, .mode = -1 };
		struct ctl_request flush = { .verb = WIRE_VERB_FLUSH,
					     .mode = -1 };
		attach_ctl(a, r->sock, &stop, NULL, err, sizeof err);
		attach_ctl(a, r->sock, &flush, NULL, err, sizeof err);
	}
	return 0;
}

/* --collector: the library loaded sampling, reporting there. */
static int join_collector(struct attach *a)
{
	char config[2048];
	double until = attach_now_s() + (double)a->timeout;
	int rc;

	if (a->t.lib_loaded) {
		log_error("process %d has pyprof loaded already: it reports "
			  "to the collector it was attached with; see `pyprof "
			  "ctl status` there",
			  (int)a->pid);
		return 1;
	}
	if (cmd_make_tmpdir(a->r.tmpdir, sizeof a->r.tmpdir) != 0) {
		log_error("cannot create a temporary directory");
		return 1;
	}
	attach_make_config(a, a->collector, 1, config, sizeof config);
	if (attach_inject(&a->t, a->r.lib, config, a->dir, until) < 0)
		return 1;
	rc = attach_wait_connected(a, a->collector, until);
	if (rc < 0) {
		attach_say_not_connected(a, rc);
		return 1;
	}
	log_info("process %d (%s) now reports to %s", (int)a->pid, a->t.comm,
		 a->collector);
	return 0;
}

/* The private collector's files: socket in the per-user directory,
 * profile and summary in a temporary one. 0 or -1 (said). */
int attach_private_paths(struct attach *a)
{
	struct record *r = &a->r;
	char name[32];
	int rc = cmd_make_tmpdir(r->tmpdir, sizeof r->tmpdir);

	if (rc) {
		r->tmpdir[0] = '\0';
		log_error("cannot create a temporary directory: %s",
			  strerror(-rc));
		return -1;
	}
	snprintf(name, sizeof name, "%d.sock", (int)a->pid);
	if (cmd_join_path(r->sock, sizeof r->sock, a->dir, name) ||
	    cmd_join_path(r->summary, sizeof r->summary, r->tmpdir,
			  "summary") ||
	    cmd_join_path(r->profile, sizeof r->profile, r->tmpdir,
			  RECORD_TMP_PROFILE) ||
	    (r->format && !strcmp(r->format, "speedscope") &&
	     cmd_join_path(r->timeline, sizeof r->timeline, r->tmpdir,
			   "timeline"))) {
		log_error("temporary path too long: %s", r->tmpdir);
		return -1;
	}
	return 0;
}

/* The whole private run, the collector started. 0 or 1. */
static int attach_private(struct attach *a)
{
	struct record *r = &a->r;
	char config[2048];
	double until = attach_now_s() + (double)a->timeout;
	int rc, coll_status = -1;

	attach_signals_install();
	if (!a->t.lib_loaded) {
		attach_make_config(a, r->sock, 0, config, sizeof config);
		if (attach_inject(&a->t, r->lib, config, a->dir, until) < 0)
			return 1;
	}
	rc = attach_wait_connected(a, r->sock, until);
	if (rc == 0 && check_loaded(a) < 0) {
		record_collector_stop(r, &coll_status);
		return 1;
	}
	if (rc == 0)
		rc = run_window(a);
	record_collector_stop(r, &coll_status);
	if (rc < 0) {
		attach_say_not_connected(a, rc);
		return 1;
	}
	return record_report(r, coll_status) == 0 ? 0 : 1;
}

int cmd_attach(int argc, char **argv)
{
	static char default_output[] = RECORD_DEFAULT_OUTPUT;
	struct attach a;
	int rc, code;

	memset(&a, 0, sizeof a);
	a.r.coll_pid = -1;
	a.timeout = ATTACH_DEFAULT_TIMEOUT;
	rc = parse(&a, argc, argv);
	if (rc)
		return rc > 0 ? 0 : CMD_EXIT_USAGE;
	if (a.r.verbose)
		log_set_level(LOG_DEBUG);
	if (!a.r.output && !a.collector)
		a.r.output = !a.r.format		  ? default_output
			     : !strcmp(a.r.format, "svg") ? "pyprof.svg"
			     : !strcmp(a.r.format, "folded")
				     ? "pyprof.folded"
				     : "pyprof.speedscope.json";
	a.r.attached = a.pid;
	/* Whether the caller may attach comes first: a user refused the
	 * target hears that, not that pyprof's library is out of their
	 * reach (a build in root's 0700 directory). The library's path, for
	 * the refusals' advice, where it can be found. */
	char dir[CMD_PATH_MAX], lib[CMD_PATH_MAX] = "libpyprof.so";
	if (cmd_self_dir(dir, sizeof dir) == 0 &&
	    cmd_find_beside(dir, cmd_lib_rel, lib, sizeof lib) != 0)
		snprintf(lib, sizeof lib, "libpyprof.so");
	if (attach_target_check(a.pid, lib, 0, &a.t) < 0)
		return 1;
	if (record_find_files(&a.r) != 0)
		return 1;
	rc = attach_dir(a.dir, sizeof a.dir);
	if (rc < 0) {
		attach_dir_refused(a.dir, rc);
		return 1;
	}
	attach_sweep(a.dir);
	if (a.collector) {
		code = join_collector(&a);
	} else if (record_check_output(&a.r) != 0 || attach_private_paths(&a) != 0) {
		code = 1;
	} else if (record_collector_start(&a.r) != 0) {
		if (a.r.coll_pid > 0)
			kill(a.r.coll_pid, SIGKILL);
		log_error("could not start the collector for process %d (is "
			  "another pyprof attach on it running?)",
			  (int)a.pid);
		code = 1;
	} else {
		code = attach_private(&a);
	}
	if (a.r.coll_pid > 0) {
		int st;
		record_collector_stop(&a.r, &st);
	}
	if (a.r.tmpdir[0])
		cmd_remove_tmpdir(a.r.tmpdir);
	attach_sweep(a.dir); /* the target's, if it ended meanwhile */
	return code;
}
