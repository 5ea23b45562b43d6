/*
 * cmd_record_pid.c - `pyprof record --pid PID`: a profile of a running
 * CPython (2.7, 3.6 to 3.15) read from outside, with nothing loaded into
 * it; and the sampling loop `top --pid` shares (outside.h).
 *
 * The target is checked as dump checks it (attach_target_check: ours or
 * CAP_SYS_PTRACE, Yama, CPython, each refusal one line with its remedy),
 * then sampled by remote_sampler (collector/remote/remote_sample.c: the
 * library's walker over process_vm_readv) at --hz, each tick's time
 * jittered around the period as the library's wall sampler does (a
 * program's own period cannot alias with ours), and written through
 * outside_prof.c, the collector's own process and pprof code. Nothing
 * is written into the target, no signal sent, no thread stopped. It
 * ends at --duration, at Ctrl-C (SIGINT, SIGTERM, SIGHUP) or when the
 * target exits, and writes what it read in every case. With
 * --subprocesses, outside_kids.c adds the target's descendants that are
 * CPython, each a process of its own in the profile.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach.h"
#include "cli/outside.h"
#include "cli/record.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/shortslice.h"
#include "pyprof/xorshift.h"

#define RPID "pyprof record --pid"
#define OUTSIDE_DEFAULT_HZ 100

enum { OPT_PID = 256,
       OPT_DURATION,
       OPT_HZ,
       OPT_MODE,
       OPT_MAX_DEPTH,
       OPT_SUBPROCESSES };

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t jitter(uint64_t period)
{
	static uint64_t x = 0x2545F4914F6CDD1Dull;
	return xorshift_jitter(&x, period);
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* 1 if pid's pid namespace is not ours (0 if the same or unknown). */
static int other_pid_ns(pid_t pid)
{
	char a[64], b[64], pa[64];
	ssize_t na, nb;

	snprintf(pa, sizeof pa, "/proc/%d/ns/pid", (int)pid);
	na = readlink(pa, a, sizeof a - 1);
	nb = readlink("/proc/self/ns/pid", b, sizeof b - 1);
	if (na <= 0 || nb <= 0)
		return 0;
	return na != nb || memcmp(a, b, (size_t)na) != 0;
}

int outside_open(pid_t pid, struct remote_py *py, char *comm, size_t comm_len)
{
	struct attach_target t;
	char dir[CMD_PATH_MAX], lib[CMD_PATH_MAX] = "libpyprof.so";
	char why[512] = "";

	if (cmd_self_dir(dir, sizeof dir) == 0)
		cmd_find_beside(dir, cmd_lib_rel, lib, sizeof lib);
	if (attach_target_check(pid, lib, ATTACH_DUMP_OUTSIDE, &t) < 0)
		return -1;
	/* the thread ids its interpreter holds are its pid namespace's,
	 * and each thread's state is read from our /proc by them */
	if (other_pid_ns(pid)) {
		log_error("process %d is in another pid namespace (a "
			  "container?): its threads' ids are not ours; run "
			  "pyprof inside it (kubectl exec, docker exec, or "
			  "nsenter -t %d -m -p)",
			  (int)pid, (int)pid);
		return -1;
	}
	if (remote_py_find(pid, py, why, sizeof why) < 0) {
		log_error("cannot read process %d: %s", (int)pid, why);
		return -1;
	}
	snprintf(comm, comm_len, "%s", t.comm);
	return 0;
}

/* Sleeps until next, or until end when that is set and not later; 1 when
 * a stop signal (attach_signals_install) came meanwhile, else 0. */
static int sleep_until(uint64_t next, uint64_t end)
{
	uint64_t t = end && next >= end ? end : next;
	struct timespec ts = { (time_t)(t / 1000000000ull),
			       (long)(t % 1000000000ull) };

	if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR)
		return 0;
	return attach_stop_sig != 0;
}

/* The sampler, the profile and (with subprocesses) the descendants'
 * scanner of r's process, into r. 0, or -1 with r->why. */
static int loop_open(struct outside_run *r, uint64_t period)
{
	r->why[0] = '\0';
	r->sampler = remote_sampler_new(&r->py, r->wall, r->max_depth, r->why,
					sizeof r->why);
	if (!r->sampler)
		return -1;
	r->prof = outside_prof_new(&r->py, r->wall, period, r->max_depth);
	if (r->prof && r->subprocesses)
		r->kids = outside_kids_new(r->py.pid, r->wall, r->max_depth,
					   r->prof);
	if (!r->prof || (r->subprocesses && !r->kids)) {
		snprintf(r->why, sizeof r->why, "out of memory");
		outside_done(r);
		return -1;
	}
	outside_part_set_target(outside_prof_first(r->prof),
				remote_sampler_target(r->sampler));
	return 0;
}

/* One tick of r's process, and of its descendants: -ESRCH when the
 * process is gone, else remote_sampler_tick's. */
static int loop_tick(struct outside_run *r, uint64_t now, uint64_t elapsed,
		     uint64_t *scan_at)
{
	int n;

	/* the page cache reads one process: the descendants' ticks and
	 * scans switch it */
	if (r->kids)
		remote_mem_open(r->py.pid);
	n = remote_sampler_tick(r->sampler, now, elapsed, outside_prof_add,
				outside_prof_first(r->prof), r->why,
				sizeof r->why);
	if (!r->kids || n == -ESRCH)
		return n;
	if (now >= *scan_at) {
		outside_kids_scan(r->kids, now);
		*scan_at = now + OUTSIDE_KIDS_SCAN_NS;
	}
	outside_kids_tick(r->kids, now);
	return n;
}

int outside_loop(struct outside_run *r)
{
	uint64_t period = 1000000000ull / r->hz, last, next, win_start;
	uint64_t end = 0, start, scan_at;
	double cpu0 = cpu_s();

	if (loop_open(r, period) < 0) {
		r->reader_cpu_s = cpu_s() - cpu0;
		return -1;
	}
	/* at each tick at once, not once the target's burst has ended
	 * (shortslice.h): a thread is charged only where it is found
	 * running */
	if (pyprof_short_slice() < 0)
		log_debug("the reader's time slice stays the kernel's default");
	start = last = win_start = scan_at = mono_ns();
	if (r->duration_s)
		end = last + (uint64_t)(r->duration_s * 1e9);
	next = last + jitter(period);
	while (!attach_stop_sig) {
		uint64_t now;
		int n;

		if (sleep_until(next, end))
			break;
		now = mono_ns();
		/* the last tick at the end, so that the ticks' intervals add
		 * up to the duration however late the reader woke */
		n = loop_tick(r, now, now - last, &scan_at);
		last = now;
		r->n_ticks++;
		if (n == -ESRCH) {
			r->exited = 1;
			break;
		}
		if (end && now >= end)
			break;
		/* an interpreter not started yet, or finalizing: try on,
		 * unless the process is gone */
		if (n < 0 && kill(r->py.pid, 0) < 0 && errno == ESRCH) {
			r->exited = 1;
			break;
		}
		if (r->window_s && r->on_window &&
		    now - win_start >= (uint64_t)(r->window_s * 1e9)) {
			r->on_window(r->arg, r->prof);
			win_start = now;
		}
		next += jitter(period);
		if (next < now)
			next = now + jitter(period) / 2;
	}
	{
		uint64_t stop = mono_ns();
		if (end && stop > end)
			stop = end;
		r->seconds = (double)(stop - start) / 1e9;
	}
	r->reader_cpu_s = cpu_s() - cpu0;
	return 0;
}

void outside_done(struct outside_run *r)
{
	outside_kids_free(r->kids);
	r->kids = NULL;
	outside_prof_free(r->prof);
	remote_sampler_free(r->sampler);
	r->prof = NULL;
	r->sampler = NULL;
}

/* clang-format off */
void cmd_record_pid_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof record --pid PID [OPTIONS]\n"
"\n"
"Profiles a running CPython (2.7, 3.6 to 3.15) from outside: its memory\n"
"is read with process_vm_readv by pyprof's own process; nothing is\n"
"loaded into it, no signal sent, no thread stopped. Needs the same user\n"
"or CAP_SYS_PTRACE. Writes the pprof profile a process started with the\n"
"library would have given.\n"
"\n"
"Options:\n"
"      --pid PID       the process\n"
"  -o, --output FILE   where to write the profile (default %s)\n"
"      --duration S    seconds to record, 1 to 86400 (default: until\n"
"                      Ctrl-C or the process exits)\n"
"      --hz N          stacks read per second, 1 to %d (default %d)\n"
"      --mode MODE     cpu (default: a thread's stack counts when the\n"
"                      kernel says the thread is running) or wall (every\n"
"                      thread's, each tick)\n"
"      --max-depth N   deepest stack kept, 1 to %d frames (default %d)\n"
"      --subprocesses  also every descendant of PID that is CPython,\n"
"                      started before or during the recording, each a\n"
"                      process of its own (pid label) in the profile;\n"
"                      others (a shell, sleep) are skipped\n"
"  -v, --verbose       say what pyprof does\n"
"  -h, --help          this text\n"
"\n"
"Exit status: 0 when the profile was written (also when the process\n"
"exited meanwhile), 1 when the process cannot be read (one line says why\n"
"and what to do) or the profile cannot be written, 2 on a usage error.\n",
		RECORD_DEFAULT_OUTPUT, PYPROF_MAX_HZ, OUTSIDE_DEFAULT_HZ,
		PYPROF_MAX_MAX_DEPTH, PYPROF_DEFAULT_MAX_DEPTH);
}
/* clang-format on */

int record_has_pid(int argc, char **argv)
{
	static const char *const valued[] = { "-o", "--output",
					      "--hz", "--mode",
					      "--max-depth", "--format",
					      "--heap-rate", "--repeat",
					      "--duration", NULL };

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int takes = 0;

		if (!strcmp(a, "--"))
			return 0;
		if (!strcmp(a, "--pid") || !strncmp(a, "--pid=", 6))
			return 1;
		if (a[0] != '-')
			return 0; /* COMMAND */
		for (int k = 0; valued[k]; k++)
			takes |= !strcmp(a, valued[k]);
		i += takes;
	}
	return 0;
}

int cmd_record_any(int argc, char **argv)
{
	return record_has_pid(argc, argv) ? cmd_record_pid(argc, argv)
					  : cmd_record(argc, argv);
}

/* The options with a value to check: --duration, --hz, --mode and
 * --max-depth, into r. 0, or the exit status to return. */
static int parse_checked(int c, const char *arg, struct outside_run *r)
{
	unsigned long v;

	switch (c) {
	case OPT_DURATION:
		if (cmd_parse_uint(arg, 1, 86400, &v))
			return usage_error(RPID, "--duration accepts an "
						 "integer from 1 to 86400, not '%s'",
					   arg);
		r->duration_s = (double)v;
		return 0;
	case OPT_HZ:
		if (cmd_parse_uint(arg, 1, PYPROF_MAX_HZ, &v))
			return usage_error(RPID, "--hz accepts an integer "
						 "from 1 to %d, not '%s'",
					   PYPROF_MAX_HZ, arg);
		r->hz = v;
		return 0;
	case OPT_MODE:
		if (strcmp(arg, "cpu") && strcmp(arg, "wall"))
			return usage_error(RPID, "--mode accepts cpu or "
						 "wall, not '%s'",
					   arg);
		r->wall = !strcmp(arg, "wall");
		return 0;
	default: /* OPT_MAX_DEPTH */
		if (cmd_parse_uint(arg, 1, PYPROF_MAX_MAX_DEPTH, &v))
			return usage_error(RPID, "--max-depth accepts an "
						 "integer from 1 to %d, not '%s'",
					   PYPROF_MAX_MAX_DEPTH, arg);
		r->max_depth = (int)v;
		return 0;
	}
}

/* record --pid's command line into r and rec (set to their defaults
 * first). -1 to go on, else the exit status to return (0 after --help). */
static int parse(int argc, char **argv, struct outside_run *r,
		 struct record *rec)
{
	static const struct option longs[] = {
		{ "pid", required_argument, NULL, OPT_PID },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "hz", required_argument, NULL, OPT_HZ },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, rc;

	memset(r, 0, sizeof *r);
	memset(rec, 0, sizeof *rec);
	rec->output = RECORD_DEFAULT_OUTPUT;
	r->hz = OUTSIDE_DEFAULT_HZ;
	r->max_depth = PYPROF_DEFAULT_MAX_DEPTH;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longs, NULL)) != -1) {
		switch (c) {
		case OPT_PID:
			if (attach_parse_pid(RPID, optarg, &r->py.pid) < 0)
				return CMD_EXIT_USAGE;
			break;
		case 'o':
			rec->output = optarg;
			break;
		case OPT_DURATION:
		case OPT_HZ:
		case OPT_MODE:
		case OPT_MAX_DEPTH:
			rc = parse_checked(c, optarg, r);
			if (rc)
				return rc;
			break;
		case OPT_SUBPROCESSES:
			r->subprocesses = 1;
			break;
		case 'v':
			log_set_level(LOG_DEBUG);
			break;
		case 'h':
			cmd_record_pid_usage(stdout);
			return 0;
		default:
			return usage_error(RPID, "%s option '%s' (with --pid: "
						 "-o, --duration, --hz, --mode, "
						 "--max-depth, --subprocesses, "
						 "-v)",
					   c == ':' ? "missing value for"
						    : "unknown",
					   argv[optind - 1]);
		}
	}
	if (optind != argc)
		return usage_error(RPID, "takes no COMMAND: '%s' (record --pid "
					 "reads a running process)",
				   argv[optind]);
	if (!r->py.pid)
		return usage_error(RPID, "--pid expects a process id");
	return -1;
}

int cmd_record_pid(int argc, char **argv)
{
	struct outside_run r;
	struct record rec;
	uint64_t n = 0;
	char comm[64], extra[300] = "", kids[64] = "";
	size_t n_parts;
	int rc, wrc;

	rc = parse(argc, argv, &r, &rec);
	if (rc >= 0)
		return rc;
	/* the process first: a refusal says what to do about it */
	if (outside_open(r.py.pid, &r.py, comm, sizeof comm) < 0 ||
	    record_check_output(&rec) != 0)
		return 1;
	attach_signals_install();
	if (outside_loop(&r) < 0) {
		log_error("cannot read process %d (%s): %s", (int)r.py.pid,
			  comm, r.why);
		return 1;
	}
	wrc = outside_prof_write(r.prof, rec.output_abs, &n);
	n_parts = outside_prof_n_parts(r.prof);
	if (r.subprocesses)
		snprintf(kids, sizeof kids, " and %zu descendant%s", n_parts - 1,
			 n_parts == 2 ? "" : "s");
	if (r.exited)
		snprintf(extra, sizeof extra, ", the process exited meanwhile");
	else if (!n && r.why[0]) /* an interpreter that never ran */
		snprintf(extra, sizeof extra, " (%s)", r.why);
	outside_done(&r);
	if (wrc < 0) {
		log_error("cannot write %s: %s", rec.output, strerror(-wrc));
		return 1;
	}
	log_info("wrote %s: process %d (%s)%s, Python %d.%d, read from outside "
		 "for %.1f s at %lu Hz (%s mode): %llu samples%s; pyprof "
		 "used %.2f s of CPU",
		 rec.output, (int)r.py.pid, comm, kids, r.py.major, r.py.minor,
		 r.seconds, r.hz, r.wall ? "wall" : "cpu",
		 (unsigned long long)n, extra, r.reader_cpu_s);
	return 0;
}
