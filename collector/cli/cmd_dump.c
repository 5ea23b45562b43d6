/*
 * cmd_dump.c - `pyprof dump PID`: every thread's current Python stack,
 * once, as text, for a process that hangs.
 *
 * The stacks are read from outside, without loading or running anything
 * in the process and without stopping it, on every version 2.7-3.15, by
 * the library's own walker compiled into pyprof (remote_dump, remote.h).
 * With --native (3.14+): the target's own interpreter (its
 * version, run with -E -S) reads them with CPython's remote unwinder
 * (_remote_debugging, 3.14+: the reader `python -m asyncio ps` and the
 * 3.15 sampling profiler use, which follows the target's
 * _Py_DebugOffsets). This works where attach cannot: a process whose
 * every thread is blocked (a deadlock) never reaches the safe point an
 * attach script needs. Thread names are the OS's (3.14+ gives each
 * threading.Thread's name to its OS thread, up to 15 bytes). With
 * --native the reader runs in its native mode while dump_native.c holds
 * every thread stopped, and that file prints the merged stacks.
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/attach.h"
#include "cli/record.h"
#include "common/log.h"
#include "common/usage.h"
#include "remote/remote.h"

#define DUMP "pyprof dump"

void cmd_dump_usage(FILE *out)
{
	fprintf(out,
		"Usage: pyprof dump PID [--native]\n"
		"\n"
		"Prints every thread's current Python stack in the running CPython\n"
		"process PID (2.7-3.15), innermost call first, once. Reads from\n"
		"outside: loads and runs nothing in the process, stops it not, and\n"
		"works when every thread of it is blocked. Needs the same user as\n"
		"PID, or CAP_SYS_PTRACE.\n"
		"\n"
		"  --native   (3.14+) the native (C) frames too, merged with the Python ones:\n"
		"             each thread is stopped (ptrace) for the reading, some\n"
		"             tens of milliseconds, then goes on as before\n"
		"\n"
		"Exit status: 0, 1 when pyprof refused or failed, or the process\n"
		"exited while it was read (one line says why, after what was read),\n"
		"2 on a usage error.\n");
}

/* What the target's interpreter runs: one block per thread, its name
 * from /proc, then "    func (file:line)" lines, innermost first. Reads
 * the 3.14 shape (a list of ThreadInfo) and the 3.15 one (InterpreterInfo
 * holding them); retries a read torn by a running thread. With a second
 * argument (--native), for dump_native.c: "T\tTID\tMARKED" per thread,
 * then "F\tfunc (file:line)" per frame and "N" after the outermost frame
 * of each eval-loop call where the unwinder marks them (3.15's native=True
 * "<native>" entries; MARKED 1 then). */
static const char dump_code[] =
	"import sys\n"
	"import _remote_debugging as rd\n"
	"pid = int(sys.argv[1])\n"
	"def name(tid):\n"
	"    if tid == pid:\n"
	"        return 'MainThread'\n"
	"    try:\n"
	"        with open('/proc/%d/task/%d/comm' % (pid, tid)) as f:\n"
	"            return f.read().strip()\n"
	"    except OSError:\n"
	"        return '?'\n"
	"def line(f):\n"
	"    loc = getattr(f, 'location', None)\n"
	"    return loc.lineno if loc is not None else getattr(f, 'lineno', 0)\n"
	"native = len(sys.argv) > 2\n"
	"marked = False\n"
	"def unwinder():\n"
	"    global marked\n"
	"    if native:\n"
	"        try:\n"
	"            u = rd.RemoteUnwinder(pid, all_threads=True, native=True)\n"
	"            marked = True\n"
	"            return u\n"
	"        except TypeError:\n"
	"            pass\n"
	"    return rd.RemoteUnwinder(pid, all_threads=True)\n"
	"err = None\n"
	"for attempt in range(20):\n"
	"    try:\n"
	"        got = unwinder().get_stack_trace()\n"
	"        break\n"
	"    except (RuntimeError, OSError) as e:\n"
	"        err = e\n"
	"else:\n"
	"    sys.exit('cannot read the stacks: %s' % err)\n"
	"threads = []\n"
	"for item in got:\n"
	"    threads.extend(getattr(item, 'threads', None) or [item])\n"
	"def clean(s):\n"
	"    return str(s).replace('\\t', ' ').replace('\\n', ' ')\n"
	"if native:\n"
	"    out = []\n"
	"    for th in threads:\n"
	"        out.append('T\\t%d\\t%d' % (th.thread_id, marked))\n"
	"        for f in th.frame_info:\n"
	"            if marked and f.funcname == '<native>' and "
	"f.filename == '~':\n"
	"                out.append('N')\n"
	"            else:\n"
	"                out.append('F\\t%s (%s:%d)' % (clean(f.funcname), "
	"clean(f.filename), line(f) or 0))\n"
	"    sys.stdout.write('\\n'.join(out) + '\\n')\n"
	"    sys.exit(0)\n"
	"out = []\n"
	"for th in sorted(threads, key=lambda t: (t.thread_id != pid, "
	"t.thread_id)):\n"
	"    out.append('Thread %d \"%s\"' % (th.thread_id, "
	"name(th.thread_id)))\n"
	"    for f in th.frame_info:\n"
	"        out.append('    %s (%s:%d)' % (f.funcname, f.filename, "
	"line(f) or 0))\n"
	"    if not th.frame_info:\n"
	"        out.append('    (no Python frame)')\n"
	"sys.stdout.write('\\n'.join(out) + '\\n')\n";

/* Any version, read from outside by the library's own walker
 * (remote_dump): nothing runs, in the target or for it. */
static int dump_outside(pid_t pid, const char *lib)
{
	struct attach_target t;
	struct remote_py py;
	char why[512] = "";
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int rc;

	if (attach_target_check(pid, lib, ATTACH_DUMP_OUTSIDE, &t) < 0)
		return 1;
	if (remote_py_find(pid, &py, why, sizeof why) < 0) {
		log_error("cannot read process %d (%s): %s", (int)pid, t.comm,
			  why);
		return 1;
	}
	mem = open_memstream(&text, &len);
	if (!mem) {
		log_error("out of memory");
		return 1;
	}
	rc = remote_dump(&py, mem, why, sizeof why);
	if (fclose(mem) != 0 || !text) {
		log_error("out of memory");
		free(text);
		return 1;
	}
	if (rc < 0) {
		log_error("cannot read the stacks of process %d: %s", (int)pid,
			  why);
		free(text);
		return 1;
	}
	cmd_printable_lines(t.exe);
	printf("Process %d: %s (Python %d.%d, %s)\n%s", (int)pid, t.comm,
	       py.major, py.minor, t.exe, text);
	free(text);
	if (fflush(stdout) != 0)
		return 1;
	if (rc > 0) {
		log_error("%s", why);
		return 1;
	}
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	char lib[CMD_PATH_MAX], err[1024], code[sizeof dump_code + 64];
	struct record r;
	struct attach_target t;
	pid_t pid;
	char *out;
	int rc, native = 0;

	if (argc == 2 && (!strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "--help"))) {
		cmd_dump_usage(stdout);
		return 0;
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--native")) {
			native = 1;
			memmove(argv + i, argv + i + 1,
				(size_t)(argc - i) * sizeof *argv);
			argc--;
			break;
		}
	if (argc != 2 || argv[1][0] == '-')
		return usage_error(DUMP, "expects one PID and --native or "
					 "nothing"),
		       CMD_EXIT_USAGE;
	if (attach_parse_pid(DUMP, argv[1], &pid) < 0)
		return CMD_EXIT_USAGE;
	memset(&r, 0, sizeof r);
	if (record_find_files(&r) != 0)
		return 1;
	snprintf(lib, sizeof lib, "%s", r.lib);
	/* started with the library: through its collector, any version */
	{
		char sock[CMD_PATH_MAX];
		if (top_started_with_library(pid, sock, sizeof sock) == 0)
			return dump_ctl(pid, sock, native);
	}
	if (!native)
		return dump_outside(pid, lib);
	if (attach_target_check(pid, lib, ATTACH_DUMP_NATIVE, &t) < 0)
		return 1;
	/* the pid goes in the code: -c takes no arguments of ours after it
	 * through attach_run_python */
	snprintf(code, sizeof code, "import sys\nsys.argv[1:] = ['%d'%s]\n%s",
		 (int)pid, native ? ", 'native'" : "", dump_code);
	if (native)
		return dump_native(&t, code);
	out = malloc(DUMP_OUT_MAX);
	if (!out) {
		log_error("out of memory");
		return 1;
	}
	rc = attach_run_python(&t, code, out, DUMP_OUT_MAX, err, sizeof err);
	if (rc != 0) {
		log_error("cannot read the stacks of process %d: %s", (int)pid,
			  err[0] ? err : "the interpreter failed");
		free(out);
		return 1;
	}
	/* the target's names reach the terminal as text, not escapes */
	cmd_printable_lines(out);
	cmd_printable_lines(t.comm);
	cmd_printable_lines(t.exe);
	printf("Process %d: %s (Python %d.%d, %s)\n%s", (int)pid, t.comm,
	       t.major, t.minor, t.exe, out);
	free(out);
	return fflush(stdout) == 0 ? 0 : 1;
}
