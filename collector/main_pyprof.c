/*
 * main_pyprof.c - the `pyprof` command: global options and the dispatch to
 * subcommands.
 *
 * `pyprof SUBCOMMAND [ARGS...]` looks SUBCOMMAND up in the table below and
 * hands it the rest of argv; each subcommand is a struct cmd (cmd.h)
 * living in its own cmd_<name>.c. To add one (top, flamegraph, convert,
 * diff, ctl), write cmd_<name>.c, declare it in cmd.h and add a row here:
 * --help, `pyprof help NAME` and `pyprof NAME --help` then work for it.
 *
 * Runs single-threaded in the pyprof process. Exit codes: see cmd.h and
 * docs/exit-codes.md.
 */
#include <stdio.h>
#include <string.h>

#include "cli/attach.h"
#include "cli/cmd.h"
#include "cli/outside.h"
#include "common/log.h"
#include "common/usage.h"

static const struct cmd cmds[] = {
	{ "record", "run a command under the profiler and write a profile",
	  cmd_record_any, cmd_record_usage },
	{ "top", "print a profile's top functions, lines, labels or opcodes",
	  cmd_top_any, cmd_top_usage },
	{ "flamegraph", "write an interactive SVG flame graph of a profile",
	  cmd_flamegraph, cmd_flamegraph_usage },
	{ "convert", "convert a profile to folded stacks, speedscope or SVG",
	  cmd_convert, cmd_convert_usage },
	{ "diff", "compare two profiles: table and differential flame graph",
	  cmd_diff, cmd_diff_usage },
	{ "ctl", "switch sampling on and off in processes a collector serves",
	  cmd_ctl, cmd_ctl_usage },
	{ "attach", "profile a running Python process (3.14+) for a while",
	  cmd_attach, cmd_attach_usage },
	{ "dump", "print every thread's Python stack in a running process",
	  cmd_dump, cmd_dump_usage },
	{ "lib-path", "print the path of libpyprof.so (for LD_PRELOAD)",
	  cmd_libpath, cmd_libpath_usage },
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static const struct cmd *cmd_lookup(const char *name)
{
	size_t i;

	for (i = 0; i < N_CMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"Usage: pyprof COMMAND [OPTIONS] [ARGS...]\n"
		"\n"
		"A sampling profiler for CPython: preloads libpyprof.so into "
		"Python\nprocesses and writes pprof profiles.\n"
		"\n"
		"Commands:\n");
	for (i = 0; i < N_CMDS; i++)
		fprintf(out, "  %-12s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(out, "  %-12s %s\n", "help",
		"this text; `pyprof help COMMAND`: that command's options");
	fprintf(out,
		"\n"
		"Options:\n"
		"  -h, --help     this text; `pyprof COMMAND --help` for one "
		"command\n"
		"  -V, --version  print the version\n"
		"\n"
		"Example:\n"
		"  pyprof record -o app.pb.gz -- python3 app.py\n"
		"  pyprof top app.pb.gz\n"
		"  pyprof flamegraph app.pb.gz -o app.svg\n");
}

int main(int argc, char **argv)
{
	const struct cmd *c;
	const char *name;

	log_set_prefix("pyprof");
	if (argc < 2) {
		usage(stderr);
		return CMD_EXIT_FAIL;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
		printf("pyprof %s\n", PYPROF_VERSION);
		return 0;
	}
	if (!strcmp(name, "help")) {
		if (argc < 3 || !strcmp(argv[2], "-h") ||
		    !strcmp(argv[2], "--help")) {
			usage(stdout);
			return 0;
		}
		c = cmd_lookup(argv[2]);
		if (!c) {
			usage_error("pyprof", "unknown command '%s'", argv[2]);
			return CMD_EXIT_FAIL;
		}
		c->usage(stdout);
		return 0;
	}
	c = cmd_lookup(name);
	if (!c) {
		usage_error("pyprof", "unknown %s '%s'",
			    name[0] == '-' ? "option" : "command", name);
		return CMD_EXIT_FAIL;
	}
	fflush(stdout);
	return c->run(argc - 1, argv + 1);
}
