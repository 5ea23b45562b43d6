/*
 * cmd_record.c - `pyprof record`: run a command with libpyprof.so preloaded,
 * collect its samples in a private collector, write one profile.
 *
 * The sequence, and the process each step runs in:
 *
 *   pyprof                          collector (own pgrp)      COMMAND
 *   parse options, find files
 *   mkdtemp DIR (0700)
 *   fork+exec ────────────────────> listen on DIR/s.sock
 *   wait for the ready byte <────── write(ready_fd, 1 byte)
 *   fork+exec ────────────────────────────────────────────> LD_PRELOAD=lib
 *   wait (SIGINT/SIGQUIT ignored,                            streams samples
 *         SIGTERM/SIGHUP forwarded) <──────────────────────── exits
 *   SIGTERM ──────────────────────> writes OUTFILE, DIR/summary, exits
 *   print the summary line, rm DIR, exit with COMMAND's status
 *
 * Why the collector gets its own process group: the terminal's Ctrl-C goes
 * to the foreground group (pyprof and COMMAND) only, so COMMAND sees it as
 * it would without pyprof, while the collector lives on to write the
 * profile. PR_SET_PDEATHSIG stops the collector if pyprof itself is killed.
 *
 * Single-threaded, in the pyprof process. The signal handler below only
 * forwards signals (kill(2) is async-signal-safe).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "../../preload/config.h"

#define REC "pyprof record" /* for usage_error */

#define RECORD_DEFAULT_OUTPUT "pyprof.pb.gz"
/* what the collector writes in the temporary directory, and the stem of
 * the files it writes beside it */
#define RECORD_TMP_STEM "profile"
#define RECORD_TMP_PROFILE RECORD_TMP_STEM ".pb.gz"
#define RECORD_DEFAULT_HEAP_RATE 524288u /* Go's MemProfileRate */
#define RECORD_READY_TIMEOUT_MS 15000 /* collector start-up              */
#define RECORD_STOP_TIMEOUT_MS 60000  /* collector writing the profile   */
#define RECORD_SUMMARY_MAX 4096

/* Long-only options get values outside the char range. */
enum {
	OPT_HZ = 256,
	OPT_MODE,
	OPT_MAX_DEPTH,
	OPT_FORMAT,
	OPT_PER_THREAD,
	OPT_NATIVE,
	OPT_HEAP,
	OPT_HEAP_RATE
};

struct record {
	/* options */
	const char *output; /* as typed, for messages                   */
	char hz[24];        /* canonical decimal; "" = leave env alone   */
	char max_depth[24];
	const char *mode;   /* "cpu", "wall" or NULL                      */
	const char *native; /* PYPROF_NATIVE: "1", "all" or NULL          */
	char heap_rate[24]; /* PYPROF_HEAP_RATE (--heap); "" = env's      */
	int verbose;
	int per_thread;     /* --per-thread: the collector's, as is     */
	char **command;     /* NULL-terminated, points into argv         */
	const char *format; /* NULL: pprof; else what cmd_convert_file
			       makes of the profile: svg, folded...     */

	/* files */
	char output_abs[CMD_PATH_MAX];
	char lib[CMD_PATH_MAX];
	char collector[CMD_PATH_MAX];
	char tmpdir[CMD_PATH_MAX]; /* "" until created                   */
	char sock[CMD_PATH_MAX];
	char summary[CMD_PATH_MAX];
	char profile[CMD_PATH_MAX];  /* the collector's --output, in tmpdir:
					placed (or converted) at the end  */
	char timeline[CMD_PATH_MAX]; /* --timeline (speedscope), or ""     */

	/* processes */
	pid_t coll_pid; /* -1 when not running */
};

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

static void signals_install(void)
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

static const char *describe_status(int st, char *buf, size_t n)
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

static int join_path(char *out, size_t n, const char *dir, const char *name)
{
	int len = snprintf(out, n, "%s/%s", dir, name);

	return (len < 0 || (size_t)len >= n) ? -ENAMETOOLONG : 0;
}

/* ---- options ---------------------------------------------------------- */

void cmd_record_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof record [OPTIONS] [--] COMMAND [ARGS...]\n"
"\n"
"Runs COMMAND with libpyprof.so preloaded and a private collector, then\n"
"writes one pprof profile of every Python process it started.\n"
"\n"
"Options:\n"
"  -o, --output FILE   where to write the profile (default %s, or\n"
"                      pyprof.svg, .folded, .speedscope.json by format)\n"
"      --format F      pprof (default), svg (a flame graph), folded\n"
"                      (\"root;...;leaf N\" lines) or speedscope (JSON,\n"
"                      samples in time order per thread); pyprof writes\n"
"                      the pprof profile, then converts it\n"
"      --hz N          samples per second of CPU time, 1 to %d\n"
"                      (default: the library's, %d)\n"
"      --mode MODE     cpu (CPU time) or wall (wall-clock time)\n"
"      --max-depth N   deepest stack kept, 1 to %d frames (default %d)\n"
"      --native[=all]  native stacks too, merged with the Python ones\n"
"                      (C extensions, libraries, the interpreter below\n"
"                      the innermost Python frame); =all keeps every\n"
"                      interpreter frame; CPU mode; needs libunwind8\n"
"      --heap          also a heap profile, FILE without .pb.gz, then\n"
"                      .heap.pb.gz: sampled allocations (Python objects\n"
"                      and malloc), in use at exit and allocated; pprof\n"
"                      format only\n"
"      --heap-rate N   --heap, one sample per N bytes allocated on\n"
"                      average, 1 to 1073741824 (default 524288)\n"
"      --per-thread    also one profile per thread, beside the profile:\n"
"                      FILE without .pb.gz, then .tid<TID>.<name>.pb.gz\n"
"                      (.pid<PID>.tid<TID>... when several processes ran);\n"
"                      pprof format only\n"
"  -v, --verbose       say what pyprof does; collector logs at info level\n"
"  -h, --help          this text\n"
"\n"
"Without --hz, --mode, --max-depth or --heap, PYPROF_HZ, PYPROF_MODE,\n"
"PYPROF_MAX_DEPTH and PYPROF_HEAP_RATE pass through from the environment\n"
"unchanged.\n"
"\n"
"Exit status: COMMAND's (128+N if signal N killed it); 125 if pyprof\n"
"failed before running COMMAND, 126 if COMMAND could not be executed,\n"
"127 if it was not found. If COMMAND succeeded but the profile could not\n"
"be written, 125.\n",
		RECORD_DEFAULT_OUTPUT, PYPROF_MAX_HZ, PYPROF_DEFAULT_HZ,
		PYPROF_MAX_MAX_DEPTH, PYPROF_DEFAULT_MAX_DEPTH);
}

/* The options that take a value: their names and what they accept, for
 * error lines; the numbers among them go from 1 to hi and are kept in
 * decimal in the char[24] at offset dest of struct record. */
static const struct value_opt {
	int opt;
	const char *name;
	const char *accepts; /* numbers: what the integer counts, or "" */
	unsigned long hi;    /* 0: not a number */
	size_t dest;
} value_opts[] = {
	{ 'o', "-o/--output", "a file name", 0, 0 },
	{ OPT_HZ, "--hz", "", PYPROF_MAX_HZ, offsetof(struct record, hz) },
	{ OPT_MODE, "--mode", "cpu or wall", 0, 0 },
	{ OPT_MAX_DEPTH, "--max-depth", "", PYPROF_MAX_MAX_DEPTH,
	  offsetof(struct record, max_depth) },
	{ OPT_FORMAT, "--format", "pprof, svg, folded or speedscope", 0, 0 },
	{ OPT_HEAP_RATE, "--heap-rate", "bytes between samples, ", 1ul << 30,
	  offsetof(struct record, heap_rate) },
};

static const struct value_opt *value_opt(int opt)
{
	for (size_t i = 0; i < sizeof(value_opts) / sizeof(value_opts[0]); i++)
		if (value_opts[i].opt == opt)
			return &value_opts[i];
	return NULL;
}

/* What v accepts, in words, into buf. */
static const char *accepts(const struct value_opt *v, char *buf, size_t n)
{
	if (!v->hi)
		return v->accepts;
	snprintf(buf, n, "%san integer from 1 to %lu", v->accepts, v->hi);
	return buf;
}

/* Sets a numeric option from arg; 0, or -EINVAL (logged). */
static int set_number(struct record *r, const struct value_opt *v,
		      const char *arg)
{
	char buf[96];
	unsigned long n;

	if (cmd_parse_uint(arg, 1, v->hi, &n) != 0) {
		usage_error(REC, "%s accepts %s, not '%s'", v->name,
			    accepts(v, buf, sizeof(buf)), arg);
		return -EINVAL;
	}
	snprintf((char *)r + v->dest, sizeof(r->hz), "%lu", n);
	return 0;
}

/* Sets the option getopt_long returned as c; 0, or -EINVAL (logged). */
static int set_option(struct record *r, int c, const char *arg)
{
	const struct value_opt *v = value_opt(c);

	if (v && v->hi)
		return set_number(r, v, arg);
	switch (c) {
	case 'o':
		if (!arg[0]) {
			usage_error(REC, "-o/--output accepts a file name, "
				    "not an empty string");
			return -EINVAL;
		}
		r->output = arg;
		return 0;
	case OPT_MODE:
		if (strcmp(arg, "cpu") && strcmp(arg, "wall"))
			break;
		r->mode = arg;
		return 0;
	case OPT_FORMAT:
		if (strcmp(arg, "pprof") && !cmd_format_ok(arg))
			break;
		r->format = strcmp(arg, "pprof") ? arg : NULL;
		return 0;
	case OPT_NATIVE:
		if (arg && strcmp(arg, "all")) {
			usage_error(REC, "--native accepts =all or nothing, "
				    "not '=%s'", arg);
			return -EINVAL;
		}
		r->native = arg ? "all" : "1";
		return 0;
	case OPT_PER_THREAD:
		r->per_thread = 1;
		return 0;
	case OPT_HEAP:
		if (!r->heap_rate[0])
			snprintf(r->heap_rate, sizeof(r->heap_rate), "%u",
				 RECORD_DEFAULT_HEAP_RATE);
		return 0;
	default: /* 'v' */
		r->verbose = 1;
		return 0;
	}
	usage_error(REC, "%s accepts %s, not '%s'", v->name, v->accepts, arg);
	return -EINVAL;
}

/* Says what was wrong with the option getopt_long answered ':' or '?'
 * to; returns -EINVAL. */
static int bad_option(int c, char **argv)
{
	const struct value_opt *v = value_opt(optopt);
	const char *arg = argv[optind - 1];
	char buf[96];

	if (c == ':') {
		usage_error(REC, "%s needs a value: %s",
			    v ? v->name : "option",
			    v ? accepts(v, buf, sizeof(buf)) : "a value");
	} else if (arg && arg[0] == '-' && arg[1] == '-') {
		const char *eq = strchr(arg, '=');
		int len = eq ? (int)(eq - arg) : (int)strlen(arg);

		/* getopt says '?' for --verbose=1 too. */
		if (eq && (optopt == 'v' || optopt == 'h'))
			usage_error(REC, "%.*s takes no value", len, arg);
		else
			usage_error(REC, "unknown option '%.*s'", len, arg);
	} else {
		usage_error(REC, "unknown option '-%c'", optopt);
	}
	return -EINVAL;
}

/* Returns 0, 1 if --help was given (usage printed), or -EINVAL (one error
 * line printed). */
static int parse_options(struct record *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
		{ "native", optional_argument, NULL, OPT_NATIVE },
		{ "heap", no_argument, NULL, OPT_HEAP },
		{ "heap-rate", required_argument, NULL, OPT_HEAP_RATE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	optind = 0; /* GNU: full re-initialisation */
	/* '+': stop at the first non-option, which starts COMMAND. */
	while ((c = getopt_long(argc, argv, "+:o:vh", longopts, NULL)) != -1) {
		if (c == 'h') {
			cmd_record_usage(stdout);
			return 1;
		}
		if (c == ':' || c == '?')
			return bad_option(c, argv);
		if (set_option(r, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind >= argc) {
		usage_error(REC, "no command given: pyprof record [OPTIONS] "
			    "-- COMMAND [ARGS...]");
		return -EINVAL;
	}
	if (r->heap_rate[0] && r->format) {
		usage_error(REC, "--heap writes pprof files only: it cannot "
			    "go with --format %s", r->format);
		return -EINVAL;
	}
	if (r->per_thread && r->format) {
		usage_error(REC, "--per-thread writes pprof files beside the "
			    "pprof profile: not with --format %s", r->format);
		return -EINVAL;
	}
	r->command = argv + optind;
	return 0;
}

/* What the command will see of a PYPROF_* variable: record's option if
 * one was given, else the environment's; the socket is record's own. */
static const char *passed_var(const char *name, void *arg)
{
	const struct record *r = arg;

	if (!strcmp(name, "PYPROF_SOCKET"))
		return "/pyprof-record.sock"; /* made later, always valid */
	if (!strcmp(name, "PYPROF_HZ") && r->hz[0])
		return r->hz;
	if (!strcmp(name, "PYPROF_MODE") && r->mode)
		return r->mode;
	if (!strcmp(name, "PYPROF_NATIVE") && r->native)
		return r->native;
	if (!strcmp(name, "PYPROF_HEAP_RATE") && r->heap_rate[0])
		return r->heap_rate;
	if (!strcmp(name, "PYPROF_MAX_DEPTH") && r->max_depth[0])
		return r->max_depth;
	return getenv(name);
}

/* The PYPROF_* variables the command will get, checked with the
 * library's own rules before anything starts: a bad one would leave
 * every process unprofiled, each printing why. 0 or -EINVAL (logged). */
static int check_env(const struct record *r)
{
	struct config c;
	char err[256];

	if (config_check(&c, passed_var, (void *)r, err, sizeof(err)) == 0)
		return 0;
	log_error("%s (nothing was started)", err);
	return -EINVAL;
}

/* Makes output_abs and checks that its directory can take a new file (by
 * making one), so that a typo is reported before the command runs, not
 * after. */
static int check_output(struct record *r)
{
	char dir[CMD_PATH_MAX];
	struct stat st;
	char *slash;
	int len;

	if (r->output[0] == '/') {
		len = snprintf(r->output_abs, sizeof(r->output_abs), "%s",
			       r->output);
	} else {
		char cwd[CMD_PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			log_error("cannot find the current directory: %s",
				  strerror(errno));
			return -errno;
		}
		len = snprintf(r->output_abs, sizeof(r->output_abs), "%s/%s",
			       cwd, r->output);
	}
	if (len < 0 || (size_t)len >= sizeof(r->output_abs)) {
		log_error("-o/--output: path too long");
		return -ENAMETOOLONG;
	}
	if (stat(r->output_abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		log_error("-o/--output: %s is a directory", r->output);
		return -EISDIR;
	}
	memcpy(dir, r->output_abs, (size_t)len + 1);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	/* A file made and removed says more than access(): /proc, a
	 * read-only mount, a full inode table, a plain file as directory */
	char probe[CMD_PATH_MAX + 32];
	int fd = -1;
	len = snprintf(probe, sizeof(probe), "%s/.pyprof-probe.XXXXXX", dir);
	if (len > 0 && (size_t)len < sizeof(probe))
		fd = mkstemp(probe);
	else
		errno = ENAMETOOLONG;
	if (fd < 0) {
		int e = errno;

		log_error("cannot write %s: %s", r->output, strerror(e));
		return -e;
	}
	close(fd);
	unlink(probe);
	return 0;
}

/* Finds libpyprof.so and pyprof-collector beside our own executable. */
static int find_files(struct record *r)
{
	static const char *const lib_rel[] = {
		"libpyprof.so",        /* build tree: build/ */
		"../lib/libpyprof.so", /* installed: PREFIX/bin, PREFIX/lib */
		NULL
	};
	static const char *const coll_rel[] = { "pyprof-collector", NULL };
	char dir[CMD_PATH_MAX];
	int ret;

	ret = cmd_self_dir(dir, sizeof(dir));
	if (ret) {
		log_error("cannot find pyprof's own directory: %s",
			  strerror(-ret));
		return ret;
	}
	ret = cmd_find_beside(dir, lib_rel, r->lib, sizeof(r->lib));
	if (ret) {
		log_error("libpyprof.so not found in %s or %s/../lib", dir,
			  dir);
		return ret;
	}
	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(r->lib, " :")) {
		log_error("cannot preload %s: LD_PRELOAD cannot carry a path "
			  "with a space or colon", r->lib);
		return -EINVAL;
	}
	ret = cmd_find_beside(dir, coll_rel, r->collector,
			      sizeof(r->collector));
	if (ret) {
		log_error("pyprof-collector not found in %s", dir);
		return ret;
	}
	log_debug("library %s", r->lib);
	log_debug("collector %s", r->collector);
	return 0;
}

/* ---- the collector ---------------------------------------------------- */

static void collector_child(const struct record *r, int ready_w,
			    pid_t parent)
{
	char fdarg[16];
	char *args[16];
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
	args[n++] = "--output";
	args[n++] = (char *)r->profile;
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
				  describe_status(st, buf, sizeof(buf)));
		} else {
			log_error("the collector closed its ready pipe without "
				  "signalling ready");
		}
		return -ECHILD;
	}
}

static int collector_start(struct record *r)
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
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	return ret;
}

/* Stops the collector with SIGTERM (SIGKILL after a long grace period)
 * and reaps it. Returns its wait status in *status, or -1 in *status if it
 * had already been reaped. */
static void collector_stop(struct record *r, int *status)
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
	    (r->max_depth[0] &&
	     setenv("PYPROF_MAX_DEPTH", r->max_depth, 1) != 0)) {
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
static int command_run(struct record *r, int *ran)
{
	int errp[2] = { -1, -1 };
	pid_t pid;
	int ret, st, e = 0;
	ssize_t got;

	*ran = 0;
	if (pipe2(errp, O_CLOEXEC) != 0) {
		log_error("pipe: %s", strerror(errno));
		ret = CMD_EXIT_FAIL;
		goto out;
	}
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
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	return ret;
}

/* ---- the result ------------------------------------------------------- */

/* Reads the file src whole into *data (malloc'd). 0 or -errno. */
static int read_whole(const char *src, uint8_t **data, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	int fd = open(src, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0 || !buf) {
		e = fd < 0 ? errno : ENOMEM;
		goto fail;
	}
	for (;;) {
		ssize_t got;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				e = ENOMEM;
				goto fail;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = errno;
			goto fail;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	*data = buf;
	*len = n;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return -e;
}

/* Writes what the collector left in the temporary directory (src) to
 * dest, atomically; or, with format, converts it there. 0 or -errno
 * (the conversion logs its own reason). */
static int put_file(const struct record *r, const char *src, const char *dest,
		    int convert)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc;

	if (convert)
		return cmd_convert_file(src, r->timeline[0] ? r->timeline : NULL,
					r->format, NULL, NULL, 0, dest);
	rc = read_whole(src, &data, &len);
	if (rc == 0)
		rc = file_write_atomic(dest, data, len, FILEIO_REPLACE);
	free(data);
	return rc;
}

/* dest, as asked, or if it cannot be written, a fallback: the current
 * directory, else $TMPDIR or /tmp, as pyprof.<pid>.<name of dest>, said
 * on stderr. shown names dest as the user typed it; *where gets the path
 * written (n bytes). 0 if written where asked, 1 if in the fallback,
 * -errno if nowhere. */
static int place(const struct record *r, const char *src, const char *dest,
		 const char *shown, int convert, char *where, size_t n)
{
	const char *name = strrchr(dest, '/'), *tmp = getenv("TMPDIR");
	const char *dirs[3] = { ".", tmp && tmp[0] == '/' ? tmp : "/tmp",
				"/tmp" };
	char cwd[CMD_PATH_MAX];
	int rc, rc2;

	snprintf(where, n, "%s", shown);
	rc = put_file(r, src, dest, convert);
	if (rc == 0)
		return 0;
	name = name ? name + 1 : dest;
	if (getcwd(cwd, sizeof(cwd)))
		dirs[0] = cwd;
	rc2 = rc;
	for (int i = 0; i < 3; i++) {
		int len = snprintf(where, n, "%s/pyprof.%d.%s", dirs[i],
				   (int)getpid(), name);
		if (len < 0 || (size_t)len >= n)
			continue;
		rc2 = put_file(r, src, where, convert);
		if (rc2 == 0) {
			/* (a conversion said why already) */
			log_error("cannot write %s%s%s; written to %s instead",
				  shown, convert ? "" : ": ",
				  convert ? "" : strerror(-rc), where);
			return 1;
		}
	}
	log_error("cannot write %s%s%s, nor anywhere else", shown,
		  convert ? "" : ": ", convert ? "" : strerror(-rc));
	return rc2;
}

/* The files the collector wrote beside its profile in the temporary
 * directory (profile.heap.pb.gz, profile.tid<TID>.<name>.pb.gz), each put
 * beside the output as NAME.heap.pb.gz..., NAME being the output without
 * its .pb.gz. The heap profile is named on stderr. 0, or 1 if one went
 * to a fallback or nowhere. */
static int place_beside(const struct record *r)
{
	static const char stem[] = RECORD_TMP_STEM;
	char base_abs[CMD_PATH_MAX], base[CMD_PATH_MAX], src[CMD_PATH_MAX];
	char dest[CMD_PATH_MAX + 256], shown[CMD_PATH_MAX + 256];
	char where[CMD_PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(r->tmpdir);
	int failed = 0;

	if (!d)
		return 0;
	file_profile_base(r->output_abs, base_abs, sizeof(base_abs));
	file_profile_base(r->output, base, sizeof(base));
	while ((de = readdir(d)) != NULL) {
		const char *rest = de->d_name + sizeof(stem) - 1;
		if (strncmp(de->d_name, stem, sizeof(stem) - 1) ||
		    rest[0] != '.' || !strcmp(de->d_name, RECORD_TMP_PROFILE) ||
		    join_path(src, sizeof(src), r->tmpdir, de->d_name))
			continue;
		snprintf(dest, sizeof(dest), "%s%s", base_abs, rest);
		snprintf(shown, sizeof(shown), "%s%s", base, rest);
		int rc = place(r, src, dest, shown, 0, where, sizeof(where));
		if (rc != 0)
			failed = 1;
		if (rc >= 0 && !strcmp(rest, ".heap.pb.gz"))
			log_info("wrote %s (heap profile)", where);
	}
	closedir(d);
	return failed;
}

/* Prints the one-line result. Returns 0 if the profile was written. */
static int report(const struct record *r, int coll_status)
{
	char buf[RECORD_SUMMARY_MAX];
	struct cmd_summary sum;
	struct stat st;
	char where[CMD_PATH_MAX + 256];
	ssize_t len = -1;
	int fd, placed;

	if (coll_status == -1) {
		log_error("no profile written: lost track of the collector");
		return -ECHILD;
	}
	if (!WIFEXITED(coll_status) || WEXITSTATUS(coll_status) != 0) {
		log_error("no profile written: the collector %s",
			  describe_status(coll_status, buf, sizeof(buf)));
		return -EIO;
	}
	if (stat(r->profile, &st) != 0) {
		log_error("no profile written: the collector exited without "
			  "writing %s", r->profile);
		return -ENOENT;
	}
	/* The collector wrote into the temporary directory, which is
	 * always writable: the profile is lost only if no place at all can
	 * take it. --format: the pprof file is only a step (it goes with
	 * the temporary directory); the conversion says why if it fails. */
	placed = place(r, r->profile, r->output_abs, r->output,
		       r->format != NULL, where, sizeof(where));
	if (placed < 0)
		return -EIO;
	fd = open(r->summary, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (len >= 0)
		buf[len] = '\0';
	if (len < 0 || cmd_summary_parse(buf, &sum) != 0) {
		/* The profile is there; only the counts are missing. */
		log_info("wrote %s", where);
		return place_beside(r) || placed ? -EIO : 0;
	}
	log_info("wrote %s (%llu sample%s, %llu process%s, %llu dropped)",
		 where, sum.n_samples, sum.n_samples == 1 ? "" : "s",
		 sum.n_processes, sum.n_processes == 1 ? "" : "es",
		 sum.n_lost);
	for (size_t i = 0; i < sum.n_reasons; i++)
		log_info("%llu process%s not profiled: %s (profiling off)",
			 sum.reasons[i].n, sum.reasons[i].n == 1 ? "" : "es",
			 sum.reasons[i].why);
	if (sum.n_processes == 0 && sum.n_refused == 0)
		log_warn("no Python process reported to the collector (is "
			 "%s a CPython program? is PYPROF_DISABLE set?)",
			 r->command[0]);
	if (sum.n_running)
		log_warn("%llu profiled process%s still running when %s "
			 "exited (a daemon?): the profile stops there. record "
			 "stops with its command; to profile a daemon, run "
			 "pyprof-collector and start the daemon with "
			 "LD_PRELOAD=%s", sum.n_running,
			 sum.n_running == 1 ? " was" : "es were", r->command[0],
			 r->lib);
	return place_beside(r) || placed ? -EIO : 0;
}

/* ---- the subcommand --------------------------------------------------- */

static const char default_output[] = RECORD_DEFAULT_OUTPUT;

int cmd_record(int argc, char **argv)
{
	struct record r;
	int ret, code, ran = 0, coll_status = -1, r_err;

	memset(&r, 0, sizeof(r));
	r.output = default_output;
	r.coll_pid = -1;

	ret = parse_options(&r, argc, argv);
	if (ret == 1)
		return 0;
	if (ret < 0 || check_env(&r) < 0)
		return CMD_EXIT_FAIL;
	if (r.verbose)
		log_set_level(LOG_DEBUG);
	if (r.format && r.output == default_output)
		r.output = !strcmp(r.format, "svg") ? "pyprof.svg"
			   : !strcmp(r.format, "folded") ? "pyprof.folded"
			   : "pyprof.speedscope.json";

	/* "Not found" first: it is the likeliest mistake, and needs nothing
	 * else to be in place. */
	ret = cmd_find_command(r.command[0]);
	if (ret == -ENOENT) {
		log_error("%s: command not found", r.command[0]);
		return CMD_EXIT_NOTFOUND;
	}
	if (ret == -EACCES) {
		log_error("%s: %s", r.command[0], strerror(EACCES));
		return CMD_EXIT_NOEXEC;
	}
	if (find_files(&r) != 0 || check_output(&r) != 0)
		return CMD_EXIT_FAIL;

	signals_install();
	ret = cmd_make_tmpdir(r.tmpdir, sizeof(r.tmpdir));
	if (ret) {
		log_error("cannot create a temporary directory: %s",
			  strerror(-ret));
		r.tmpdir[0] = '\0';
		code = CMD_EXIT_FAIL;
		goto out;
	}
	if (join_path(r.sock, sizeof(r.sock), r.tmpdir, "s.sock") ||
	    join_path(r.summary, sizeof(r.summary), r.tmpdir, "summary") ||
	    join_path(r.profile, sizeof(r.profile), r.tmpdir,
		      RECORD_TMP_PROFILE) ||
	    (r.format && !strcmp(r.format, "speedscope") &&
	     join_path(r.timeline, sizeof(r.timeline), r.tmpdir,
		       "timeline"))) {
		log_error("temporary path too long: %s", r.tmpdir);
		code = CMD_EXIT_FAIL;
		goto out;
	}
	log_debug("socket %s", r.sock);

	ret = collector_start(&r);
	if (ret) {
		/* A collector that never got ready has nothing to write. */
		if (r.coll_pid > 0)
			kill(r.coll_pid, SIGKILL);
		code = ret == -EINTR ? 128 + pending_sig : CMD_EXIT_FAIL;
		goto out;
	}
	if (pending_sig) {
		code = 128 + pending_sig;
		goto out;
	}

	code = command_run(&r, &ran);
	collector_stop(&r, &coll_status);
	if (!ran)
		goto out;
	r_err = report(&r, coll_status);
	if (r_err && code == 0)
		code = CMD_EXIT_FAIL;
out:
	if (r.coll_pid > 0)
		collector_stop(&r, &coll_status);
	if (r.tmpdir[0]) {
		ret = cmd_remove_tmpdir(r.tmpdir);
		if (ret)
			log_warn("could not remove %s: %s", r.tmpdir,
				 strerror(-ret));
	}
	return code;
}
