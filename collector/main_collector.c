/*
 * main_collector.c - pyprof-collector's command line.
 *
 * Parses options into struct collector_opts (collector.h), sets the log
 * level, and maps the result to an exit code:
 *   0  stopped by SIGTERM/SIGINT after writing everything asked for
 *   1  runtime error: cannot listen (for instance another collector is
 *      already listening on the socket) or cannot write an output
 *   2  usage error
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "log.h"
#include "pyprof/defaults.h"

#define DEFAULT_OUTPUT_DIR "profiles"

static void usage(FILE *out)
{
	char sock[256];
	if (pyprof_default_socket(sock, sizeof(sock)) < 0)
		snprintf(sock, sizeof(sock), "(too long)");
	fprintf(out,
"usage: pyprof-collector [options]\n"
"\n"
"Receives samples from Python processes running with libpyprof.so and\n"
"writes pprof CPU profiles (read them with `go tool pprof FILE`).\n"
"\n"
"options:\n"
"  --socket PATH      listen on PATH (default %s;\n"
"                     its directory is created with mode 0700)\n"
"  --output-dir DIR   write each process's profile to DIR when it ends, as\n"
"                     <comm>.<pid>.<YYYYmmddTHHMMSS>.pb.gz (default when\n"
"                     neither --output-dir nor --output is given: ./%s)\n"
"  --output FILE      at exit, write one profile merging all processes\n"
"  --summary FILE     at exit, write \"processes=N samples=N lost=N\"\n"
"  --ready-fd N       write \"1\" to file descriptor N once listening, then\n"
"                     close it\n"
"  --log-level LEVEL  error, warn, info (default) or debug\n"
"  -v, --verbose      same as --log-level debug (so is PYPROF_LOG=debug)\n"
"  -h, --help         show this help\n"
"\n"
"SIGTERM or SIGINT: read what clients already sent, write the profiles,\n"
"exit. Exit status: 0 ok, 1 runtime error (cannot listen, cannot write),\n"
"2 usage error.\n",
		sock, DEFAULT_OUTPUT_DIR);
}

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "pyprof-collector: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'pyprof-collector --help'.\n");
	return 2;
}

int main(int argc, char **argv)
{
	enum { OPT_SOCKET = 256, OPT_OUTPUT_DIR, OPT_OUTPUT, OPT_SUMMARY,
	       OPT_READY_FD, OPT_LOG_LEVEL };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "summary", required_argument, NULL, OPT_SUMMARY },
		{ "ready-fd", required_argument, NULL, OPT_READY_FD },
		{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct collector_opts opts = { .ready_fd = -1 };
	enum log_level level = LOG_INFO;
	int level_set = 0, opt;
	const char *env = getenv("PYPROF_LOG");

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			opts.socket_path = optarg;
			break;
		case OPT_OUTPUT_DIR:
			opts.output_dir = optarg;
			break;
		case OPT_OUTPUT:
			opts.output_file = optarg;
			break;
		case OPT_SUMMARY:
			opts.summary_file = optarg;
			break;
		case OPT_READY_FD: {
			char *end;
			errno = 0;
			long fd = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || fd < 0 ||
			    fd > INT_MAX)
				return usage_error("--ready-fd wants a file "
						   "descriptor number, not "
						   "'%s'", optarg);
			if (fcntl((int)fd, F_GETFD) < 0)
				return usage_error("--ready-fd %s is not an "
						   "open file descriptor",
						   optarg);
			opts.ready_fd = (int)fd;
			break;
		}
		case OPT_LOG_LEVEL:
			if (log_parse_level(optarg, &level) < 0)
				return usage_error("--log-level wants error, "
						   "warn, info or debug, not "
						   "'%s'", optarg);
			level_set = 1;
			break;
		case 'v':
			level = LOG_DEBUG;
			level_set = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("%s needs a value",
					   argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((opts.socket_path && !*opts.socket_path) ||
	    (opts.output_dir && !*opts.output_dir) ||
	    (opts.output_file && !*opts.output_file) ||
	    (opts.summary_file && !*opts.summary_file))
		return usage_error("empty path given to an option");
	if (!level_set && env && strcmp(env, "debug") == 0)
		level = LOG_DEBUG;
	log_set_level(level);
	if (!opts.output_dir && !opts.output_file)
		opts.output_dir = DEFAULT_OUTPUT_DIR;
	return collector_run(&opts) < 0 ? 1 : 0;
}
