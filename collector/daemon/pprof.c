/*
 * pprof.c - the pprof builder (see pprof.h for what goes into a profile).
 *
 * A profile is built from pprof_builder.h's pieces (the arena, the string
 * table, functions, locations and mappings made on first use, labels),
 * one small encoder per message: samples per process, comments, sample
 * and period types, mappings, tables, time, period; then packed and
 * gzipped. Allocation failures set the builder's sticky flag, checked
 * once before packing (like wire.h's ok flag), which keeps the building
 * code straight-line.
 *
 * A sample's stack is the node path from its leaf to the root: pprof wants
 * location ids leaf first, which is the order of the walk.
 */
#include "daemon/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arith.h"
#include "common/clock.h"
#include "daemon/agg.h"
#include "common/fileio.h"
#include "common/grow.h"
#include "common/gunzip.h"
#include "daemon/heapagg.h"
#include "common/idhash.h"
#include "symbols/opcodes.h"
#include "daemon/pprof_builder.h"
#include "daemon/proc.h"
#include "common/log.h"
#include "profile.pb-c.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

#define PPROF_MAX_PROC_COMMENTS 64 /* processes described in comments */
#define PPROF_MAX_LABELS 9
#define PPROF_HEAP_TYPES 6 /* alloc, inuse and peak: objects and space */

/* ---- samples --------------------------------------------------------------- */

/* The labels every sample of one process carries. */
struct proc_labels {
	Label *pid, *process, *command;
};

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* A sample with n_val values (2 for CPU profiles, 6 for heap ones), room
 * for the collector's labels and those of label set lsid (0: none). */
static Sample *new_sample_n(struct builder *b, size_t n_loc,
			    const int64_t *v, size_t n_val, uint32_t lsid)
{
	size_t n_set = 0;
	Label **set = lsid ? pb_set_labels(b, lsid, &n_set) : NULL;
	Sample *s = pb_balloc(b, sizeof(*s));
	uint64_t *locs = pb_balloc(b, n_loc * sizeof(*locs));
	int64_t *vals = pb_balloc(b, n_val * sizeof(*vals));
	Label **labels = pb_balloc(b, (PPROF_MAX_LABELS + n_set) *
					      sizeof(*labels));
	if (!s || !locs || !vals || !labels)
		return NULL;
	perftools__profiles__sample__init(s);
	memcpy(vals, v, n_val * sizeof(*vals));
	s->n_value = n_val;
	s->value = vals;
	s->n_location_id = n_loc;
	s->location_id = locs;
	s->label = labels;
	/* the set's labels; the caller appends the collector's own */
	if (n_set) {
		if (!set)
			return NULL;
		memcpy(labels, set, n_set * sizeof(*labels));
		s->n_label = n_set;
	}
	pb_ptrs_push(b, &b->samples, s);
	return s;
}

/* A CPU or wall sample: count and value. */
static Sample *new_sample(struct builder *b, size_t n_loc, uint64_t count,
			  uint64_t value, uint32_t lsid)
{
	const int64_t v[2] = { clamp64(count), clamp64(value) };
	return new_sample_n(b, n_loc, v, 2, lsid);
}

/* Whether label set lsid is 0 or one the symtab holds (pb_stack_ok's
 * counterpart: the decoder lets no other through). */
static int labels_ok(const struct symtab *st, uint32_t lsid)
{
	return lsid <= symtab_n_labels(st);
}

static void append_utf8(char *buf, size_t cap, size_t *len, const char *s);

/* pid, and with proc_labels the process name and its command line. */
static struct proc_labels proc_labels(struct builder *b, const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	struct proc_labels pl = { 0 };
	char *cmd;
	size_t len = 0;

	pl.pid = pb_num_label(b, "pid", (int64_t)in->pid);
	if (!b->proc_labels)
		return pl;
	pl.process = pb_str_label(b, "process", pb_sid_idx(b, in->comm_sid));
	cmd = pb_balloc(b, PPROF_MAX_COMMAND + 1);
	if (!cmd)
		return pl;
	cmd[0] = 0;
	for (size_t i = 0; i < in->n_args; i++) {
		if (i)
			append_utf8(cmd, PPROF_MAX_COMMAND + 1, &len, " ");
		append_utf8(cmd, PPROF_MAX_COMMAND + 1, &len,
			    symtab_string(b->st, in->arg_sids[i]));
	}
	pl.command = pb_str_label(b, "command", pb_str_idx(b, cmd));
	return pl;
}

static void add_proc_labels(Sample *s, const struct proc_labels *pl)
{
	s->label[s->n_label++] = pl->pid;
	if (pl->process)
		s->label[s->n_label++] = pl->process;
	if (pl->command)
		s->label[s->n_label++] = pl->command;
}

/* The labels a sample's flags give it: off-CPU (wall mode), GIL,
 * native, and its time's kind (CPU mode); none for block and mutex
 * records but native. */
static void add_flag_labels(struct builder *b, Sample *s, uint32_t flags)
{
	if (b->mode == WIRE_MODE_WALL && !b->wait_want)
		s->label[s->n_label++] =
			pb_flag_label(b, (flags & WIRE_SF_OFF_CPU) ? 1 : 0);
	if ((flags & WIRE_SF_GIL_KNOWN) && !b->wait_want)
		s->label[s->n_label++] =
			pb_flag_label(b, (flags & WIRE_SF_GIL) ? 2 : 3);
	if (flags & WIRE_SF_NATIVE_KNOWN)
		s->label[s->n_label++] =
			pb_flag_label(b, (flags & WIRE_SF_NATIVE) ? 4 : 5);
	if ((flags & WIRE_SF_TIME_KNOWN) && b->mode != WIRE_MODE_WALL &&
	    !b->wait_want)
		s->label[s->n_label++] =
			pb_flag_label(b, (flags & WIRE_SF_TIME_SYSTEM)	 ? 8
					 : (flags & WIRE_SF_TIME_NATIVE) ? 7
									 : 6);
}

static void add_proc_samples(struct builder *b, const struct proc *p,
			     struct pprof_stats *stats)
{
	const struct agg *agg = proc_agg(p);
	const struct agg_entry *e;
	uint32_t n_threads = proc_n_threads(p);
	struct thread_labels *tl = NULL;
	struct proc_labels pl = proc_labels(b, p);
	Label *op_labels[256] = { 0 }; /* "opcode" labels, made on first use */
	size_t pos = 0;

	tl = calloc((size_t)n_threads + 1, sizeof(*tl));
	if (!tl) {
		b->oom = 1;
		return;
	}
	while (!b->oom && (e = agg_next(agg, &pos))) {
		if ((e->flags & b->wait_flags) != b->wait_want)
			continue;
		if (b->one_thread && e->thread >= 1 && e->thread <= n_threads) {
			uint64_t tid;
			uint32_t name;
			proc_thread(p, e->thread, &tid, &name);
			if (tid != b->tid)
				continue;
		}
		if (e->thread == 0 || e->thread > n_threads ||
		    !pb_stack_ok(b->st, e->node) ||
		    !labels_ok(b->st, e->labels)) {
			stats->n_refused++;
			continue;
		}
		uint32_t depth = symtab_node_depth(b->st, e->node);
		int trunc = (e->flags & WIRE_SF_TRUNCATED) != 0;
		Sample *s = new_sample(b, depth + (size_t)trunc, e->count,
				       e->value, e->labels);
		if (!s)
			break;
		size_t i = 0;
		for (uint32_t nid = e->node, lid; nid;) {
			symtab_node(b->st, nid, &nid, &lid);
			s->location_id[i++] = pb_location_id(b, lid);
		}
		if (trunc)
			s->location_id[i++] = pb_pseudo_location(b, "[truncated]");

		struct thread_labels *t = &tl[e->thread];
		if (!t->tid) {
			uint64_t tid;
			uint32_t name;
			proc_thread(p, e->thread, &tid, &name);
			t->tid = pb_num_label(b, "thread_id", (int64_t)tid);
			if (name)
				t->name = pb_str_label(b, "thread_name",
						       pb_sid_idx(b, name));
		}
		add_proc_labels(s, &pl);
		s->label[s->n_label++] = t->tid;
		if (t->name)
			s->label[s->n_label++] = t->name;
		add_flag_labels(b, s, e->flags);
		if (e->flags & WIRE_SF_OPCODE) {
			unsigned op = agg_entry_opcode(e);
			if (!op_labels[op])
				op_labels[op] = pb_opcode_label(b, p, op);
			s->label[s->n_label++] = op_labels[op];
		}
		stats->samples += e->count;
	}
	free(tl);
}

static void add_lost_samples(struct builder *b, const struct proc *p,
			     struct pprof_stats *stats)
{
	static const char *const names[PROC_LOST_MAX + 1] = {
		[WIRE_LOST_RING_FULL] = "[lost: ring full]",
		[WIRE_LOST_FAULT] = "[lost: faulted read]",
		[WIRE_LOST_BUFFER] = "[lost: buffer full]",
		[WIRE_LOST_INVALID] = "[lost: invalid stack]",
		[WIRE_LOST_NO_THREAD] = "[lost: no thread state]",
		[WIRE_LOST_FD_CLOSED] = "[lost: descriptor closed]",
		[PROC_LOST_AWAY] = "[lost: collector away]",
		[PROC_LOST_NOT_WRITTEN] = "[lost: not written]",
	};
	struct proc_labels pl = { 0 };
	for (unsigned r = 1; r <= PROC_LOST_MAX; r++) {
		uint64_t count, value;
		proc_lost(p, r, &count, &value);
		if (count == 0 && value == 0)
			continue;
		if (!pl.pid)
			pl = proc_labels(b, p);
		Sample *s = new_sample(b, 1, count, value, 0);
		if (!s)
			return;
		s->location_id[0] = pb_pseudo_location(b, names[r]);
		add_proc_labels(s, &pl);
		stats->lost += count;
	}
}

/* Rounds an unbiased value to the profile's integers. */
static int64_t heap_val(double v)
{
	if (!(v > 0))
		return 0;
	if (v >= 9.2e18)
		return INT64_MAX;
	return (int64_t)(v + 0.5);
}

/* The heap profile of one process (pprof_opts.heap). */
static void add_heap_samples(struct builder *b, const struct proc *p,
			     struct pprof_stats *stats)
{
	const struct heapagg *h = proc_heap(p);
	struct heapagg_row *rows = NULL, lost;
	struct proc_labels pl;
	size_t n = 0;

	if (!h)
		return;
	if (heapagg_rows(h, &rows, &n, &lost) < 0) {
		b->oom = 1;
		return;
	}
	pl = proc_labels(b, p);
	for (size_t i = 0; i <= n && !b->oom; i++) {
		const struct heapagg_row *r = i < n ? &rows[i] : &lost;
		int64_t v[PPROF_HEAP_TYPES] = {
			heap_val(r->alloc_objects), heap_val(r->alloc_bytes),
			heap_val(r->inuse_objects), heap_val(r->inuse_bytes),
			heap_val(r->peak_objects), heap_val(r->peak_bytes)
		};
		if (!v[0] && !v[1] && !v[2] && !v[3] && !v[4] && !v[5])
			continue;
		if (r->node && (!pb_stack_ok(b->st, r->node) ||
				!labels_ok(b->st, r->labels))) {
			stats->n_refused++;
			continue;
		}
		uint32_t depth = r->node ? symtab_node_depth(b->st, r->node)
					 : 1;
		Sample *s = new_sample_n(b, depth, v, PPROF_HEAP_TYPES,
					 r->labels);
		if (!s)
			break;
		if (r->node) {
			size_t k = 0;
			for (uint32_t nid = r->node, lid; nid;) {
				symtab_node(b->st, nid, &nid, &lid);
				s->location_id[k++] = pb_location_id(b, lid);
			}
			stats->samples += (uint64_t)v[0];
		} else {
			s->location_id[0] =
				pb_pseudo_location(b, "[lost: heap samples]");
			stats->lost += (uint64_t)v[0];
		}
		add_proc_labels(s, &pl);
	}
	free(rows);
}

/* ---- comments --------------------------------------------------------------- */

/* Appends s to buf (cap bytes, NUL-terminated) without cutting a UTF-8
 * sequence in half. Control characters become spaces: a `python -c`
 * program's newlines would break pprof's one-comment-per-line output. */
static void append_utf8(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);
	if (*len + n + 1 > cap) {
		n = cap - *len - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		buf[*len + i] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	*len += n;
	buf[*len] = 0;
}

/* What measured a process's CPU time, as its profile's comment says it. */
static const char *cpu_source_name(uint64_t source)
{
	switch (source) {
	case WIRE_CPU_TIMERS:
		return "per-thread CPU timers (user and system time)";
	case WIRE_CPU_PERF_USER:
		return "perf_event counters of user time only (time in the "
		       "kernel is not sampled)";
	case WIRE_CPU_CLOCKS:
		return "the threads' CPU clocks, read by the library's own "
		       "thread (user and system time)";
	case WIRE_CPU_PERF_CLOCK:
		return "perf_event counters, each thread sampled where it "
		       "runs (user time; system time from its CPU clock)";
	case WIRE_CPU_ONCPU:
		return "the threads' CPU clocks, read by the library's own "
		       "thread, each charged where it is found running "
		       "(user and system time)";
	case WIRE_CPU_OUTSIDE:
		return "pyprof reading the process from outside, each thread "
		       "charged where the kernel says it is running (user "
		       "and system time)";
	default:
		return "an unknown source";
	}
}

static void add_proc_comments(struct builder *b, const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	char *cmd = pb_balloc(b, PPROF_MAX_COMMENT);
	size_t len = 0;
	if (!cmd)
		return;
	cmd[0] = 0;
	append_utf8(cmd, PPROF_MAX_COMMENT, &len, "pid ");
	char pidbuf[24];
	snprintf(pidbuf, sizeof(pidbuf), "%" PRIu64, in->pid);
	append_utf8(cmd, PPROF_MAX_COMMENT, &len, pidbuf);
	append_utf8(cmd, PPROF_MAX_COMMENT, &len, " command:");
	for (size_t i = 0; i < in->n_args; i++) {
		append_utf8(cmd, PPROF_MAX_COMMENT, &len, " ");
		append_utf8(cmd, PPROF_MAX_COMMENT, &len,
			    symtab_string(b->st, in->arg_sids[i]));
	}
	pb_add_comment(b, pb_str_idx(b, cmd));
	pb_add_comment(b, pb_str_fmt(b, "pid %" PRIu64 " executable: %s, Python %s, "
					"%s mode at %" PRIu64 " Hz",
				     in->pid, symtab_string(b->st, in->exe_sid),
				     symtab_string(b->st, in->pyversion_sid),
				     in->mode == WIRE_MODE_WALL ? "wall" : "cpu",
				     hz_of(in->period_ns)));
	if (in->achieved_ns && in->achieved_ns != in->period_ns)
		pb_add_comment(b, pb_str_fmt(b, "pid %" PRIu64 ": sampling rate "
						"asked %" PRIu64 " Hz, achieved "
						"%" PRIu64 " Hz",
					     in->pid,
					     hz_of(in->period_ns),
					     hz_of(in->achieved_ns)));
	if (in->has_bye && in->bye.cpu_source)
		pb_add_comment(b, pb_str_fmt(b, "pid %" PRIu64 ": CPU time from "
						"%s",
					     in->pid,
					     cpu_source_name(in->bye.cpu_source)));
	if (in->has_bye && in->bye.has_native)
		pb_add_comment(b, pb_str_fmt(b, "pid %" PRIu64 ": native stacks, "
						"%" PRIu64 " samples not merged",
					     in->pid, in->bye.native_unmerged));
}

/* ---- packing ---------------------------------------------------------------- */

/* ---- the profile, one message at a time ------------------------------------ */

/* The ValueType messages: sample types and the period type. */
struct value_types {
	ValueType count, time, period, heap[PPROF_HEAP_TYPES];
	ValueType *cpu_types[2], *heap_types[PPROF_HEAP_TYPES];
};

/* The start and end of what the profile covers, and the heap rate. */
struct span {
	uint64_t start, end, heap_rate;
};

/* The builder's maps from symtab ids; -ENOMEM if one is missing. */
static int builder_init(struct builder *b, const struct symtab *st,
			const struct pprof_opts *opts,
			const struct proc_info *first)
{
	b->st = st;
	b->mode = first		     ? first->mode
		  : opts->empty_wall ? WIRE_MODE_WALL
				     : WIRE_MODE_CPU;
	b->proc_labels = opts->proc_labels;
	b->one_thread = opts->one_thread;
	b->tid = opts->tid;
	b->wait_flags = WIRE_SF_WAITS;
	b->wait_want = opts->waits == PPROF_WAITS_BLOCK	  ? WIRE_SF_WAIT_BLOCK
		       : opts->waits == PPROF_WAITS_MUTEX ? WIRE_SF_WAIT_MUTEX
							  : 0;
	idhash_init(&b->str_hash);
	b->sid_idx = calloc((size_t)symtab_n_strings(st) + 1, sizeof(uint32_t));
	b->fid_map = calloc((size_t)symtab_n_functions(st) + 1,
			    sizeof(uint32_t));
	b->lid_map = calloc((size_t)symtab_n_locations(st) + 1,
			    sizeof(uint32_t));
	b->mid_map = calloc((size_t)symtab_n_mappings(st) + 1,
			    sizeof(uint32_t));
	b->mid_unnamed = calloc((size_t)symtab_n_mappings(st) + 1, 1);
	b->set_labels = calloc((size_t)symtab_n_labels(st) + 1,
			       sizeof(*b->set_labels));
	if (!b->sid_idx || !b->fid_map || !b->lid_map || !b->mid_map ||
	    !b->mid_unnamed || !b->set_labels)
		return -ENOMEM;
	pb_ptrs_push(b, &b->strs, (void *)""); /* string index 0 */
	return 0;
}

/* Frees what builder_init and the encoders allocated; hands the location
 * map to stats when asked for and the profile was built (err 0). */
static void builder_fini(struct builder *b, int err,
			 const struct pprof_opts *opts,
			 struct pprof_stats *stats)
{
	free(b->sid_idx);
	free(b->fid_map);
	if (err == 0 && opts->want_loc_map) {
		stats->loc_map = b->lid_map;
		stats->n_loc_map = (size_t)symtab_n_locations(b->st) + 1;
		b->lid_map = NULL;
	}
	free(b->lid_map);
	free(b->mid_map);
	free(b->mid_unnamed);
	free(b->set_labels);
	free(b->maps.v);
	free(b->strs.v);
	free(b->funcs.v);
	free(b->locs.v);
	free(b->samples.v);
	free(b->comments);
	idhash_fini(&b->str_hash);
	pb_arena_free(&b->arena);
}

/* sample_type, default_sample_type and period_type. Their strings are
 * the first of the string table, in this order. */
static void encode_sample_types(struct builder *b,
				const struct pprof_opts *opts,
				struct value_types *vt, Profile *prof)
{
	static const char *const heap_names[PPROF_HEAP_TYPES][2] = {
		{ "alloc_objects", "count" },
		{ "alloc_space", "bytes" },
		{ "inuse_objects", "count" },
		{ "inuse_space", "bytes" },
		{ "peak_objects", "count" },
		{ "peak_space", "bytes" },
	};
	const char *kind = b->mode == WIRE_MODE_WALL ? "wall" : "cpu";

	vt->count.type = pb_str_idx(b, "samples");
	vt->count.unit = pb_str_idx(b, "count");
	vt->time.type = pb_str_idx(b, kind);
	vt->time.unit = pb_str_idx(b, "nanoseconds");
	vt->period.type = vt->time.type;
	vt->period.unit = vt->time.unit;
	vt->cpu_types[0] = &vt->count;
	vt->cpu_types[1] = &vt->time;
	prof->n_sample_type = 2;
	prof->sample_type = vt->cpu_types;
	prof->period_type = &vt->period;
	if (opts->waits) {
		vt->count.type = pb_str_idx(b, "contentions");
		vt->time.type = pb_str_idx(b, "delay");
		vt->period.type = vt->count.type;
		vt->period.unit = vt->count.unit;
		return;
	}
	if (!opts->heap)
		return;
	for (int i = 0; i < PPROF_HEAP_TYPES; i++) {
		vt->heap[i].type = pb_str_idx(b, heap_names[i][0]);
		vt->heap[i].unit = pb_str_idx(b, heap_names[i][1]);
		vt->heap_types[i] = &vt->heap[i];
	}
	vt->period.type = pb_str_idx(b, "space");
	vt->period.unit = pb_str_idx(b, "bytes");
	b->one_thread = 0;
	prof->n_sample_type = PPROF_HEAP_TYPES;
	prof->sample_type = vt->heap_types;
	prof->default_sample_type = vt->heap[opts->heap_allocs ? 1 : 3].type;
}

/* Mapping 1: the first process's executable (its name is interned
 * before any sample's strings). */
static void encode_main_mapping(struct builder *b,
				const struct proc_info *first, Mapping *map)
{
	map->id = 1;
	map->filename = first ? pb_sid_idx(b, first->exe_sid) : 0;
	map->has_functions = map->has_filenames = map->has_line_numbers = 1;
}

/* Samples (with the functions, locations, native mappings and strings
 * they use) and the comments of each process; the processes' span. */
static void encode_processes(struct builder *b,
			     const struct proc *const *procs, size_t n,
			     const struct pprof_opts *opts,
			     struct pprof_stats *stats, struct span *sp)
{
	for (size_t i = 0; i < n && !b->oom; i++) {
		const struct proc_info *in = proc_info(procs[i]);
		uint64_t e = proc_end_unix_ns(procs[i]);
		uint64_t from = in->from_unix_ns ? in->from_unix_ns
						 : in->start_unix_ns;
		if (from < sp->start)
			sp->start = from;
		if (e > sp->end)
			sp->end = e;
		if (opts->heap) {
			add_heap_samples(b, procs[i], stats);
			if (!sp->heap_rate && proc_heap(procs[i]))
				sp->heap_rate =
					heapagg_rate_of(proc_heap(procs[i]));
		} else {
			add_proc_samples(b, procs[i], stats);
			if (!b->one_thread && !opts->waits)
				add_lost_samples(b, procs[i], stats);
		}
		if (i < PPROF_MAX_PROC_COMMENTS)
			add_proc_comments(b, procs[i]);
	}
}

/* The comments about the profile as a whole, after the processes'. */
static void encode_profile_comments(struct builder *b, size_t n)
{
	if (b->one_thread)
		pb_add_comment(b, pb_str_fmt(b, "thread %" PRIu64 " only (one "
						"profile per thread; lost samples "
						"are in the process's profile)",
					     b->tid));
	if (n > PPROF_MAX_PROC_COMMENTS)
		pb_add_comment(b, pb_str_fmt(b, "%zu more processes not described "
						"here",
					     n - PPROF_MAX_PROC_COMMENTS));
}

/* Every mapping: the main one, then the native ones the samples used. */
static void encode_mappings(struct builder *b, Mapping *main_map,
			    Profile *prof)
{
	/* a mapping "has functions" only if every address in it was named */
	for (uint32_t mid = 1; mid <= symtab_n_mappings(b->st); mid++)
		if (b->mid_map[mid] && b->mid_unnamed[mid])
			((Mapping *)b->maps.v[b->mid_map[mid] - 2])
				->has_functions = 0;
	Mapping **all = pb_balloc(b, (1 + b->maps.n) * sizeof(*all));
	if (!all)
		return;
	all[0] = main_map;
	for (size_t i = 0; i < b->maps.n; i++)
		all[1 + i] = b->maps.v[i];
	prof->n_mapping = 1 + b->maps.n;
	prof->mapping = all;
}

/* The repeated messages the encoders collected. */
static void encode_tables(const struct builder *b, Profile *prof)
{
	prof->n_sample = b->samples.n;
	prof->sample = (Sample **)b->samples.v;
	prof->n_location = b->locs.n;
	prof->location = (Location **)b->locs.v;
	prof->n_function = b->funcs.n;
	prof->function = (Function **)b->funcs.v;
	prof->n_string_table = b->strs.n;
	prof->string_table = (char **)b->strs.v;
	prof->n_comment = b->n_comments;
	prof->comment = b->comments;
}

/* time_nanos and duration_nanos: the window asked for, or the processes'
 * span, or now for an empty profile. */
static void encode_time(const struct pprof_opts *opts, size_t n,
			struct span sp, Profile *prof)
{
	if (opts->end_unix_ns) {
		sp.start = opts->start_unix_ns;
		sp.end = opts->end_unix_ns;
	} else if (n == 0) {
		sp.start = sp.end = now_unix_ns();
	}
	prof->time_nanos = clamp64(sp.start);
	prof->duration_nanos = sp.end > sp.start ? clamp64(sp.end - sp.start)
						 : 0;
}

/* period: bytes per heap sample, or the first process's period. */
static void encode_period(const struct pprof_opts *opts,
			  const struct proc_info *first,
			  const struct span *sp, Profile *prof)
{
	prof->period = opts->waits  ? 1
		       : opts->heap ? clamp64(sp->heap_rate)
		       : first	    ? clamp64(first->period_ns)
				    : 0;
}

/* Packs and gzips prof into *out (malloc'ed). 0 or -errno. */
static int pack_profile(const Profile *prof, void **out, size_t *out_len)
{
	size_t len = perftools__profiles__profile__get_packed_size(prof);
	uint8_t *packed = malloc(len ? len : 1);
	int err;

	if (!packed)
		return -ENOMEM;
	perftools__profiles__profile__pack(prof, packed);
	{
		uint8_t *gz = NULL;
		err = gzip_mem(packed, len, &gz, out_len);
		if (err == 0)
			*out = gz;
	}
	free(packed);
	return err;
}

int pprof_build(const struct symtab *st, const struct proc *const *procs,
		size_t n, const struct pprof_opts *opts, void **out,
		size_t *out_len, struct pprof_stats *stats)
{
	static const struct pprof_opts no_opts;
	static const ValueType vt_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	struct builder b = { 0 };
	struct pprof_stats local = { 0 };
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Mapping map = PERFTOOLS__PROFILES__MAPPING__INIT;
	struct value_types vt;
	struct span sp = { UINT64_MAX, 0, 0 };
	const struct proc_info *first;
	int err = -ENOMEM;

	if (!stats)
		stats = &local;
	if (!opts)
		opts = &no_opts;
	*stats = (struct pprof_stats){ 0 };
	vt.count = vt.time = vt.period = vt_init;
	for (size_t i = 0; i < PPROF_HEAP_TYPES; i++)
		vt.heap[i] = vt_init;
	/* No process: a valid CPU profile with no samples, so that a caller
	 * asking for a merged file always gets one. */
	first = n ? proc_info(procs[0]) : NULL;
	if (builder_init(&b, st, opts, first) < 0)
		goto out;
	encode_sample_types(&b, opts, &vt, &prof);
	encode_main_mapping(&b, first, &map);
	encode_processes(&b, procs, n, opts, stats, &sp);
	encode_profile_comments(&b, n);
	encode_mappings(&b, &map, &prof);
	if (b.oom)
		goto out;
	encode_tables(&b, &prof);
	encode_time(opts, n, sp, &prof);
	encode_period(opts, first, &sp, &prof);
	stats->time_nanos = prof.time_nanos;
	if ((err = pack_profile(&prof, out, out_len)) < 0)
		goto out;
	stats->n_samples = b.samples.n;
	stats->bytes = *out_len;
	if (stats->n_refused)
		log_warn("profile: %zu stacks left out: they refer to symbols "
			 "the collector does not hold (a collector bug; please "
			 "report it)",
			 stats->n_refused);
out:
	builder_fini(&b, err, opts, stats);
	return err;
}

int pprof_has_waits(const struct proc *const *procs, size_t n, int kind)
{
	uint32_t want = kind == PPROF_WAITS_BLOCK ? WIRE_SF_WAIT_BLOCK
						  : WIRE_SF_WAIT_MUTEX;
	for (size_t i = 0; i < n; i++) {
		const struct agg_entry *e;
		size_t pos = 0;
		while ((e = agg_next(proc_agg(procs[i]), &pos)))
			if (e->flags & want)
				return 1;
	}
	return 0;
}

int pprof_write(const struct symtab *st, const struct proc *const *procs,
		size_t n, const struct pprof_opts *opts, const char *path,
		int how, struct pprof_stats *stats)
{
	void *data = NULL;
	size_t len = 0;
	int err = pprof_build(st, procs, n, opts, &data, &len, stats);
	if (err)
		goto out;
	err = file_write_atomic(path, data, len, how);
out:
	free(data);
	return err;
}
