/*
 * cmd_libpath.c - `pyprof lib-path`: where the library (and the labels
 * module) that `pyprof record` would use are, for LD_PRELOAD and
 * PYTHONPATH by hand:
 *
 *     LD_PRELOAD=$(pyprof lib-path) python3 app.py
 *
 * Wherever pyprof was installed from (the wheel, the .deb, make install,
 * the build tree), it looks where `pyprof record` looks: beside its own
 * executable (cmd_lib_rel, cmd_module_rel in cmd_util.c).
 *
 * Single-threaded, in the pyprof process. Exit status 0, 1 if the file is
 * not there, 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cmd.h"
#include "common/log.h"
#include "common/usage.h"

#define LIBPATH "pyprof lib-path" /* for usage_error */

void cmd_libpath_usage(FILE *out)
{
	fprintf(out,
		"Usage: pyprof lib-path [--pythonpath]\n"
		"\n"
		"Prints the absolute path of the libpyprof.so that `pyprof "
		"record` preloads,\nfor LD_PRELOAD by hand:\n"
		"\n"
		"  LD_PRELOAD=$(pyprof lib-path) python3 app.py\n"
		"\n"
		"Options:\n"
		"  --pythonpath   print instead the directory that holds the "
		"pyprof module\n"
		"                 (import pyprof), for PYTHONPATH\n"
		"  -h, --help     this text\n"
		"\n"
		"Exit status: 0 printed; 1 not found beside pyprof, or its "
		"path holds a\nspace or a colon (which LD_PRELOAD cannot "
		"hold); 2 usage error.\n");
}

int cmd_libpath(int argc, char **argv)
{
	char dir[CMD_PATH_MAX], path[CMD_PATH_MAX];
	int module = 0, ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			cmd_libpath_usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--pythonpath"))
			return usage_error(LIBPATH, "unknown %s '%s'",
					   argv[i][0] == '-' ? "option"
							     : "argument",
					   argv[i]);
		module = 1;
	}
	ret = cmd_self_dir(dir, sizeof(dir));
	if (ret) {
		log_error("cannot find pyprof's own directory: %s",
			  strerror(-ret));
		return CMD_EXIT_ERROR;
	}
	ret = cmd_find_beside(dir, module ? cmd_module_rel : cmd_lib_rel,
			      path, sizeof(path));
	if (ret) {
		log_error("%s not found beside %s (in %s or %s/../lib)",
			  module ? "pyprof.py" : "libpyprof.so", dir, dir, dir);
		return CMD_EXIT_ERROR;
	}
	if (module)
		*strrchr(path, '/') = 0;
	/* LD_PRELOAD splits at spaces and colons, PYTHONPATH at colons,
	 * and neither can quote: a part would be loaded relative to the
	 * current directory. Nothing printed, one line said. */
	if (strpbrk(path, module ? ":" : ": \t")) {
		log_error("%s's path %s holds a %s, which %s cannot hold (it "
			  "splits there): install pyprof where its path has "
			  "none, or link it from such a place (ln -s)",
			  module ? "the pyprof module" : "libpyprof.so", path,
			  strchr(path, ':') ? "colon" : "space",
			  module ? "PYTHONPATH" : "LD_PRELOAD");
		return CMD_EXIT_ERROR;
	}
	printf("%s\n", path);
	return 0;
}
