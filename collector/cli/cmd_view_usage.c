/*
 * cmd_view_usage.c - the help texts of the subcommands that read
 * profiles (cmd_view.c): `pyprof top`, `pyprof flamegraph`, `pyprof
 * convert` and `pyprof diff`, each as --help prints it; cmd_view.c
 * prints them, and its usage errors point to them.
 *
 * Apart from the commands' code, so that cmd_view.c holds what they do:
 * an option's text changes here, its handling there.
 *
 * Single-threaded, in the pyprof process.
 */
#include <stdio.h>

#include "cli/cmd.h"
#include "views/renderers.h"

/* clang-format off */
void cmd_top_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof top [OPTIONS] PROFILE...\n"
"\n"
"Prints the functions of a pprof profile (ours, or any pprof) with flat\n"
"(as the leaf) and cumulative (anywhere on the stack) values, their\n"
"percentages of the total and a running sum, largest first.\n"
"\n"
"Options:\n"
"  -n N                 at most N rows\n"
"      --sort flat|cum  order by flat (default) or cumulative value\n"
"      --by function|line|opcode\n"
"                       a row per function (default), per source line, or\n"
"                       per opcode (profiles recorded with PYPROF_OPCODES=1:\n"
"                       samples, share, and the functions running it most)\n"
"      --by-label KEY   a row per value of a label instead: pid, thread_id,\n"
"                       thread_name, gil, native, time, cpu_state...\n"
"      --split          three more columns: the shares of the total that\n"
"                       each row's cumulative time spent in the interpreter\n"
"                       (python), in C called from Python (native) and in\n"
"                       the kernel (system), from the time label\n"
"      --sample-type T  which value to show: cpu, wall, samples; for heap\n"
"                       profiles inuse_space, inuse_objects, alloc_space,\n"
"                       alloc_objects, peak_space, peak_objects; for block\n"
"                       and mutex profiles delay, contentions (alias\n"
"                       --sample_index) (default: the profile's default\n"
"                       type: cpu or wall for ours, inuse_space for heap,\n"
"                       delay for block and mutex, as go tool pprof)\n"
"      --tag KEY=VALUE  only samples with this label (repeat: every key must\n"
"                       match, any of the values given for one key)\n"
"      --intervals      two more columns: each flat and cum share's 95%%\n"
"                       interval (profiles with samples/count: CPU, wall)\n"
"      --confidence L   their level instead of 95 (50 to 99.99; implies\n"
"                       --intervals)\n"
"                       Several PROFILEs (runs of one program: pyprof\n"
"                       record --repeat) give each function's mean flat%%\n"
"                       and cum%% over the runs, with intervals from the\n"
"                       variance between them\n"
"  -o, --output FILE    write the table to FILE instead of standard output\n"
"  -h, --help           this text\n"
"\n"
"Units: times as ns, us, ms or s; counts as numbers.\n"
"\n"
"pyprof top --pid PID [-n N] [--hz N] [--mode cpu|wall] [--duration S]\n"
"[--timeout S]: instead, a live table of the running CPython process PID\n"
"(2.7, 3.6 to 3.15) over the last second, redrawn every second until\n"
"Ctrl-C; read from outside as `pyprof record --pid` reads it (nothing\n"
"loaded into it), unless PID was started with the library: then its\n"
"collector is asked, over HTTP (pyprof-collector --http), or the\n"
"library an earlier attach left in it is used. pyprof top --collector\n"
"SOCKET [--pid PID]: the same for all that collector's processes (or\n"
"one).\n"
"\n"
"Exit status: 0, 1 if the profile cannot be read or lacks what was asked\n"
"(--pid: if pyprof refused), 2 on a usage error.\n");
}
/* clang-format on */

/* clang-format off */
void cmd_flamegraph_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof flamegraph [OPTIONS] PROFILE -o OUT.svg\n"
"\n"
"Writes an interactive SVG flame graph of a pprof profile; open it in a\n"
"browser. Click a frame to zoom into it, Reset Zoom (or the root) to zoom\n"
"out; Search (or Ctrl-F) highlights functions matching a regular\n"
"expression and shows their share; hover for function, file:line, value,\n"
"samples and percent.\n"
"\n"
"Options:\n"
"  -o, --output FILE    the SVG (default: standard output)\n"
"      --sample-type T  cpu, wall, samples, inuse_space, alloc_space,\n"
"                       delay, contentions... (default: the profile's;\n"
"                       alias --sample_index)\n"
"      --tag KEY=VALUE  only samples with this label, e.g. pid=1234 or\n"
"                       thread_name=MainThread (repeatable)\n"
"      --icicle         root at the top (an icicle graph)\n"
"      --by function|line  a frame per function (default) or per line\n"
"      --min-width PX   frames narrower than this are merged into one\n"
"                       \"...\" frame per parent (default %.1f)\n"
"      --title TEXT     the graph's title\n"
"      --confidence L   the level of the share's interval each tooltip\n"
"                       gives (default 95; 50 to 99.99)\n"
"  -h, --help           this text\n",
		VIEW_FLAME_MIN_WIDTH);
}
/* clang-format on */

/* clang-format off */
void cmd_convert_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof convert PROFILE --format FORMAT [-o OUT] [OPTIONS]\n"
"\n"
"Converts a pprof profile to another format:\n"
"  folded      one line per stack, \"root;...;leaf N\" (FlameGraph,\n"
"              inferno); N is the sample count unless --sample-type\n"
"              (heap, block and mutex profiles: their default type)\n"
"  speedscope  speedscope's JSON, a profile per thread; with --timeline,\n"
"              samples in time order (see pyprof-collector --timeline)\n"
"  svg         the flame graph of `pyprof flamegraph`\n"
"  gecko       the Firefox Profiler's processed profile (JSON, version\n"
"              70): needs --timeline, threads with timed samples\n"
"  pstats      Python's pstats file (pstats.Stats, snakeviz,\n"
"              gprof2dot): times and calls estimated from samples\n"
"  pprof       the profile itself (gzipped pprof) with the table of\n"
"              `pyprof top --intervals` in its comments (needs\n"
"              --intervals; go tool pprof -comments prints them)\n"
"  otlp        an OpenTelemetry profiles export request (OTLP protobuf,\n"
"              what pyprof-collector --otlp sends), every sample type\n"
"\n"
"Options:\n"
"  -o, --output FILE    where to write (default: standard output)\n"
"      --format F       folded, speedscope, svg, gecko, pstats, pprof or\n"
"                       otlp\n"
"      --timeline FILE  the timeline recorded with PROFILE (speedscope,\n"
"                       gecko)\n"
"      --sample-type T  cpu, wall, samples, inuse_space, delay,\n"
"                       contentions...\n"
"      --tag KEY=VALUE  only samples with this label (repeatable)\n"
"      --by function|line  frames per function (default) or per line\n"
"                       (folded, svg)\n"
"      --split          folded, speedscope: a sample whose time label is\n"
"                       native or system gets a leaf frame [native] or\n"
"                       [system] under its stack (self times change: a\n"
"                       function's own is then its Python time)\n"
"      --intervals      pprof: add top's table, each flat and cum share\n"
"                       with its interval, to the comments\n"
"  -n N                 pprof: rows of that table (default 20)\n"
"      --confidence L   svg, pprof: the intervals' level (default 95)\n"
"      --service-name NAME  otlp: the service.name resource attribute\n"
"                       (default unknown_service)\n"
"  -h, --help           this text\n");
}
/* clang-format on */

/* clang-format off */
void cmd_diff_usage(FILE *out)
{
	fprintf(out,
"Usage: pyprof diff [OPTIONS] BASE NEW [-o DIFF.svg]\n"
"       pyprof diff --test [OPTIONS] BEFORE... -- AFTER...\n"
"\n"
"Compares two profiles: prints the functions whose share of the total grew\n"
"or shrank most (cumulative, then flat, in percentage points), and with -o\n"
"writes a differential flame graph: NEW's shape, red where a frame's share\n"
"grew, blue where it shrank. Heap profiles (alloc_*, inuse_*, peak_* types)\n"
"and block and mutex profiles (delay, contentions) compare values in their\n"
"unit instead (bytes, objects, time waited, waits), as go tool pprof\n"
"-diff_base.\n"
"\n"
"Options:\n"
"  -o, --output FILE    the differential flame graph (SVG)\n"
"  -n N                 rows of the table (default 20)\n"
"      --sample-type T  cpu, wall, samples, delay... (default: BASE's\n"
"                       default)\n"
"      --shares         compare shares of each total (default but heap,\n"
"                       block and mutex)\n"
"      --values         compare values in the type's unit (default: heap,\n"
"                       block and mutex)\n"
"      --tag KEY=VALUE  only samples with this label (repeatable)\n"
"      --by function|line  compare functions (default) or lines\n"
"      --sort cum|flat  rows by the change of cumulative share (default:\n"
"                       a caller whose subtree grew comes first) or of\n"
"                       flat share (self time), as go tool pprof's top\n"
"  -h, --help           this text\n"
"\n"
"Tested diff (--test; options before --): one or several profiles a side\n"
"(BEFORE -- AFTER with one each may be written BEFORE AFTER); per\n"
"function, the change of share with its interval and whether it is real\n"
"at the chosen level, after Holm's correction over the functions compared;\n"
"real changes first, by size. Several runs a side use the variance between\n"
"runs (pyprof record --repeat N makes them); see docs/reading.md.\n"
"      --test           test the changes; exit status 0 when no change is\n"
"                       real, 1 when one is, 2 on error\n"
"      --confidence L   the level, 50 to 99.99 (default 95)\n"
"      --fail-on-increase POINTS  exit 1 only for a real increase of at\n"
"                       least POINTS percentage points\n");
}
/* clang-format on */
