/*
 * view_gecko.c - the Firefox Profiler's processed profile format, version
 * VIEW_GECKO_VERSION (meta.preprocessedProfileVersion; the format is the
 * type Profile of src/types/profile.ts in github.com/firefox-devtools/
 * profiler, its changes in docs-developer/CHANGELOG-formats.md). The
 * profiler upgrades older versions as it loads them, so a file of this
 * version keeps loading in later releases.
 *
 * The format is time-based: every thread's samples have times. A pprof
 * profile has none, so this view needs the timeline recorded with it
 * (timeline_file.h); names, files and lines come from the profile.
 *
 * What is written:
 * - meta: the version, the sampling interval (the profile's period), the
 *   start time (the first sample's, Unix ms), categories (Other, the
 *   default the format requires, grey; Python; Off-CPU; Native and
 *   System, the split: a record's leaf frame is in the category its
 *   flags' time says, so that a sample's category, which the profiler
 *   takes from its stack's leaf frame, is the kind of its time) and one
 *   marker schema;
 * - shared: the string array, the sources (one per file), functions (one
 *   per function of the profile: name, file, start line), frames (one per
 *   function and line), stacks (prefix tree, parents first, each naming
 *   its parent by prefixOffset as version 66 asks), and the tables the
 *   format requires though we have nothing for them (resources, native
 *   symbols, source locations), empty;
 * - threads: one per (pid, thread id), named from the profile's
 *   thread_name labels, with its samples in time order (time in ms from
 *   meta.startTime, weight the record's sample count) and its markers.
 * Markers are what the timeline knows of: in wall mode a record says
 * whether the thread was off the CPU, and each run of such samples is one
 * "Off-CPU" interval marker (from its first sample to the thread's next
 * sample). Garbage collections and lock waits are not in the timeline
 * (waits go to their own profiles), so they have no markers.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "common/timeline_file.h"
#include "pyprof/wire.h"

#define GK_NAME_LEN 256

/* The name of the Off-CPU markers: one array, so that its address, by
 * which strings are interned, is the same wherever it is used. */
static const char gk_offcpu[] = "Off-CPU";

/* The categories written, by index (the split's last, so that the
 * others keep the indexes they had). */
enum { GK_CAT_OTHER,
       GK_CAT_PYTHON,
       GK_CAT_OFFCPU,
       GK_CAT_NATIVE,
       GK_CAT_SYSTEM };

/* A frame's kind of time, in the low bits of its (func, line) pair's
 * second number: the leaf frame of a record whose flags say its time
 * was native or system is a frame of its own, in that category. */
#define GK_KIND_BITS 2
enum { GK_KIND_DEFAULT,
       GK_KIND_NATIVE,
       GK_KIND_SYSTEM };

/* The kind of time record flags say its leaf ran (docs/reading.md,
 * "Python, native and system time"). */
static unsigned kind_of(uint32_t flags)
{
	if (!(flags & WIRE_SF_TIME_KNOWN))
		return GK_KIND_DEFAULT;
	if (flags & WIRE_SF_TIME_SYSTEM)
		return GK_KIND_SYSTEM;
	return flags & WIRE_SF_TIME_NATIVE ? GK_KIND_NATIVE : GK_KIND_DEFAULT;
}

/* An interned table of pairs of numbers: index of each distinct pair in
 * the order first seen. Strings, sources, frames and stacks are all
 * such pairs. */
struct pairs {
	uint64_t (*v)[2];
	size_t n, cap;
	struct idhash h;
};

static int pair_eq(const void *ctx, uint32_t id)
{
	const uint64_t *want = ((const uint64_t *const *)ctx)[0];
	const struct pairs *t = ((const struct pairs *const *)ctx)[1];

	return t->v[id - 1][0] == want[0] && t->v[id - 1][1] == want[1];
}

/* The index of (a, b), added if new; -1 when memory ran out. */
static int64_t pair_get(struct pairs *t, uint64_t a, uint64_t b)
{
	uint64_t want[2] = { a, b };
	const void *ctx[2] = { want, t };
	uint64_t h = idhash_combine(idhash_mix(a), b);
	uint32_t id = idhash_find(&t->h, h, pair_eq, ctx);

	if (id)
		return id - 1;
	if (grow_array(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 256) < 0 ||
	    idhash_insert(&t->h, h, (uint32_t)t->n + 1) < 0)
		return -1;
	t->v[t->n][0] = a;
	t->v[t->n][1] = b;
	return (int64_t)t->n++;
}

static void pairs_fini(struct pairs *t)
{
	free(t->v);
	idhash_fini(&t->h);
}

/* One thread of the output and its records, in time order. */
struct lane {
	uint64_t pid, tid;
	char name[GK_NAME_LEN];
	size_t *recs;
	size_t n, cap;
};

struct gk {
	FILE *out;
	const struct view_profile *p;
	const struct timeline_data *tl;
	const struct view_keys *keys;
	const uint32_t *kmap;
	/* strings by pointer (a, 0): the profile's strings live as long as
	 * it does, and equal strings at two addresses only cost a repeat */
	struct pairs strings;
	struct pairs sources; /* (string index of the file, 0) */
	int64_t *func_of_key; /* -1 until used */
	uint32_t *func_key;   /* func index -> key, UINT32_MAX: [truncated] */
	size_t n_funcs;
	int64_t trunc_func;  /* -1 until used */
	struct pairs frames; /* (func, line + 1; 0 no line) */
	struct pairs stacks; /* (prefix + 1; 0 a root, frame) */
	struct lane *lanes;
	size_t n_lanes, lanes_cap;
	struct idhash lane_hash;
	int64_t *rec_stack; /* per record kept: its output stack */
	int64_t start_ns;   /* the first sample's time */
	double interval_ms;
};

static int lane_eq(const void *ctx, uint32_t id)
{
	const uint64_t *k = ((const uint64_t *const *)ctx)[0];
	const struct gk *g = ((const struct gk *const *)ctx)[1];

	return g->lanes[id - 1].pid == k[0] && g->lanes[id - 1].tid == k[1];
}

static struct lane *lane_find(struct gk *g, uint64_t pid, uint64_t tid,
			      int add)
{
	uint64_t key[2] = { pid, tid };
	const void *ctx[2] = { key, g };
	uint64_t h = idhash_combine(idhash_mix(pid), tid);
	uint32_t id = idhash_find(&g->lane_hash, h, lane_eq, ctx);
	struct lane *l;

	if (id || !add)
		return id ? &g->lanes[id - 1] : NULL;
	if (grow_array(&g->lanes, &g->lanes_cap, g->n_lanes + 1,
		       sizeof(*g->lanes), 16) < 0 ||
	    idhash_insert(&g->lane_hash, h, (uint32_t)g->n_lanes + 1) < 0)
		return NULL;
	l = &g->lanes[g->n_lanes++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->tid = tid;
	return l;
}

/* ---- JSON --------------------------------------------------------------------- */

static void json_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', out);
	while (*s) {
		size_t n = *s < 0x80 ? 1 : (*s & 0xe0) == 0xc0 ? 2
				   : (*s & 0xf0) == 0xe0       ? 3
				   : (*s & 0xf8) == 0xf0       ? 4
							       : 0;
		size_t i;
		if (*s == '"' || *s == '\\') {
			fprintf(out, "\\%c", *s++);
			continue;
		}
		if (*s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\u%04x", *s++);
			continue;
		}
		for (i = 1; n > 1 && i < n; i++)
			if ((s[i] & 0xc0) != 0x80)
				n = 0;
		if (n == 0 || (n > 1 && (*s < 0xc2 || *s > 0xf4))) {
			/* not UTF-8: JSON must be, so a replacement */
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		fwrite(s, 1, n, out);
		s += n;
	}
	putc('"', out);
}

/* A column of n integers given by f(g, i), or null where f says -1 and
 * nulls is set. */
static void int_column(struct gk *g, const char *name, size_t n,
		       int64_t (*f)(const struct gk *, size_t, int),
		       int arg, int first)
{
	fprintf(g->out, "%s\"%s\":[", first ? "" : ",", name);
	for (size_t i = 0; i < n; i++) {
		int64_t v = f(g, i, arg);
		if (v == INT64_MIN)
			fprintf(g->out, "%snull", i ? "," : "");
		else
			fprintf(g->out, "%s%" PRId64, i ? "," : "", v);
	}
	fputs("]", g->out);
}

/* A column of n copies of text (null, false, -1...). */
static void same_column(FILE *out, const char *name, size_t n,
			const char *text)
{
	fprintf(out, ",\"%s\":[", name);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "," : "", text);
	fputs("]", out);
}

/* ---- interning ------------------------------------------------------------------ */

static int64_t str_index(struct gk *g, const char *s)
{
	return pair_get(&g->strings, (uint64_t)(uintptr_t)s, 0);
}

static int64_t func_of(struct gk *g, uint32_t key)
{
	int64_t *slot = key == UINT32_MAX ? &g->trunc_func
					  : &g->func_of_key[key];

	if (*slot < 0) {
		g->func_key[g->n_funcs] = key;
		*slot = (int64_t)g->n_funcs++;
	}
	return *slot;
}

/* The output stack of a record: its frames (leaf first in the profile)
 * added root first, each stack naming its prefix. -1: out of memory. */
static int64_t rec_stack(struct gk *g, const struct timeline_rec *r,
			 char *err)
{
	const struct timeline_data *tl = g->tl;
	const uint64_t *locs = tl->locs + tl->stack_first[r->stack];
	int64_t prefix = -1;

	if (r->flags & WIRE_SF_TRUNCATED) {
		int64_t fr = pair_get(&g->frames, (uint64_t)func_of(g, UINT32_MAX),
				      0);
		prefix = fr < 0 ? -1 : pair_get(&g->stacks, 0, (uint64_t)fr);
		if (prefix < 0)
			return -ENOMEM;
	}
	/* locations leaf first, and a location's lines callee first: both
	 * walked backwards to go root first */
	for (uint32_t i = tl->stack_len[r->stack]; i-- > 0;) {
		uint32_t first, cnt;
		uint64_t kind;
		if (view_find_location(g->p, locs[i], &first, &cnt) < 0) {
			snprintf(err, ERR_LEN, "the timeline names "
					       "location %" PRIu64 ", which the profile does "
					       "not have (not the profile it was recorded "
					       "with?)",
				 locs[i]);
			return -EINVAL;
		}
		for (uint32_t k = cnt; k-- > 0;) {
			const struct view_frame *f = &g->p->frames[first + k];
			int64_t fn = func_of(g, g->kmap[first + k]);
			kind = i == 0 && k == 0 ? kind_of(r->flags) : 0;
			kind |= (f->line > 0 ? (uint64_t)f->line + 1 : 0)
				<< GK_KIND_BITS;
			int64_t fr = pair_get(&g->frames, (uint64_t)fn, kind);
			int64_t st = fr < 0 ? -1
					    : pair_get(&g->stacks,
						       (uint64_t)(prefix + 1),
						       (uint64_t)fr);
			if (st < 0)
				return -ENOMEM;
			prefix = st;
		}
	}
	/* an empty stack: the format's stack may be null */
	return prefix < 0 ? INT64_MIN : prefix;
}

/* ---- the records ------------------------------------------------------------------ */

static const struct timeline_data *sort_tl;

static int cmp_rec(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int64_t tx = sort_tl->recs[x].time_ns, ty = sort_tl->recs[y].time_ns;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	/* arrival order breaks ties, so that equal times keep it */
	return x < y ? -1 : x > y;
}

static int filter_ok(const struct view_filter *f, char *err)
{
	for (size_t i = 0; f && i < f->n; i++) {
		const char *k = f->tags[i].key;
		size_t len = (size_t)(f->tags[i].value - 1 - k);
		if ((len == 3 && !memcmp(k, "pid", 3)) ||
		    (len == 9 && !memcmp(k, "thread_id", 9)))
			continue;
		snprintf(err, ERR_LEN, "--format gecko reads the "
				       "timeline, whose samples have no labels: --tag may "
				       "only name pid and thread_id");
		return -EINVAL;
	}
	return 0;
}

static int rec_passes(const struct timeline_rec *r,
		      const struct view_filter *f)
{
	char pid[24], tid[24];
	struct view_label lb[2] = { { "pid", pid, 0, "" },
				    { "thread_id", tid, 0, "" } };
	struct view_sample s = { .labels = lb, .n_labels = 2 };

	if (!f || !f->n)
		return 1;
	snprintf(pid, sizeof(pid), "%" PRIu64, r->pid);
	snprintf(tid, sizeof(tid), "%" PRIu64, r->tid);
	return view_sample_matches(&s, f);
}

/* The records into lanes in time order, each with its output stack. */
static int collect(struct gk *g, const struct view_filter *f, char *err)
{
	const struct timeline_data *tl = g->tl;
	int have_start = 0;

	for (size_t i = 0; i < tl->n_records; i++) {
		const struct timeline_rec *r = &tl->recs[i];
		struct lane *l;
		if (r->count <= 0 || !rec_passes(r, f))
			continue;
		l = lane_find(g, r->pid, r->tid, 1);
		if (!l || grow_array(&l->recs, &l->cap, l->n + 1,
				     sizeof(*l->recs), 256) < 0)
			return -ENOMEM;
		l->recs[l->n++] = i;
		g->rec_stack[i] = rec_stack(g, r, err);
		if (g->rec_stack[i] < 0 && g->rec_stack[i] != INT64_MIN)
			return (int)g->rec_stack[i];
		if (!have_start || r->time_ns < g->start_ns)
			g->start_ns = r->time_ns;
		have_start = 1;
	}
	sort_tl = tl;
	for (size_t i = 0; i < g->n_lanes; i++)
		qsort(g->lanes[i].recs, g->lanes[i].n, sizeof(size_t), cmp_rec);
	sort_tl = NULL;
	return 0;
}

/* Thread names from the profile's labels. */
static void name_lanes(struct gk *g)
{
	char pid[32], tid[32], name[GK_NAME_LEN];

	for (size_t i = 0; i < g->p->n_samples; i++) {
		const struct view_sample *s = &g->p->samples[i];
		struct lane *l;
		if (!view_sample_label(s, "pid", pid, sizeof(pid)) ||
		    !view_sample_label(s, "thread_id", tid, sizeof(tid)))
			continue;
		l = lane_find(g, strtoull(pid, NULL, 10),
			      strtoull(tid, NULL, 10), 0);
		if (l && !l->name[0] &&
		    view_sample_label(s, "thread_name", name, sizeof(name)))
			snprintf(l->name, sizeof(l->name), "%s", name);
	}
}

/* ---- writing ----------------------------------------------------------------------- */

static double ms_of(const struct gk *g, int64_t ns)
{
	return (double)(ns - g->start_ns) / 1e6;
}

static void write_meta(struct gk *g, const char *name)
{
	FILE *out = g->out;

	/* meta.version is the Gecko (unprocessed) format's version a profile
	 * came from; ours came from none, so it is the one the profiler's
	 * release of processed version 70 writes itself (getEmptyProfile). */
	fprintf(out, "{\"meta\":{\"preprocessedProfileVersion\":%d,"
		     "\"version\":36,\"interval\":%.6f,\"startTime\":%.3f,"
		     "\"processType\":0,\"product\":",
		VIEW_GECKO_VERSION, g->interval_ms,
		(double)g->start_ns / 1e6);
	json_str(out, name ? name : "pyprof profile");
	fputs(",\"importedFrom\":\"pyprof\",\"stackwalk\":0,"
	      "\"symbolicated\":true,\"keepProfileThreadOrder\":true,\n"
	      "\"categories\":["
	      "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":"
	      "[\"Other\"]},"
	      "{\"name\":\"Python\",\"color\":\"yellow\",\"subcategories\":"
	      "[\"Other\"]},"
	      "{\"name\":\"Off-CPU\",\"color\":\"transparent\","
	      "\"subcategories\":[\"Other\"]},"
	      "{\"name\":\"Native\",\"color\":\"orange\",\"subcategories\":"
	      "[\"Other\"]},"
	      "{\"name\":\"System\",\"color\":\"red\",\"subcategories\":"
	      "[\"Other\"]}],\n\"markerSchema\":["
	      "{\"name\":\"OffCPU\",\"tooltipLabel\":\"Off-CPU\","
	      "\"tableLabel\":\"Off-CPU\",\"chartLabel\":\"Off-CPU\","
	      "\"display\":[\"marker-chart\",\"marker-table\","
	      "\"timeline-overview\"],\"fields\":[],\"description\":"
	      "\"The thread was not running (wall-mode samples taken off "
	      "the CPU)\"}]},\n\"libs\":[],\n",
	      out);
}

static int64_t col_stack_frame(const struct gk *g, size_t i, int arg)
{
	(void)arg;
	return (int64_t)g->stacks.v[i][1];
}

static int64_t col_stack_prefix(const struct gk *g, size_t i, int arg)
{
	(void)arg;
	/* stacks are added after their prefix, so the offset is positive */
	return g->stacks.v[i][0] ? (int64_t)i - (int64_t)(g->stacks.v[i][0] - 1)
				 : 0;
}

static int64_t col_frame(const struct gk *g, size_t i, int what)
{
	uint64_t fn = g->frames.v[i][0];

	switch (what) {
	case 0: /* func */
		return (int64_t)fn;
	case 1: /* line */
		return g->frames.v[i][1] >> GK_KIND_BITS
			       ? (int64_t)(g->frames.v[i][1] >> GK_KIND_BITS) - 1
			       : INT64_MIN;
	default: /* category */
		switch (g->frames.v[i][1] & ((1u << GK_KIND_BITS) - 1)) {
		case GK_KIND_NATIVE:
			return GK_CAT_NATIVE;
		case GK_KIND_SYSTEM:
			return GK_CAT_SYSTEM;
		}
		return g->func_key[fn] == UINT32_MAX ? GK_CAT_OTHER
						     : GK_CAT_PYTHON;
	}
}

/* Function columns; names and sources are interned while writing the
 * frame table, before the strings are written. */
static int64_t *func_name, *func_source;

static int64_t col_func(const struct gk *g, size_t i, int what)
{
	uint32_t k = g->func_key[i];

	switch (what) {
	case 0:
		return func_name[i];
	case 1:
		return func_source[i] < 0 ? INT64_MIN : func_source[i];
	default: /* start line */
		return k != UINT32_MAX && g->keys->v[k].line > 0
			       ? g->keys->v[k].line
			       : INT64_MIN;
	}
}

static int64_t col_source(const struct gk *g, size_t i, int arg)
{
	(void)arg;
	return (int64_t)g->sources.v[i][0];
}

static int intern_funcs(struct gk *g)
{
	func_name = malloc((g->n_funcs + 1) * sizeof(*func_name));
	func_source = malloc((g->n_funcs + 1) * sizeof(*func_source));
	if (!func_name || !func_source)
		return -ENOMEM;
	for (size_t i = 0; i < g->n_funcs; i++) {
		uint32_t k = g->func_key[i];
		const char *file = k == UINT32_MAX ? "" : g->keys->v[k].file;
		int64_t fs;
		func_name[i] = str_index(g, k == UINT32_MAX
						    ? "[truncated]"
						    : g->keys->v[k].name);
		func_source[i] = -1;
		if (func_name[i] < 0)
			return -ENOMEM;
		if (!file[0])
			continue;
		fs = str_index(g, file);
		func_source[i] = fs < 0 ? -1
					: pair_get(&g->sources, (uint64_t)fs, 0);
		if (func_source[i] < 0)
			return -ENOMEM;
	}
	return 0;
}

static void write_shared(struct gk *g)
{
	FILE *out = g->out;
	size_t n;

	fputs("\"shared\":{\n\"stackTable\":{", out);
	int_column(g, "frame", g->stacks.n, col_stack_frame, 0, 1);
	int_column(g, "prefixOffset", g->stacks.n, col_stack_prefix, 0, 0);
	fprintf(out, ",\"length\":%zu},\n\"frameTable\":{", g->stacks.n);
	n = g->frames.n;
	int_column(g, "func", n, col_frame, 0, 1);
	int_column(g, "line", n, col_frame, 1, 0);
	int_column(g, "category", n, col_frame, 2, 0);
	same_column(out, "subcategory", n, "0");
	same_column(out, "address", n, "-1");
	same_column(out, "lib", n, "-1");
	same_column(out, "inlineDepth", n, "0");
	same_column(out, "nativeSymbol", n, "null");
	same_column(out, "innerWindowID", n, "null");
	same_column(out, "column", n, "null");
	same_column(out, "originalLocation", n, "null");
	fprintf(out, ",\"length\":%zu},\n\"funcTable\":{", n);
	n = g->n_funcs;
	int_column(g, "name", n, col_func, 0, 1);
	same_column(out, "isJS", n, "false");
	same_column(out, "relevantForJS", n, "false");
	same_column(out, "resource", n, "-1");
	int_column(g, "source", n, col_func, 1, 0);
	int_column(g, "lineNumber", n, col_func, 2, 0);
	same_column(out, "columnNumber", n, "null");
	same_column(out, "originalLocation", n, "null");
	fprintf(out, ",\"length\":%zu},\n", n);
	fputs("\"resourceTable\":{\"length\":0,\"name\":[],\"host\":[],"
	      "\"type\":[]},\n\"nativeSymbols\":{\"libIndex\":[],"
	      "\"address\":[],\"name\":[],\"functionSize\":[],\"length\":0},\n"
	      "\"sourceLocationTable\":{\"source\":[],\"line\":[],"
	      "\"column\":[],\"length\":0},\n\"sources\":{",
	      out);
	n = g->sources.n;
	fprintf(out, "\"length\":%zu", n);
	same_column(out, "id", n, "null");
	int_column(g, "filename", n, col_source, 0, 0);
	same_column(out, "startLine", n, "1");
	same_column(out, "startColumn", n, "1");
	same_column(out, "sourceMapURL", n, "null");
	same_column(out, "content", n, "null");
	fputs("},\n\"stringArray\":[", out);
	for (size_t i = 0; i < g->strings.n; i++) {
		if (i)
			putc(',', out);
		json_str(out, (const char *)(uintptr_t)g->strings.v[i][0]);
	}
	fputs("]},\n", out);
}

/* The Off-CPU markers of lane l: runs of its records flagged off the
 * CPU, each from its first sample to the lane's next (or one interval
 * past its last). Two passes: the count, then the columns. */
static void write_markers(struct gk *g, const struct lane *l)
{
	FILE *out = g->out;
	static const char *const cols[] = { "startTime", "endTime", "name",
					    "phase", "category", "data" };
	int64_t off_name = str_index(g, gk_offcpu);
	size_t n = 0;

	for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
		size_t m = 0;
		fprintf(out, "%s\"%s\":[", c ? "," : "", cols[c]);
		for (size_t i = 0; i < l->n;) {
			size_t j = i;
			double end;
			while (j < l->n && (g->tl->recs[l->recs[j]].flags &
					    WIRE_SF_OFF_CPU))
				j++;
			if (j == i) {
				i++;
				continue;
			}
			end = j < l->n ? ms_of(g, g->tl->recs[l->recs[j]].time_ns)
				       : ms_of(g, g->tl->recs[l->recs[j - 1]]
							  .time_ns) +
						 g->interval_ms;
			if (m++)
				putc(',', out);
			switch (c) {
			case 0:
				fprintf(out, "%.6f", ms_of(g, g->tl->recs[l->recs[i]].time_ns));
				break;
			case 1:
				fprintf(out, "%.6f", end);
				break;
			case 2:
				fprintf(out, "%" PRId64, off_name);
				break;
			case 3:
				fputs("1", out); /* an interval */
				break;
			case 4:
				fprintf(out, "%d", GK_CAT_OFFCPU);
				break;
			default:
				fputs("{\"type\":\"OffCPU\"}", out);
			}
			i = j;
		}
		fputs("]", out);
		n = m;
	}
	fprintf(out, ",\"length\":%zu}", n);
}

static void write_threads(struct gk *g)
{
	FILE *out = g->out;
	char name[GK_NAME_LEN + 32];

	fputs("\"threads\":[", out);
	for (size_t li = 0; li < g->n_lanes; li++) {
		const struct lane *l = &g->lanes[li];
		double last = l->n ? ms_of(g, g->tl->recs[l->recs[l->n - 1]]
						      .time_ns)
				   : 0;
		if (l->name[0])
			snprintf(name, sizeof(name), "%s", l->name);
		else
			snprintf(name, sizeof(name), "thread %" PRIu64, l->tid);
		fputs(li ? ",\n{" : "\n{", out);
		fputs("\"processType\":\"default\",\"name\":", out);
		json_str(out, name);
		fprintf(out, ",\"processName\":\"pid %" PRIu64 "\","
			     "\"pid\":\"%" PRIu64 "\",\"tid\":%" PRIu64 ","
			     /* CPython's main thread's id is its pid */
			     "\"isMainThread\":%s,\"processStartupTime\":0,"
			     "\"processShutdownTime\":%.6f,\"registerTime\":%.6f,"
			     "\"unregisterTime\":null,\"pausedRanges\":[],"
			     "\"showMarkersInTimeline\":true,\n\"samples\":{"
			     "\"weightType\":\"samples\",\"stack\":[",
			l->pid, l->pid, l->tid, l->tid == l->pid ? "true" : "false",
			last + g->interval_ms,
			l->n ? ms_of(g, g->tl->recs[l->recs[0]].time_ns) : 0.0);
		for (size_t i = 0; i < l->n; i++) {
			int64_t s = g->rec_stack[l->recs[i]];
			if (s == INT64_MIN)
				fprintf(out, "%snull", i ? "," : "");
			else
				fprintf(out, "%s%" PRId64, i ? "," : "", s);
		}
		fputs("],\"time\":[", out);
		for (size_t i = 0; i < l->n; i++)
			fprintf(out, "%s%.6f", i ? "," : "",
				ms_of(g, g->tl->recs[l->recs[i]].time_ns));
		fputs("],\"weight\":[", out);
		for (size_t i = 0; i < l->n; i++)
			fprintf(out, "%s%" PRId64, i ? "," : "",
				g->tl->recs[l->recs[i]].count);
		fprintf(out, "],\"length\":%zu},\n\"markers\":{", l->n);
		write_markers(g, l);
		fputs("}", out);
	}
	fputs("\n]}\n", out);
}

/* The sampling interval in ms: the profile's period when it is a time,
 * else 1 ms (the format needs one; it only scales the drawing). */
static double interval_ms(const struct view_profile *p)
{
	const char *u = p->period_type.unit;

	if (p->period <= 0 || !u)
		return 1;
	if (!strcmp(u, "nanoseconds"))
		return (double)p->period / 1e6;
	if (!strcmp(u, "microseconds"))
		return (double)p->period / 1e3;
	if (!strcmp(u, "milliseconds"))
		return (double)p->period;
	return 1;
}

int view_gecko(FILE *out, const struct view_profile *p,
	       const struct timeline_data *tl, const struct view_filter *filter,
	       const char *name, char *err)
{
	struct view_keys keys;
	struct gk g = { 0 };
	uint32_t *kmap = NULL;
	int rc;

	err[0] = 0;
	if (!tl) {
		snprintf(err, ERR_LEN, "--format gecko needs --timeline "
				       "FILE: the Firefox Profiler's samples have times, a "
				       "pprof profile has none");
		return -EINVAL;
	}
	rc = filter_ok(filter, err);
	if (rc < 0)
		return rc;
	view_keys_init(&keys, VIEW_BY_FUNCTION);
	idhash_init(&g.strings.h);
	idhash_init(&g.sources.h);
	idhash_init(&g.frames.h);
	idhash_init(&g.stacks.h);
	idhash_init(&g.lane_hash);
	rc = view_keys_map(&keys, p, &kmap);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	g.out = out;
	g.p = p;
	g.tl = tl;
	g.keys = &keys;
	g.kmap = kmap;
	g.trunc_func = -1;
	g.interval_ms = interval_ms(p);
	g.func_of_key = malloc((keys.n + 1) * sizeof(*g.func_of_key));
	g.func_key = malloc((keys.n + 1) * sizeof(*g.func_key));
	g.rec_stack = malloc((tl->n_records + 1) * sizeof(*g.rec_stack));
	if (!g.func_of_key || !g.func_key || !g.rec_stack)
		goto out;
	for (size_t i = 0; i < keys.n; i++)
		g.func_of_key[i] = -1;
	rc = collect(&g, filter, err);
	if (rc < 0)
		goto out;
	name_lanes(&g);
	rc = intern_funcs(&g);
	if (rc < 0 || str_index(&g, gk_offcpu) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	write_meta(&g, name);
	write_shared(&g);
	write_threads(&g);
	rc = ferror(out) ? -EIO : 0;
out:
	view_errno_text(rc, err);
	free(func_name);
	free(func_source);
	func_name = func_source = NULL;
	for (size_t i = 0; i < g.n_lanes; i++)
		free(g.lanes[i].recs);
	free(g.lanes);
	idhash_fini(&g.lane_hash);
	pairs_fini(&g.strings);
	pairs_fini(&g.sources);
	pairs_fini(&g.frames);
	pairs_fini(&g.stacks);
	free(g.func_of_key);
	free(g.func_key);
	free(g.rec_stack);
	free(kmap);
	view_keys_fini(&keys);
	return rc;
}
