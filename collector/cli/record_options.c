/*
 * record_options.c - `pyprof record`'s command line: its help text, the
 * options (a table of those that take a value), and the check of the
 * PYPROF_* variables the command will get, with the library's own rules.
 *
 * Single-threaded, in the pyprof process, before anything starts.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/record.h"
#include "common/log.h"
#include "common/usage.h"
#include "pyprof/defaults.h"
#include "pyprof/envcheck.h"

#define REC "pyprof record" /* for usage_error */

/* Long-only options get values outside the char range. */
enum {
	OPT_HZ = 256,
	OPT_MODE,
	OPT_MAX_DEPTH,
	OPT_FORMAT,
	OPT_PER_THREAD,
	OPT_NATIVE,
	OPT_HEAP,
	OPT_WAITS,
	OPT_HEAP_RATE,
	OPT_REPEAT,
	OPT_SPLIT
};

/* ---- options ---------------------------------------------------------- */

/* the help text as it prints */
/* clang-format off */
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
"                      pyprof.svg, .folded, .speedscope.json,\n"
"                      .gecko.json, .pstats by format)\n"
"      --format F      pprof (default), svg (a flame graph), folded\n"
"                      (\"root;...;leaf N\" lines), speedscope (JSON,\n"
"                      samples in time order per thread), gecko (the\n"
"                      Firefox Profiler's, in time order) or pstats\n"
"                      (pstats.Stats, snakeviz); pyprof writes the\n"
"                      pprof profile, then converts it\n"
"      --split         folded, speedscope: a sample whose CPU time was\n"
"                      native or system gets a leaf [native] or [system]\n"
"                      (as pyprof convert --split)\n"
"      --hz N          samples per second, 1 to %d (default: the\n"
"                      library's, %d): of each thread's CPU time in cpu\n"
"                      mode, of wall time in wall mode\n"
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
"      --waits[=RATE]  also block and mutex profiles, FILE without\n"
"                      .pb.gz, then .block.pb.gz (where threads waited\n"
"                      for a lock or the GIL) and .mutex.pb.gz (the code\n"
"                      that held them meanwhile); a wait or hold shorter\n"
"                      than RATE (default 10us; ns, us or ms) is sampled;\n"
"                      Python 3.8+, pprof format only\n"
"      --per-thread    also one profile per thread, beside the profile:\n"
"                      FILE without .pb.gz, then .tid<TID>.<name>.pb.gz\n"
"                      (.pid<PID>.tid<TID>... when several processes ran);\n"
"                      pprof format only\n"
"      --repeat N      run COMMAND N times (1 to %d), one profile a run:\n"
"                      FILE without .pb.gz, then .1.pb.gz ... .N.pb.gz\n"
"                      (for pyprof diff --test); stops at the first run\n"
"                      that fails; pprof format only\n"
"  -v, --verbose       say what pyprof does; collector logs at info level\n"
"  -h, --help          this text\n"
"\n"
"Without --hz, --mode, --max-depth, --heap or --waits, PYPROF_HZ,\n"
"PYPROF_MODE, PYPROF_MAX_DEPTH, PYPROF_HEAP_RATE and PYPROF_WAITS pass\n"
"through from the environment\n"
"unchanged.\n"
"\n"
"pyprof record --pid PID [-o FILE] [--duration S] [--hz N] [--mode cpu|wall]\n"
"[--max-depth N]: instead, a running CPython (2.7, 3.6 to 3.15) read from\n"
"outside, nothing loaded into it, until --duration, Ctrl-C or its end\n"
"(pyprof record --pid 1 --help says more).\n"
"\n"
"Exit status: COMMAND's (128+N if signal N killed it); 125 if pyprof\n"
"failed before running COMMAND, 126 if COMMAND could not be executed,\n"
"127 if it was not found. If COMMAND succeeded but the profile could not\n"
"be written, 125.\n",
		RECORD_DEFAULT_OUTPUT, PYPROF_MAX_HZ, PYPROF_DEFAULT_HZ,
		PYPROF_MAX_MAX_DEPTH, PYPROF_DEFAULT_MAX_DEPTH,
		RECORD_MAX_REPEAT);
}
/* clang-format on */

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
	{ OPT_FORMAT, "--format",
	  "pprof, svg, folded, speedscope, gecko or pstats", 0, 0 },
	{ OPT_HEAP_RATE, "--heap-rate", "bytes between samples, ", 1ul << 30,
	  offsetof(struct record, heap_rate) },
	{ OPT_REPEAT, "--repeat", "runs, ", RECORD_MAX_REPEAT,
	  offsetof(struct record, repeat) },
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
					 "not '=%s'",
				    arg);
			return -EINVAL;
		}
		r->native = arg ? "all" : "1";
		return 0;
	case OPT_PER_THREAD:
		r->per_thread = 1;
		return 0;
	case OPT_SPLIT:
		r->split = 1;
		return 0;
	case OPT_WAITS:
		r->waits = arg ? arg : "1"; /* checked by record_check_env */
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
		else if (len == 14 && !strncmp(arg, "--subprocesses", 14))
			/* a command's children are profiled anyway: the
			 * library follows fork and exec */
			usage_error(REC, "--subprocesses goes with --pid; a "
					 "COMMAND's subprocesses are always "
					 "profiled");
		else
			usage_error(REC, "unknown option '%.*s'", len, arg);
	} else {
		usage_error(REC, "unknown option '-%c'", optopt);
	}
	return -EINVAL;
}

/* Whether --split applies to format (NULL: pprof): the formats whose
 * frames gain a [native] or [system] leaf (pyprof convert --split). */
static int split_applies(const char *format)
{
	return format &&
	       (!strcmp(format, "folded") || !strcmp(format, "speedscope"));
}

/* Why not, when the format shows the split its own way. */
static const char *split_why(const char *format)
{
	if (format && !strcmp(format, "gecko"))
		return " (gecko's categories carry the split already)";
	if (format && !strcmp(format, "svg"))
		return " (the flame graph is coloured by it already)";
	return "";
}

/* Returns 0, 1 if --help was given (usage printed), or -EINVAL (one error
 * line printed). */
int record_parse_options(struct record *r, int argc, char **argv)
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
		{ "waits", optional_argument, NULL, OPT_WAITS },
		{ "heap-rate", required_argument, NULL, OPT_HEAP_RATE },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "split", no_argument, NULL, OPT_SPLIT },
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
				 "go with --format %s",
			    r->format);
		return -EINVAL;
	}
	if (r->waits && r->format) {
		usage_error(REC, "--waits writes pprof files only: it cannot "
				 "go with --format %s",
			    r->format);
		return -EINVAL;
	}
	if (r->per_thread && r->format) {
		usage_error(REC, "--per-thread writes pprof files beside the "
				 "pprof profile: not with --format %s",
			    r->format);
		return -EINVAL;
	}
	if (r->split && !split_applies(r->format)) {
		usage_error(REC, "--split goes with --format folded or "
				 "speedscope%s",
			    split_why(r->format));
		return -EINVAL;
	}
	if (r->repeat[0] && r->format) {
		usage_error(REC, "--repeat writes pprof files (for pyprof "
				 "diff --test): not with --format %s",
			    r->format);
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
	if (!strcmp(name, "PYPROF_WAITS") && r->waits)
		return r->waits;
	if (!strcmp(name, "PYPROF_MAX_DEPTH") && r->max_depth[0])
		return r->max_depth;
	return getenv(name);
}

/* The PYPROF_* variables the command will get, checked with the
 * library's own rules before anything starts: a bad one would leave
 * every process unprofiled, each printing why. 0 or -EINVAL (logged). */
int record_check_env(const struct record *r)
{
	char err[256];

	if (config_validate(passed_var, (void *)r, err, sizeof(err)) == 0)
		return 0;
	log_error("%s (nothing was started)", err);
	return -EINVAL;
}
