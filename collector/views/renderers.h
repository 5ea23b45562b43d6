/*
 * renderers.h - what a person looks at: the renderers behind `pyprof top`,
 * `pyprof flamegraph`, `pyprof convert` and `pyprof diff`.
 *
 * Each takes profiles read by view_read.h and writes text to a stdio stream;
 * the commands (cmd_view.c) parse options, open files and report errors.
 * Errors are returned as negative errnos with a one-line reason in err
 * (ERR_LEN bytes): -ENOENT for a sample type or label the profile
 * does not have, -ENOMEM, -EIO when the stream failed.
 *
 * Single-threaded; memory is freed before returning.
 */
#ifndef PYPROF_RENDERERS_H
#define PYPROF_RENDERERS_H

#include <stdio.h>

#include "views/view_read.h"

/* ---- top (view_top.c) ------------------------------------------------------ */

enum view_top_sort {
	VIEW_SORT_FLAT,
	VIEW_SORT_CUM
};

struct view_top_opts {
	size_t n_rows; /* 0: every row */
	enum view_top_sort sort;
	enum view_by by;
	const char *sample_type;	  /* NULL: the profile's default */
	const struct view_filter *filter; /* NULL: every sample */
	const char *by_label;		  /* non-NULL: a table per value of this
				       label instead of per function */
	int by_opcode;			  /* the per-opcode table instead */
	int split;			  /* python, native and system columns:
				       the shares of the total that each
				       row's cumulative value had under
				       the label time=... (docs/reading.md) */
	double level;			  /* > 0: two more columns, the interval
				       of each row's flat and cum share at
				       this confidence level (0.95); the
				       profile needs samples/count */
};

/* The table of functions (or lines) with flat and cumulative values,
 * percentages of the total, and a running sum; or the per-label or
 * per-opcode summary. */
int view_top(FILE *out, const struct view_profile *p,
	     const struct view_top_opts *o, char *err);

/* `pyprof convert --format pprof --intervals`: p as gzipped pprof, its
 * comments followed by view_top's table with o (o->level set: the
 * intervals), one comment a line, as `go tool pprof -comments` prints
 * them. p is best read with view_read_text_*: the table's names are then
 * escaped as top's. (view_pprof.c) */
int view_pprof_intervals(FILE *out, const struct view_profile *p,
			 const struct view_top_opts *o, char *err);

/* ---- flame graphs (view_flame.c) --------------------------------------------- */

#define VIEW_FLAME_WIDTH 1200
#define VIEW_FLAME_MIN_WIDTH 0.5 /* px: narrower frames are merged */

struct view_flame_opts {
	const char *sample_type; /* NULL: the profile's default */
	const struct view_filter *filter;
	enum view_by by;
	int icicle;	   /* root at the top */
	double min_width;  /* px; 0: VIEW_FLAME_MIN_WIDTH */
	const char *title; /* NULL: "Flame graph" / "Icicle graph" */
	/* the tooltips' intervals' confidence level; 0: 95% (a profile
	 * without samples/count gets none) */
	double level;
};

/* A self-contained interactive SVG flame graph of p. */
int view_flame(FILE *out, const struct view_profile *p,
	       const struct view_flame_opts *o, char *err);

/* ---- folded stacks (view_folded.c) --------------------------------------------- */

/* One line per distinct stack, "root;...;leaf N", N the sum of the chosen
 * sample type (default: samples/count if the profile has it, else the
 * default type), lines sorted by stack. Frames are written "name" or,
 * when by is VIEW_BY_LINE, "name:LINE"; ';' in a name becomes ':', line
 * breaks and other control characters (DEL too) become spaces. With
 * split, a sample labelled time=native or time=system has one more leaf,
 * "[native]" or "[system]" (docs/reading.md). */
int view_folded(FILE *out, const struct view_profile *p,
		const char *sample_type, const struct view_filter *filter,
		enum view_by by, int split, char *err);

/* ---- speedscope (view_speedscope.c) -------------------------------------------- */

struct timeline_data;

/* A speedscope file (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile per (pid, thread). With tl (a timeline recorded
 * with the profile, timeline.h) the samples are in time order and each
 * weighs its own value; without, each distinct stack is one sample
 * weighing its total, in stack order. With split, samples whose time was
 * native or system end in a leaf "[native]" or "[system]", and the file's
 * name says so. */
int view_speedscope(FILE *out, const struct view_profile *p,
		    const struct timeline_data *tl, const char *sample_type,
		    const struct view_filter *filter, const char *name,
		    int split, char *err);

/* ---- Firefox Profiler (view_gecko.c) --------------------------------------------- */

/* The processed profile format the Firefox Profiler loads
 * (profiler.firefox.com, "Load a profile from file"), version
 * VIEW_GECKO_VERSION of its meta.preprocessedProfileVersion: one thread
 * per (pid, thread) with the timeline's samples (tl is required: the
 * format is time-based and a pprof profile has no times) in time order,
 * their times in ms from the first sample, shared stack, frame and
 * function tables with files and lines, and interval markers "Off-CPU"
 * for runs of a wall-mode thread's samples taken while it was not
 * running. Thread names from the profile's thread_name labels. Each
 * sample's leaf frame is in the category Python, Native or System, as
 * its record's time flags say (the split; docs/reading.md). */
#define VIEW_GECKO_VERSION 70
int view_gecko(FILE *out, const struct view_profile *p,
	       const struct timeline_data *tl, const struct view_filter *filter,
	       const char *name, char *err);

/* ---- pstats (view_pstats.c) -------------------------------------------------------- */

/* The marshal'd dict of Python's pstats (what cProfile's dump_stats
 * writes; pstats.Stats, snakeviz and gprof2dot read it), estimated from
 * samples: calls are sample counts, tottime and cumtime the sample
 * type's flat and cumulative values in seconds (a count type: times the
 * profile's period), callers the frames right above. -EINVAL (err says
 * why) when the sample type is no time. */
int view_pstats(FILE *out, const struct view_profile *p,
		const char *sample_type, const struct view_filter *filter,
		char *err);

/* ---- diff (view_diff.c) -------------------------------------------------------- */

/* What a diff compares: shares of each profile's total (where the time
 * went), or values in the sample type's unit (how much more memory).
 * AUTO: values for heap types (alloc_*, inuse_*, peak_*) and waits
 * (delay, contentions of block and mutex profiles), as go tool pprof
 * -diff_base does, shares for the others. */
enum view_diff_compare {
	VIEW_DIFF_AUTO = 0,
	VIEW_DIFF_SHARES,
	VIEW_DIFF_VALUES
};

struct view_diff_opts {
	size_t n_rows; /* rows of the table; 0: 20 */
	const char *sample_type;
	const struct view_filter *filter;
	enum view_by by;
	enum view_diff_compare compare;
	enum view_top_sort sort; /* what the table sorts by; set it: the
				    CLI's default is VIEW_SORT_CUM */
	/* view_diff_test: */
	double level;		 /* confidence level, 0.95 */
	double fail_on_increase; /* < 0: every real change fails the test;
				    else only a real increase of at least
				    this many points */
};

/* The functions whose share of the total (or value) grew or shrank most
 * between base and cur, as a table. */
int view_diff_table(FILE *out, const struct view_profile *base,
		    const struct view_profile *cur,
		    const struct view_diff_opts *o, char *err);
/* A differential flame graph: cur's shape, each frame coloured by how
 * its share (or value) changed (red grew, blue shrank). */
int view_diff_flame(FILE *out, const struct view_profile *base,
		    const struct view_profile *cur,
		    const struct view_diff_opts *o, char *err);

/* ---- tested diff (view_difftest.c) --------------------------------------------- */

/* `pyprof diff --test`: prof holds n_before profiles then n_after; per
 * function (or line), the change of mean share (cumulative, or flat with
 * sort VIEW_SORT_FLAT) with its interval at o->level and whether it is
 * real after Holm's correction over the functions compared; real changes
 * first, by size. *n_failing: how many real changes fail the test (every
 * one, or with fail_on_increase >= 0 the real increases of at least that
 * many points). The profiles need a samples/count type. */
int view_diff_test(FILE *out, const struct view_profile *const *prof,
		   size_t n_before, size_t n_after,
		   const struct view_diff_opts *o, size_t *n_failing, char *err);

/* `pyprof top --intervals A B C...`: per function (or line) the mean of
 * its flat and cumulative shares over n_prof runs (n_prof >= 2), with
 * intervals from the variance between runs, at o->level (set it). The
 * profiles need a samples/count type. (view_difftest.c) */
int view_top_runs(FILE *out, const struct view_profile *const *prof,
		  size_t n_prof, const struct view_top_opts *o, char *err);

#endif /* PYPROF_RENDERERS_H */
