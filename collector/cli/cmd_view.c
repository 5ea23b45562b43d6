/*
 * cmd_view.c - the subcommands that read profiles: `pyprof top`,
 * `pyprof flamegraph`, `pyprof convert` and `pyprof diff`, and
 * cmd_convert_file, which `pyprof record --format` uses.
 *
 * Each parses its options, reads the profile(s) with view_read.h, and calls a
 * renderer of renderers.h. Output goes to standard output, or with -o FILE to
 * FILE, written atomically (built in memory, then fileio.h), so a reader
 * never sees half a flame graph. Exit status: 0, 1 (the profile cannot be
 * read, has no such sample type or label, or the output cannot be
 * written), 2 (usage).
 *
 * Single-threaded, in the pyprof process.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/timeline_file.h"
#include "common/usage.h"
#include "views/view_read.h"
#include "views/renderers.h"
#include "views/view_stats.h"

enum {
	OPT_SAMPLE_TYPE = 256,
	OPT_TAG,
	OPT_BY,
	OPT_SORT,
	OPT_BY_LABEL,
	OPT_ICICLE,
	OPT_MIN_WIDTH,
	OPT_TITLE,
	OPT_FORMAT,
	OPT_TIMELINE,
	OPT_SHARES,
	OPT_VALUES,
	OPT_SERVICE_NAME,
	OPT_SPLIT, /* 'A' + 13: 'N' in check_allowed's letters */
	OPT_INTERVALS,
	OPT_CONFIDENCE,
	OPT_TEST,
	OPT_FAIL_ON_INCREASE, /* 'R' */
};

/* The rows of top's table in convert --format pprof's comments, by
 * default. */
#define CMD_PPROF_ROWS 20

/* What every view command may be given. */
struct vopts {
	const char *output; /* NULL or "-": standard output */
	const char *sample_type;
	struct view_filter filter;
	enum view_by by;
	int by_opcode;
	int split;
	const char *by_label;
	enum view_top_sort sort;
	int sort_given;
	unsigned long n_rows;
	int icicle;
	double min_width;
	const char *title;
	const char *format;
	const char *timeline;
	const char *service_name;
	enum view_diff_compare compare;
	double level;		 /* --confidence; 0 if not given */
	int intervals;		 /* --intervals */
	int test;		 /* --test */
	double fail_on_increase; /* --fail-on-increase; -1 if not given */
	char **args;		 /* the positional arguments */
	int n_args;
};

static const struct option longopts[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "sample-type", required_argument, NULL, OPT_SAMPLE_TYPE },
	/* go tool pprof's name for it */
	{ "sample_index", required_argument, NULL, OPT_SAMPLE_TYPE },
	{ "sample-index", required_argument, NULL, OPT_SAMPLE_TYPE },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "by", required_argument, NULL, OPT_BY },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "by-label", required_argument, NULL, OPT_BY_LABEL },
	{ "icicle", no_argument, NULL, OPT_ICICLE },
	{ "min-width", required_argument, NULL, OPT_MIN_WIDTH },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "timeline", required_argument, NULL, OPT_TIMELINE },
	{ "shares", no_argument, NULL, OPT_SHARES },
	{ "values", no_argument, NULL, OPT_VALUES },
	{ "service-name", required_argument, NULL, OPT_SERVICE_NAME },
	{ "split", no_argument, NULL, OPT_SPLIT },
	{ "intervals", no_argument, NULL, OPT_INTERVALS },
	{ "confidence", required_argument, NULL, OPT_CONFIDENCE },
	{ "test", no_argument, NULL, OPT_TEST },
	{ "fail-on-increase", required_argument, NULL, OPT_FAIL_ON_INCREASE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

/* Whether option c (as getopt_long returns it) is in allowed; if not,
 * says so and returns the exit status. 0 when allowed. */
static int check_allowed(const char *cmd, int c, const char *allowed)
{
	const char *name = NULL;

	if (c == 'h' || c == '?' || c == ':' ||
	    strchr(allowed, c < 256 ? c : 'A' + (c - 256)))
		return 0;
	if (c == 'n')
		return usage_error(cmd, "unknown option '-n'");
	for (const struct option *lo = longopts; lo->name; lo++)
		if (lo->val == c)
			name = lo->name;
	return usage_error(cmd, "unknown option '--%s'", name ? name : "?");
}

/* --by function|line, and opcode for top. */
static int parse_by(const char *cmd, const char *arg, struct vopts *o)
{
	int top = !strcmp(cmd, "pyprof top");

	if (!strcmp(arg, "function"))
		o->by = VIEW_BY_FUNCTION;
	else if (!strcmp(arg, "line"))
		o->by = VIEW_BY_LINE;
	else if (!strcmp(arg, "opcode") && top)
		o->by_opcode = 1;
	else
		return usage_error(cmd, "--by accepts function%s or line, not "
					"'%s'",
				   top ? ", opcode" : "", arg);
	return 0;
}

/* --tag KEY=VALUE, added to the filter. */
static int parse_tag(const char *cmd, const char *arg, struct vopts *o)
{
	if (view_filter_add(&o->filter, arg) == -E2BIG)
		return usage_error(cmd, "at most %d --tag options",
				   VIEW_MAX_TAGS);
	if (o->filter.n == 0 || o->filter.tags[o->filter.n - 1].key != arg)
		return usage_error(cmd, "--tag accepts KEY=VALUE, not '%s'",
				   arg);
	return 0;
}

/* The options with a value to check: -n, --tag, --by, --sort,
 * --min-width, --shares and --values. */
static int parse_checked(const char *cmd, int c, const char *arg,
			 struct vopts *o)
{
	char *end;

	switch (c) {
	case 'n':
		if (cmd_parse_uint(arg, 1, 1000000000, &o->n_rows))
			return usage_error(cmd, "-n accepts a positive "
						"integer, not '%s'",
					   arg);
		return 0;
	case OPT_TAG:
		return parse_tag(cmd, arg, o);
	case OPT_BY:
		return parse_by(cmd, arg, o);
	case OPT_SORT:
		o->sort_given = 1;
		if (!strcmp(arg, "flat"))
			o->sort = VIEW_SORT_FLAT;
		else if (!strcmp(arg, "cum"))
			o->sort = VIEW_SORT_CUM;
		else
			return usage_error(cmd, "--sort accepts flat or cum, "
						"not '%s'",
					   arg);
		return 0;
	case OPT_CONFIDENCE:
		if (stats_parse_level(arg, &o->level))
			return usage_error(cmd, "--confidence accepts a level "
						"from 50 to 99.99 (percent, or "
						"0.5 to 0.9999), not '%s'",
					   arg);
		return 0;
	case OPT_FAIL_ON_INCREASE:
		o->fail_on_increase = strtod(arg, &end);
		if (*end || end == arg || !(o->fail_on_increase >= 0) ||
		    o->fail_on_increase > 100)
			return usage_error(cmd, "--fail-on-increase accepts "
						"percentage points from 0 to 100, "
						"not '%s'",
					   arg);
		return 0;
	case OPT_MIN_WIDTH:
		o->min_width = strtod(arg, &end);
		if (*end || end == arg || !(o->min_width >= 0.01) ||
		    o->min_width > 1000)
			return usage_error(cmd, "--min-width accepts pixels "
						"from 0.01 to 1000, not '%s'",
					   arg);
		return 0;
	default: { /* OPT_SHARES, OPT_VALUES */
		enum view_diff_compare want = c == OPT_SHARES
						      ? VIEW_DIFF_SHARES
						      : VIEW_DIFF_VALUES;
		if (o->compare && o->compare != want)
			return usage_error(cmd, "give --shares or --values, "
						"not both");
		o->compare = want;
		return 0;
	}
	}
}

/* One option getopt_long returned; 0, or the exit status to return. */
static int parse_one(const char *cmd, int c, char **argv, struct vopts *o)
{
	switch (c) {
	case 'o':
		o->output = optarg;
		return 0;
	case OPT_SAMPLE_TYPE:
		o->sample_type = optarg;
		return 0;
	case OPT_BY_LABEL:
		o->by_label = optarg;
		return 0;
	case OPT_SPLIT:
		o->split = 1;
		return 0;
	case OPT_INTERVALS:
		o->intervals = 1;
		return 0;
	case OPT_TEST:
		o->test = 1;
		return 0;
	case OPT_ICICLE:
		o->icicle = 1;
		return 0;
	case OPT_TITLE:
		o->title = optarg;
		return 0;
	case OPT_FORMAT:
		o->format = optarg;
		return 0;
	case OPT_TIMELINE:
		o->timeline = optarg;
		return 0;
	case OPT_SERVICE_NAME:
		o->service_name = optarg;
		return 0;
	case 'n':
	case OPT_TAG:
	case OPT_BY:
	case OPT_SORT:
	case OPT_MIN_WIDTH:
	case OPT_CONFIDENCE:
	case OPT_FAIL_ON_INCREASE:
	case OPT_SHARES:
	case OPT_VALUES:
		return parse_checked(cmd, c, optarg, o);
	case ':':
		return usage_error(cmd, "%s needs a value", argv[optind - 1]);
	default:
		return usage_error(cmd, "unknown option '%s'",
				   argv[optind - 1]);
	}
}

/* Parses argv for subcommand cmd ("pyprof top"), accepting the options in
 * allowed: their short letters, and for long-only options 'A' + (value -
 * 256), so "oABC" is -o, --sample-type, --tag and --by. Returns -1 to go
 * on, else the exit status to return (0 after --help). */
static int parse(const char *cmd, int argc, char **argv, struct vopts *o,
		 void (*usage)(FILE *), const char *allowed)
{
	int c, rc;

	opterr = 0;
	optind = 0;
	o->fail_on_increase = -1;
	while ((c = getopt_long(argc, argv, ":o:n:h", longopts, NULL)) != -1) {
		rc = check_allowed(cmd, c, allowed);
		if (rc)
			return rc;
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		rc = parse_one(cmd, c, argv, o);
		if (rc)
			return rc;
	}
	o->args = argv + optind;
	o->n_args = argc - optind;
	return -1;
}

/* ---- output ----------------------------------------------------------------- */

struct sink {
	FILE *f;
	char *buf;
	size_t len;
	const char *path; /* NULL: stdout */
};

static int sink_open(struct sink *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	if (!path || !strcmp(path, "-")) {
		s->f = stdout;
		return 0;
	}
	s->path = path;
	s->f = open_memstream(&s->buf, &s->len);
	return s->f ? 0 : -ENOMEM;
}

/* Closes s, writing the file if ok; returns 0 or a negative errno
 * (logged). */
static int sink_close(struct sink *s, int ok)
{
	int rc = 0;

	if (!s->path) {
		if (fflush(stdout) != 0) {
			log_error("writing standard output: %s",
				  strerror(errno));
			return -EIO;
		}
		return 0;
	}
	if (fclose(s->f) != 0)
		rc = -ENOMEM;
	if (ok && rc == 0) {
		rc = file_write_atomic(s->path, s->buf, s->len, FILEIO_REPLACE);
		if (rc < 0)
			log_error("cannot write %s: %s", s->path,
				  strerror(-rc));
	}
	free(s->buf);
	return rc;
}

/* After rendering into s with result rc: logs why it failed ("what: err",
 * or err alone when what is NULL), then closes s, writing its file only if
 * all went well. Returns rc, or -EIO when only the writing failed. */
static int sink_finish(struct sink *s, int rc, const char *what,
		       const char *err)
{
	if (rc < 0 && what)
		log_error("%s: %s", what, err);
	else if (rc < 0)
		log_error("%s", err);
	if (sink_close(s, rc == 0) < 0 && rc == 0)
		rc = -EIO;
	return rc;
}

/* A profile; as_text: for a view printed as text, its strings made
 * printable (view_read_text_file). */
static struct view_profile *load(const char *path, int as_text)
{
	char err[ERR_LEN];
	struct view_profile *p;

	if ((as_text ? view_read_text_file(path, &p, err)
		     : view_read_file(path, &p, err)) < 0) {
		log_error("%s: %s", path, err);
		return NULL;
	}
	return p;
}

/* ---- pyprof top ---------------------------------------------------------------- */

/* pyprof top A B C...: the mean shares over several runs. */
static int top_runs(const char *cmd, const struct vopts *o)
{
	struct view_top_opts t = { 0 };
	struct view_profile **prof;
	char err[ERR_LEN];
	struct sink out;
	size_t n = (size_t)o->n_args;
	int rc = 0;

	if (o->by_label || o->by_opcode || o->split)
		return usage_error(cmd, "several PROFILEs give the table of "
					"functions or lines: no --by-label, "
					"--by opcode or --split");
	prof = calloc(n, sizeof(*prof));
	if (!prof) {
		log_error("out of memory");
		return CMD_EXIT_ERROR;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		prof[i] = load(o->args[i], 1);
		rc = prof[i] ? 0 : -EINVAL;
	}
	t.n_rows = o->n_rows;
	t.sort = o->sort;
	t.by = o->by;
	t.sample_type = o->sample_type;
	t.filter = &o->filter;
	t.level = o->level ? o->level : STATS_DEFAULT_LEVEL;
	if (rc == 0)
		rc = sink_open(&out, o->output);
	if (rc == 0) {
		rc = view_top_runs(out.f,
				   (const struct view_profile *const *)prof, n,
				   &t, err);
		rc = sink_finish(&out, rc, NULL, err);
	}
	for (size_t i = 0; i < n; i++)
		view_free(prof[i]);
	free(prof);
	return rc < 0 ? CMD_EXIT_ERROR : 0;
}

int cmd_top(int argc, char **argv)
{
	static const char cmd[] = "pyprof top";
	struct vopts o = { 0 };
	struct view_top_opts t = { 0 };
	struct view_profile *p = NULL;
	struct sink out;
	char err[ERR_LEN];
	int rc;

	rc = parse(cmd, argc, argv, &o, cmd_top_usage, "onABCDENOP");
	if (rc >= 0)
		return rc;
	if (o.n_args > 1)
		return top_runs(cmd, &o);
	if (o.n_args != 1)
		return usage_error(cmd, "give a PROFILE (or several runs)");
	if (o.by_label && o.by_opcode)
		return usage_error(cmd, "--by opcode and --by-label are "
					"different tables: give one");
	if (o.split && (o.by_label || o.by_opcode))
		return usage_error(cmd, "--split goes with the table of "
					"functions or lines, not with --by-label or "
					"--by opcode");
	if ((o.intervals || o.level) && (o.by_label || o.by_opcode))
		return usage_error(cmd, "--intervals goes with the table of "
					"functions or lines");
	p = load(o.args[0], 1);
	if (!p)
		return CMD_EXIT_ERROR;
	t.level = o.level ? o.level : o.intervals ? STATS_DEFAULT_LEVEL
						  : 0;
	t.n_rows = o.n_rows;
	t.sort = o.sort;
	t.by = o.by;
	t.sample_type = o.sample_type;
	t.filter = &o.filter;
	t.by_label = o.by_label;
	t.by_opcode = o.by_opcode;
	t.split = o.split;
	rc = sink_open(&out, o.output);
	if (rc == 0) {
		rc = view_top(out.f, p, &t, err);
		rc = sink_finish(&out, rc, o.args[0], err);
	}
	view_free(p);
	return rc < 0 ? CMD_EXIT_ERROR : 0;
}

/* ---- pyprof flamegraph -------------------------------------------------------- */

/* The flame graph's title when --title is not given: what was profiled
 * (the first process's command line, from the comments pyprof writes,
 * "pid N command: ...") and the file's name, so that two graphs open side
 * by side say which is which; "Flame graph of FILE" for a profile without
 * such comments (Go's). In buf (n bytes). */
static const char *default_title(const struct view_profile *p,
				 const char *file, int icicle, char *buf,
				 size_t n)
{
	const char *what = icicle ? "Icicle graph" : "Flame graph";
	const char *base = strrchr(file, '/');
	const char *cmd = NULL;

	base = base && base[1] ? base + 1 : file;
	for (size_t i = 0; i < p->n_comments && !cmd; i++) {
		const char *c = strstr(p->comments[i], " command: ");
		if (c && !strncmp(p->comments[i], "pid ", 4))
			cmd = c + 10;
	}
	if (cmd)
		snprintf(buf, n, "%s of %.100s%s (%s)", what, cmd,
			 strlen(cmd) > 100 ? "..." : "", base);
	else
		snprintf(buf, n, "%s of %s", what, base);
	return buf;
}

int cmd_flamegraph(int argc, char **argv)
{
	static const char cmd[] = "pyprof flamegraph";
	struct vopts o = { 0 };
	struct view_flame_opts f = { 0 };
	struct view_profile *p = NULL;
	struct sink out;
	char err[ERR_LEN], title[512];
	int rc;

	rc = parse(cmd, argc, argv, &o, cmd_flamegraph_usage, "oABCFGHP");
	if (rc >= 0)
		return rc;
	if (o.n_args != 1)
		return usage_error(cmd, "give exactly one PROFILE");
	p = load(o.args[0], 0);
	if (!p)
		return CMD_EXIT_ERROR;
	f.sample_type = o.sample_type;
	f.filter = &o.filter;
	f.by = o.by;
	f.icicle = o.icicle;
	f.min_width = o.min_width;
	f.level = o.level;
	f.title = o.title ? o.title
			  : default_title(p, o.args[0], o.icicle, title,
					  sizeof(title));
	rc = sink_open(&out, o.output);
	if (rc == 0) {
		rc = view_flame(out.f, p, &f, err);
		rc = sink_finish(&out, rc, o.args[0], err);
	}
	view_free(p);
	return rc < 0 ? CMD_EXIT_ERROR : 0;
}

/* ---- pyprof convert ----------------------------------------------------------- */

/* Whether any sample of p says what its CPU time was (--split). */
static int has_time_label(const struct view_profile *p)
{
	char buf[16];

	for (size_t i = 0; i < p->n_samples; i++)
		if (view_sample_label(&p->samples[i], "time", buf, sizeof(buf)))
			return 1;
	return 0;
}

/* The renderer r->format names, into out. */
static int convert_render(FILE *out, const struct convert_req *r,
			  const struct view_profile *p,
			  const struct timeline_data *tl, char *err)
{
	const char *format = r->format;

	if (!strcmp(format, "folded"))
		return view_folded(out, p, r->sample_type, r->filter,
				   (enum view_by)r->by, r->split, err);
	if (!strcmp(format, "speedscope"))
		return view_speedscope(out, p, tl, r->sample_type, r->filter,
				       r->profile, r->split, err);
	if (!strcmp(format, "gecko"))
		return view_gecko(out, p, tl, r->filter, r->profile, err);
	if (!strcmp(format, "pstats"))
		return view_pstats(out, p, r->sample_type, r->filter, err);
	if (!strcmp(format, "pprof")) {
		struct view_top_opts t = {
			.n_rows = r->n_rows ? r->n_rows : CMD_PPROF_ROWS,
			.sort = VIEW_SORT_FLAT,
			.by = (enum view_by)r->by,
			.sample_type = r->sample_type,
			.filter = r->filter,
			.level = r->level ? r->level : STATS_DEFAULT_LEVEL,
		};
		return view_pprof_intervals(out, p, &t, err);
	}
	char title[512];
	struct view_flame_opts f = { .sample_type = r->sample_type,
				     .filter = r->filter,
				     .by = (enum view_by)r->by,
				     .level = r->level };
	f.title = default_title(p, r->shown ? r->shown : r->profile, 0, title,
				sizeof(title));
	return view_flame(out, p, &f, err);
}

int cmd_convert_file(const struct convert_req *r)
{
	struct view_profile *p = NULL;
	struct timeline_data *tl = NULL;
	char err[ERR_LEN];
	struct sink out;
	int rc;

	/* pprof's comments hold top's table: its text escaped as top's */
	p = load(r->profile, !strcmp(r->format, "pprof"));
	if (!p)
		return -EINVAL;
	if (r->split && !has_time_label(p))
		log_warn("%s has no time label (not a CPU profile of ours?): "
			 "--split adds no [native] or [system] frame",
			 r->profile);
	if (r->timeline) {
		rc = timeline_read(r->timeline, &tl, err);
		if (rc < 0) {
			log_error("%s: %s", r->timeline, err);
			goto out;
		}
		if (tl->profile_time_nanos != p->time_nanos)
			log_warn("%s was not recorded with %s (profile times "
				 "differ); its locations may not match",
				 r->timeline, r->profile);
		if (tl->n_dropped)
			log_warn("%s: %llu samples were not kept (memory "
				 "cap)",
				 r->timeline,
				 (unsigned long long)tl->n_dropped);
	}
	rc = sink_open(&out, r->output);
	if (rc < 0) {
		log_error("out of memory");
		goto out;
	}
	rc = convert_render(out.f, r, p, tl, err);
	rc = sink_finish(&out, rc, r->profile, err);
out:
	timeline_data_free(tl);
	view_free(p);
	return rc;
}

int cmd_format_ok(const char *format)
{
	return !strcmp(format, "folded") || !strcmp(format, "speedscope") ||
	       !strcmp(format, "svg") || !strcmp(format, "gecko") ||
	       !strcmp(format, "pstats");
}

/* --format otlp: every sample type, every sample, so the options that
 * pick or group samples do not apply. */
static int convert_otlp(const char *cmd, const struct vopts *o)
{
	if (o->sample_type || o->filter.n || o->by || o->timeline ||
	    o->split)
		return usage_error(cmd, "--format otlp takes every sample: "
					"no --sample-type, --tag, --by, "
					"--timeline or --split");
	if (o->service_name && !o->service_name[0])
		return usage_error(cmd, "--service-name accepts a non-empty "
					"name");
	return cmd_convert_otlp(o->args[0], o->service_name, o->output) < 0
		       ? CMD_EXIT_ERROR
		       : 0;
}

int cmd_convert(int argc, char **argv)
{
	static const char cmd[] = "pyprof convert";
	struct vopts o = { 0 };
	int rc;

	rc = parse(cmd, argc, argv, &o, cmd_convert_usage, "onABCIJMNOP");
	if (rc >= 0)
		return rc;
	if (o.n_args != 1)
		return usage_error(cmd, "give exactly one PROFILE");
	if (!o.format)
		return usage_error(cmd, "--format is required: folded, "
					"speedscope, svg, gecko, pstats, pprof "
					"or otlp");
	if (!strcmp(o.format, "otlp"))
		return convert_otlp(cmd, &o);
	if (!cmd_format_ok(o.format) && strcmp(o.format, "pprof"))
		return usage_error(cmd, "--format accepts folded, "
					"speedscope, svg, gecko, pstats, pprof "
					"or otlp, not '%s'",
				   o.format);
	if (o.service_name)
		return usage_error(cmd, "--service-name goes with --format "
					"otlp");
	if (o.timeline && strcmp(o.format, "speedscope") &&
	    strcmp(o.format, "gecko"))
		return usage_error(cmd, "--timeline goes with --format "
					"speedscope or gecko");
	/* The Firefox Profiler's samples have times, which only the
	 * timeline holds. */
	if (!o.timeline && !strcmp(o.format, "gecko"))
		return usage_error(cmd, "--format gecko needs --timeline FILE "
					"(the timeline recorded with PROFILE)");
	/* The timeline's records carry sample counts and no labels. */
	if (o.sample_type && !strcmp(o.format, "gecko"))
		return usage_error(cmd, "--format gecko weighs samples by "
					"their count: no --sample-type");
	if (o.split && strcmp(o.format, "folded") &&
	    strcmp(o.format, "speedscope"))
		return usage_error(cmd, "--split goes with --format folded or "
					"speedscope, not %s%s",
				   o.format,
				   strcmp(o.format, "svg")
					   ? ""
					   : " (the flame graph is coloured by "
					     "it already)");
	if (!strcmp(o.format, "pprof") && !o.intervals)
		return usage_error(cmd, "--format pprof writes the profile "
					"with top's table in its comments: "
					"give --intervals");
	if (o.intervals && strcmp(o.format, "pprof"))
		return usage_error(cmd, "--intervals goes with --format pprof "
					"(svg's tooltips have them already)");
	if (o.n_rows && strcmp(o.format, "pprof"))
		return usage_error(cmd, "-n goes with --format pprof");
	if (o.level && strcmp(o.format, "pprof") && strcmp(o.format, "svg"))
		return usage_error(cmd, "--confidence goes with --format svg "
					"or pprof");
	struct convert_req r = {
		.profile = o.args[0],
		.timeline = o.timeline,
		.format = o.format,
		.sample_type = o.sample_type,
		.filter = &o.filter,
		.by = o.by,
		.split = o.split,
		.level = o.level,
		.intervals = o.intervals,
		.n_rows = o.n_rows,
		.output = o.output,
	};
	rc = cmd_convert_file(&r);
	return rc < 0 ? CMD_EXIT_ERROR : 0;
}

/* ---- pyprof diff --------------------------------------------------------------- */

/* pyprof diff --test: reads every profile, runs the test; exit status 0,
 * 1 (a change fails the test) or 2 (an error of any kind, so that CI can
 * tell "slower" from "broken"). */
static int diff_test(const char *cmd, const struct vopts *o, char **after,
		     int n_after)
{
	struct view_diff_opts d = { 0 };
	size_t n_before = (size_t)o->n_args, n_prof, n_failing = 0;
	struct view_profile **prof;
	char err[ERR_LEN];
	int rc = 0;

	if (!after && o->n_args == 2) {
		/* BEFORE AFTER without --, one profile a side */
		after = o->args + 1;
		n_after = 1;
		n_before = 1;
	}
	if (!after || n_before == 0 || n_after <= 0)
		return usage_error(cmd, "--test takes BEFORE... -- AFTER... "
					"(at least one profile a side)");
	if (o->output)
		return usage_error(cmd, "--test prints a table: no -o");
	n_prof = n_before + (size_t)n_after;
	prof = calloc(n_prof, sizeof(*prof));
	if (!prof)
		return USAGE_EXIT;
	for (size_t i = 0; i < n_prof && rc == 0; i++) {
		prof[i] = load(i < n_before ? o->args[i] : after[i - n_before],
			       1);
		rc = prof[i] ? 0 : -EINVAL;
	}
	d.n_rows = o->n_rows;
	d.sample_type = o->sample_type;
	d.filter = &o->filter;
	d.by = o->by;
	d.sort = o->sort_given ? o->sort : VIEW_SORT_CUM;
	d.level = o->level ? o->level : STATS_DEFAULT_LEVEL;
	d.fail_on_increase = o->fail_on_increase;
	if (rc == 0) {
		rc = view_diff_test(stdout,
				    (const struct view_profile *const *)prof,
				    n_before, (size_t)n_after, &d, &n_failing,
				    err);
		if (rc < 0)
			log_error("%s", err);
	}
	if (fflush(stdout) != 0 && rc == 0) {
		log_error("writing standard output: %s", strerror(errno));
		rc = -EIO;
	}
	for (size_t i = 0; i < n_prof; i++)
		view_free(prof[i]);
	free(prof);
	if (rc < 0)
		return USAGE_EXIT;
	return n_failing ? 1 : 0;
}

int cmd_diff(int argc, char **argv)
{
	static const char cmd[] = "pyprof diff";
	struct vopts o = { 0 };
	struct view_diff_opts d = { 0 };
	struct view_profile *base = NULL, *cur = NULL;
	char err[ERR_LEN];
	struct sink out;
	char **after = NULL;
	int rc, n_after = 0;

	/* BEFORE... -- AFTER...: the options and BEFORE come before --;
	 * getopt would drop the -- and with it where AFTER starts. */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			after = argv + i + 1;
			n_after = argc - i - 1;
			argc = i;
			break;
		}
	rc = parse(cmd, argc, argv, &o, cmd_diff_usage, "onABCDKLPQR");
	if (rc >= 0)
		return rc;
	if (o.test)
		return diff_test(cmd, &o, after, n_after);
	if (after || o.level || o.fail_on_increase >= 0)
		return usage_error(cmd, "BEFORE... -- AFTER..., --confidence "
					"and --fail-on-increase go with --test");
	if (o.n_args != 2)
		return usage_error(cmd, "give two profiles: BASE NEW");
	base = load(o.args[0], 1);
	cur = base ? load(o.args[1], 1) : NULL;
	rc = -EINVAL;
	if (!base || !cur)
		goto out;
	d.n_rows = o.n_rows;
	d.sample_type = o.sample_type;
	d.filter = &o.filter;
	d.by = o.by;
	d.compare = o.compare;
	d.sort = o.sort_given ? o.sort : VIEW_SORT_CUM;
	rc = view_diff_table(stdout, base, cur, &d, err);
	if (rc < 0) {
		log_error("%s", err);
		goto out;
	}
	fflush(stdout);
	if (o.output && strcmp(o.output, "-")) {
		rc = sink_open(&out, o.output);
		if (rc < 0)
			goto out;
		rc = view_diff_flame(out.f, base, cur, &d, err);
		rc = sink_finish(&out, rc, NULL, err);
	}
out:
	view_free(base);
	view_free(cur);
	return rc < 0 ? CMD_EXIT_ERROR : 0;
}
