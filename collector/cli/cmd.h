/*
 * cmd.h - the pyprof command's subcommands, and the small helpers they share.
 *
 * main_pyprof.c owns the dispatch: it looks the first argument up in a
 * table of struct cmd and calls that entry's run() with the remaining
 * arguments (argv[0] is the subcommand's name, as for main). Each
 * subcommand lives in its own cmd_<name>.c and adds one row to the table;
 * `record` is the first, `top`, `flamegraph`, `convert`, `diff` and `ctl`
 * come later. The helpers in cmd_util.c (finding our own files, parsing
 * option values, temporary directories) are shared by all of them.
 *
 * Runs in the pyprof process only, single-threaded, from main(). Messages
 * go through log.h with the prefix "pyprof".
 */
#ifndef PYPROF_CMD_H
#define PYPROF_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "common/usage.h"
#include "common/version.h"

/*
 * Exit codes of the pyprof command (listed in docs/exit-codes.md and
 * man/pyprof.1). A subcommand that runs a COMMAND exits with COMMAND's
 * status (128+N if a signal N killed it); these three are pyprof's own,
 * chosen like env(1) and timeout(1) so they rarely collide with a
 * program's.
 */
#define CMD_EXIT_FAIL 125     /* pyprof failed before running COMMAND:
                                 bad option, missing file, collector did
                                 not start                            */
#define CMD_EXIT_NOEXEC 126   /* COMMAND found but could not be run   */
#define CMD_EXIT_NOTFOUND 127 /* COMMAND not found                    */

/* Exit codes of the subcommands that read profiles (top, flamegraph,
 * convert, diff), which run no COMMAND: like pyprof-collector's. */
#define CMD_EXIT_ERROR 1	  /* a profile cannot be read, lacks what was
                                 asked for, or the output cannot be
                                 written                              */
#define CMD_EXIT_USAGE USAGE_EXIT /* bad option or arguments (usage.h) */

/* The longest path a helper builds; longer ones are errors (-ENAMETOOLONG). */
#define CMD_PATH_MAX 4096

struct cmd {
	const char *name;    /* as typed: "record"                        */
	const char *summary; /* one line for `pyprof --help`              */
	/* Runs the subcommand; argv[0] is its name, argv[argc] is NULL.
	 * Returns the process's exit status. */
	int (*run)(int argc, char **argv);
	/* Prints the subcommand's help text to out. */
	void (*usage)(FILE *out);
};

/* ---- subcommands (one cmd_<name>.c each) ------------------------------ */

/* cmd_record.c: `pyprof record [OPTIONS] [--] COMMAND [ARGS...]`. */
int cmd_record(int argc, char **argv);
void cmd_record_usage(FILE *out);

/* cmd_view.c: the subcommands that read profiles (their help texts in
 * cmd_view_usage.c). */
int cmd_top(int argc, char **argv);
void cmd_top_usage(FILE *out);
int cmd_flamegraph(int argc, char **argv);
void cmd_flamegraph_usage(FILE *out);
int cmd_convert(int argc, char **argv);
void cmd_convert_usage(FILE *out);
int cmd_diff(int argc, char **argv);
void cmd_diff_usage(FILE *out);
int cmd_ctl(int argc, char **argv);
void cmd_ctl_usage(FILE *out);
/* cmd_libpath.c: `pyprof lib-path [--pythonpath]`. */
int cmd_libpath(int argc, char **argv);
void cmd_libpath_usage(FILE *out);

struct view_filter;

/* Non-zero if format is one cmd_convert_file writes from a profile
 * (and, for speedscope and gecko, its timeline) with no option: folded,
 * speedscope, svg, gecko, pstats (pyprof record --format). */
int cmd_format_ok(const char *format);

/*
 * What cmd_convert_file converts: the pprof file profile to format,
 * written atomically to output (NULL or "-": standard output). timeline
 * (may be NULL) is the timeline recorded with it (speedscope, gecko);
 * sample_type and filter may be NULL; by is enum view_by (0: by
 * function); split adds the time label's [native] and [system] leaves
 * (folded, speedscope). level: the intervals' confidence level (svg's
 * tooltips, pprof's comments; 0: 95%); intervals and n_rows: pprof's
 * comments, the table of `pyprof top --intervals -n N` (0: 20 rows).
 * shown is the file a flame graph's title names (NULL: profile; record
 * gives its output, the profile being a temporary file).
 */
struct convert_req {
	const char *profile, *timeline, *format, *sample_type;
	const struct view_filter *filter;
	int by, split;
	double level;
	int intervals;
	unsigned long n_rows;
	const char *output, *shown;
};

/* Converts as r says. Returns 0 or a negative errno, after logging why.
 * `pyprof convert` and `pyprof record --format`. */
int cmd_convert_file(const struct convert_req *r);

/*
 * cmd_otlp.c: the pprof file profile as an OTLP ExportProfilesService
 * Request (push/otlp.h), with resource attribute service.name =
 * service_name (NULL: "unknown_service", OpenTelemetry's name for a
 * service nobody named), written atomically to output (NULL or "-":
 * standard output). Returns 0 or a negative errno, after logging why.
 */
int cmd_convert_otlp(const char *profile, const char *service_name,
		     const char *output);

/* ---- shared helpers (cmd_util.c) -------------------------------------- */

/*
 * Writes the directory that holds the running executable (from
 * /proc/self/exe, symlinks resolved) into buf of size n. Returns 0,
 * -ENAMETOOLONG, or the negative errno of readlink.
 */
int cmd_self_dir(char *buf, size_t n);

/*
 * Looks for a file named rel[i] (relative to dir) for i = 0.. until rel is
 * NULL, and writes the canonical absolute path of the first regular file
 * found into out (size n). Returns 0, or -ENOENT if none exists.
 */
int cmd_find_beside(const char *dir, const char *const *rel, char *out,
		    size_t n);

/* Where libpyprof.so and the labels module (pyprof.py) are, relative to
 * pyprof's own directory, for cmd_find_beside: the build tree (build/),
 * an installed tree (PREFIX/bin, PREFIX/lib: make install, the .deb, the
 * wheel's pyprof_bin/). NULL-terminated. */
extern const char *const cmd_lib_rel[];
extern const char *const cmd_module_rel[];

/*
 * Finds COMMAND the way execvp(3) will: a name containing '/' is taken as
 * a path; otherwise each directory of $PATH (default "/bin:/usr/bin") is
 * tried. Returns 0 when an executable regular file was found, -EACCES when
 * a file exists but cannot be executed (or is a directory), -ENOENT when
 * none exists. Used so that "not found" is reported before any collector
 * is started.
 */
int cmd_find_command(const char *name);

/*
 * Parses s as a plain decimal integer (digits only, no sign or spaces) in
 * [lo, hi]. Returns 0 and stores it in *out, -EINVAL if s is not such a
 * number, -ERANGE if it is out of range.
 */
int cmd_parse_uint(const char *s, unsigned long lo, unsigned long hi,
		   unsigned long *out);

/* What the collector writes to its --summary file at exit. */
#define CMD_SUMMARY_REASONS 9
struct cmd_summary {
	unsigned long long n_processes;
	unsigned long long n_samples;
	unsigned long long n_lost;
	unsigned long long n_refused; /* processes not profiled */
	size_t n_reasons;	      /* why, grouped */
	struct {
		unsigned long long n;
		char why[160];
	} reasons[CMD_SUMMARY_REASONS];
	unsigned long long n_running; /* still connected at the end; 0 if
					 the summary does not say */
	/* heap profiles: processes that sent heap data (0: none, or the
	 * summary does not say), and the highest in use of one of them,
	 * in bytes, when (Unix ns) and which */
	unsigned long long heap_procs, heap_peak, heap_peak_unix_ns;
	unsigned long long heap_peak_pid;
};

/*
 * Parses a summary text such as "processes=1 samples=1234 lost=0
 * refused=1\nrefused 1 Python 3.16 is not supported by this pyprof\n".
 * The first line holds whitespace-separated key=value pairs; unknown keys
 * are ignored, so the collector may add some (refused=, running= and the
 * heap_* ones are optional: 0).
 * Each later line "refused N REASON" names a reason why N processes were
 * not profiled; other lines are ignored. Returns 0 if processes, samples
 * and lost were found, -EINVAL otherwise (*out then holds whatever was
 * parsed).
 */
int cmd_summary_parse(const char *text, struct cmd_summary *out);

/* Writes "dir/name" into out (size n). 0, or -ENAMETOOLONG. */
int cmd_join_path(char *out, size_t n, const char *dir, const char *name);

/*
 * Creates a private (0700) temporary directory named pyprof.XXXXXX under
 * $TMPDIR, or /tmp when $TMPDIR is unset, not absolute, or so long that a
 * socket path inside it would not fit in sun_path. Writes its path into out
 * (size n). Returns 0 or a negative errno.
 */
int cmd_make_tmpdir(char *out, size_t n);

/*
 * Removes dir and the files directly inside it (the temporary directory
 * holds only files). Returns 0 or the first negative errno met; carries on
 * past errors.
 */
int cmd_remove_tmpdir(const char *dir);

/*
 * Reads process pid's environment (/proc/PID/environ: NAME=VALUE strings,
 * each ending in a NUL) into buf (size cap, cap > 1), NUL-terminated after
 * what fits. Returns the bytes read, or -1 (no such process, not ours).
 */
long cmd_read_environ(int pid, char *buf, size_t cap);

/* Makes text from another process (a target's function, file and thread
 * names) safe for a terminal, in place: every control character (C0 but
 * newlines and tabs, DEL, C1 in UTF-8) and bidirectional
 * override becomes '?' (log_printable's rule, line by line). */
void cmd_printable_lines(char *s);

#endif /* PYPROF_CMD_H */
