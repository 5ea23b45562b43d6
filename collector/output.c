/*
 * output.c - writing profiles and forgetting processes (see output.h; the
 * file layout is described in collector.h).
 *
 * Windows. With --period P the window boundaries are the multiples of P
 * in Unix time (a 60 s period ends windows on the minute), so windows of
 * different processes, and of merged files, line up. A sample belongs to
 * the window in which it reached the collector (the library sends every
 * few tens of milliseconds), not to the one its timestamp falls in: a
 * window's aggregate is reset at its boundary, and re-sorting samples by
 * time would mean keeping two windows. The period timer runs on the
 * monotonic clock and names the boundary by rounding Unix time to the
 * nearest multiple of P, so a late timer still closes the right window
 * and a stalled loop skips windows instead of writing a burst of them.
 *
 * File names start with the process name and pid (or "merged") and end
 * with the window's start in UTC (YYYYmmddTHHMMSSZ), so `ls` lists each
 * process's files, and the merged files, in time order, across changes of
 * daylight saving time too. Two windows of one process never start in the
 * same second (P is whole seconds); a name that exists anyway (pid reuse,
 * two collectors on one directory) gets .1, .2... before .pb.gz, taken
 * without a race (FILEIO_NOREPLACE).
 *
 * Per-thread files (--per-thread) follow the profile they split, named
 * after it (collector.h): the threads of a process are those of its
 * aggregate with samples, each OS thread once whatever names it had, and
 * its file takes the last name it got. Each is a pprof_build of its own
 * (pprof_opts.one_thread), so a process with many threads costs as many
 * walks of its aggregate: a price only --per-thread pays.
 *
 * Memory. A process is freed as soon as what it sent is written (at its
 * disconnect, or with --merge at the end of the window it ended in).
 * After each removal, and at each boundary, procs_maybe_compact decides
 * whether to compact the shared symbol tables; freed memory is handed back
 * to the kernel with malloc_trim a little later (coalesced by a timer:
 * trimming walks the heap, and ten thousand processes may end in a
 * minute).
 */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg.h"
#include "collector.h"
#include "fileio.h"
#include "heapagg.h"
#include "log.h"
#include "loop.h"
#include "pprof.h"
#include "timeline.h"
#include "proc.h"
#include "pyprof/wire.h"
#include "symtab.h"

#define OUTPUT_MAX_NAME_TRIES 1000
#define OUTPUT_MAX_THREAD_NAME 64
#define OUTPUT_TRIM_DELAY_NS (200 * 1000000ull)

struct output {
	const struct collector_opts *opts;
	struct loop *loop;
	struct symtab *st;
	struct procs *reg;
	struct loop_timer *period_timer; /* --period: repeats */
	struct loop_timer *trim_timer;   /* pending malloc_trim, one-shot */
	uint64_t win_start_ns; /* the merged window's start, Unix ns */
	struct timeline *tl;   /* --timeline: samples in arrival order */
	int failed;
};

static uint64_t now_unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- memory ------------------------------------------------------------------ */

static void on_trim(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct output *o = arg;
	(void)loop;
	(void)t;
	o->trim_timer = NULL; /* a one-shot timer is freed after this */
	malloc_trim(0);
}

/* Memory was freed: give it back to the kernel soon. */
static void schedule_trim(struct output *o)
{
	if (!o->trim_timer)
		o->trim_timer = loop_add_timer(o->loop, OUTPUT_TRIM_DELAY_NS,
					       0, on_trim, o);
}

/* A process was freed: compact the symbol tables if they are now mostly
 * garbage. */
static void after_remove(struct output *o)
{
	procs_maybe_compact(o->reg, 0);
	schedule_trim(o);
}

/* ---- writing ----------------------------------------------------------------- */

/* comm reduced to [A-Za-z0-9_.-], not starting with '.', at most 64
 * characters; "python" if nothing is left. */
static void file_stem(const char *comm, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *s = comm; *s && n + 1 < cap && n < 64; s++) {
		char ch = *s;
		int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
			 (ch == '.' && n > 0);
		out[n++] = ok ? ch : '_';
	}
	out[n] = 0;
	if (n == 0 || strspn(out, "_") == n)
		snprintf(out, cap, "python");
}

/* YYYYmmddTHHMMSSZ: UTC, so that names sort by time all year. */
static void format_stamp(uint64_t unix_ns, char *buf, size_t cap)
{
	time_t t = (time_t)(unix_ns / 1000000000u);
	struct tm tm;
	if (!gmtime_r(&t, &tm) ||
	    strftime(buf, cap, "%Y%m%dT%H%M%SZ", &tm) == 0)
		snprintf(buf, cap, "%lld", (long long)t);
}

/* ---- one profile per thread (--per-thread) ---------------------------------- */

/* A thread's name reduced to [A-Za-z0-9_-] (a dot too becomes '_', so
 * that the file name's fields stay apart), at most
 * OUTPUT_MAX_THREAD_NAME bytes; "" if nothing but '_' is left. */
static void thread_stem(const char *name, char *out, size_t cap)
{
	size_t n = 0;
	for (const char *s = name; *s && n + 1 < cap &&
				   n < OUTPUT_MAX_THREAD_NAME; s++) {
		char ch = *s;
		int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
		out[n++] = ok ? ch : '_';
	}
	out[n] = 0;
	if (strspn(out, "_") == n)
		out[0] = 0;
}

struct thread_ref {
	uint64_t tid;
	uint32_t idx;   /* the process's thread number (proc.h) */
	int named;      /* that number has a name */
};

/* By tid; then unnamed numbers first, each part in order of arrival. */
static int thread_ref_cmp(const void *a, const void *b)
{
	const struct thread_ref *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->named != y->named)
		return x->named - y->named;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The OS threads of p with samples in its aggregate, each once, by tid,
 * with the thread number of the last name it got (a rename adds a
 * number; so does a thread that the library sends unnamed again, as when
 * it ends: such a number does not hide its name). Returns how many (*out
 * malloc'd, the caller frees it), or -ENOMEM. */
static long proc_threads_with_samples(const struct proc *p,
				      struct thread_ref **out)
{
	uint32_t n_threads = proc_n_threads(p);
	uint8_t *has = calloc((size_t)n_threads + 1, 1);
	struct thread_ref *v = calloc((size_t)n_threads + 1, sizeof(*v));
	const struct agg_entry *e;
	size_t pos = 0, n = 0, k = 0;

	if (!has || !v) {
		free(has);
		free(v);
		return -ENOMEM;
	}
	while ((e = agg_next(proc_agg(p), &pos)))
		if (e->count && e->thread >= 1 && e->thread <= n_threads)
			has[e->thread] = 1;
	for (uint32_t i = 1; i <= n_threads; i++) {
		uint32_t name;
		if (!has[i])
			continue;
		proc_thread(p, i, &v[n].tid, &name);
		v[n].named = name != 0;
		v[n++].idx = i;
	}
	free(has);
	qsort(v, n, sizeof(*v), thread_ref_cmp);
	/* keep the last of each tid: its last named number, if any */
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || v[i + 1].tid != v[i].tid)
			v[k++] = v[i];
	*out = v;
	return (long)k;
}

/* One profile per thread of p with samples, beside the profile written
 * as <base>.pb.gz (po its options): <base>[.pid<PID>].tid<TID>[.<thread>]
 * .pb.gz, with .pid<PID> when with_pid (a profile of several processes).
 * how is FILEIO_NOREPLACE or FILEIO_REPLACE, as for the whole profile.
 * Failures are logged and remembered; the other threads are still
 * written. */
static void write_thread_files(struct output *o, const char *base,
			       const struct proc *p,
			       const struct pprof_opts *po, int with_pid,
			       int how)
{
	const struct proc_info *in = proc_info(p);
	const struct proc *one[1] = { p };
	struct thread_ref *v = NULL;
	long n = proc_threads_with_samples(p, &v);

	if (n < 0) {
		log_error("pid %" PRIu64 ": per-thread profiles: out of memory",
			  in->pid);
		o->failed = 1;
		return;
	}
	for (long i = 0; i < n; i++) {
		struct pprof_opts tpo = *po;
		struct pprof_stats stats;
		char pidpart[32] = "", tname[OUTPUT_MAX_THREAD_NAME + 2] = "";
		char path[4096];
		uint64_t tid;
		uint32_t name;
		int rc;

		proc_thread(p, v[i].idx, &tid, &name);
		if (name) {
			tname[0] = '.';
			thread_stem(symtab_string(o->st, name), tname + 1,
				    sizeof(tname) - 1);
			if (!tname[1])
				tname[0] = 0;
		}
		if (with_pid)
			snprintf(pidpart, sizeof(pidpart), ".pid%" PRIu64,
				 in->pid);
		if ((size_t)snprintf(path, sizeof(path),
				     "%s%s.tid%" PRIu64 "%s.pb.gz", base,
				     pidpart, tid, tname) >= sizeof(path)) {
			rc = -ENAMETOOLONG;
		} else {
			tpo.one_thread = 1;
			tpo.tid = tid;
			tpo.want_loc_map = 0;
			rc = pprof_write(o->st, one, 1, &tpo, path, how,
					 &stats);
		}
		if (rc < 0) {
			log_error("pid %" PRIu64 " thread %" PRIu64 ": cannot "
				  "write its profile beside %s.pb.gz: %s",
				  in->pid, tid, base, strerror(-rc));
			o->failed = 1;
			continue;
		}
		log_info("wrote %s: %" PRIu64 " samples (pid %" PRIu64
			 ", thread %" PRIu64 ")", path, stats.samples, in->pid,
			 tid);
	}
	free(v);
}


/* Whether any of list[0..n) has a heap profile to write. */
static int any_heap(const struct proc *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (heapagg_has_data(proc_heap(list[i])))
			return 1;
	return 0;
}

/* Beside the CPU profile cpu_path (NAME.pb.gz, or any name), the heap
 * profile of list[0..n) as NAME.heap.pb.gz, when one of them has heap
 * data. who names it in log lines. */
static void write_heap_beside(struct output *o, const char *cpu_path,
			      const struct proc *const *list, size_t n,
			      const struct pprof_opts *po, const char *who)
{
	struct pprof_opts hpo = *po;
	struct pprof_stats stats;
	char base[4096], path[4096 + 16];
	int rc;

	if (!any_heap(list, n))
		return;
	hpo.heap = 1;
	hpo.want_loc_map = 0;
	output_file_base(cpu_path, base, sizeof(base));
	snprintf(path, sizeof(path), "%s.heap.pb.gz", base);
	rc = pprof_write(o->st, list, n, &hpo, path, FILEIO_REPLACE, &stats);
	if (rc < 0) {
		log_error("%s: cannot write its heap profile %s: %s", who,
			  path, strerror(-rc));
		o->failed = 1;
		return;
	}
	log_info("wrote %s: %" PRIu64 " allocations (estimated), %" PRIu64
		 " lost (%s)", path, stats.samples, stats.lost, who);
}

/* Builds the profile of list[0..n) and writes it as a new file
 * <dir>/<stem>.<stamp>[.N].pb.gz, then with --per-thread its threads'
 * files. who names it in log lines. 0 or a negative errno (logged, and
 * remembered as a failure). */
static int write_new_file(struct output *o, const char *stem,
			  uint64_t stamp_ns, const struct proc *const *list,
			  size_t n, const struct pprof_opts *po,
			  const char *who)
{
	char stamp[32], path[4096] = "";
	struct pprof_stats stats;
	void *data = NULL;
	size_t len = 0;
	int rc;

	rc = pprof_build(o->st, list, n, po, &data, &len, &stats);
	if (rc < 0) {
		log_error("%s: cannot build its profile: %s", who,
			  strerror(-rc));
		goto out;
	}
	format_stamp(stamp_ns, stamp, sizeof(stamp));
	for (int i = 0; i < OUTPUT_MAX_NAME_TRIES; i++) {
		char suffix[16] = "";
		if (i > 0)
			snprintf(suffix, sizeof(suffix), ".%d", i);
		if ((size_t)snprintf(path, sizeof(path), "%s/%s.%s%s.pb.gz",
				     o->opts->output_dir, stem, stamp,
				     suffix) >= sizeof(path)) {
			rc = -ENAMETOOLONG;
			break;
		}
		rc = file_write_atomic(path, data, len, FILEIO_NOREPLACE);
		if (rc != -EEXIST)
			break;
	}
	if (rc < 0) {
		log_error("%s: cannot write its profile %s: %s", who, path,
			  strerror(-rc));
		goto out;
	}
	log_info("wrote %s: %" PRIu64 " samples, %" PRIu64 " lost (%s)", path,
		 stats.samples, stats.lost, who);
	write_heap_beside(o, path, list, n, po, who);
	if (o->opts->per_thread) {
		path[strlen(path) - strlen(".pb.gz")] = 0;
		for (size_t i = 0; i < n; i++)
			write_thread_files(o, path, list[i], po, n > 1,
					   FILEIO_NOREPLACE);
	}
out:
	if (rc < 0)
		o->failed = 1;
	free(data);
	return rc;
}

/* One process's profile: its whole life, or with --period its window up
 * to end_ns. */
static void write_proc(struct output *o, const struct proc *p, uint64_t end_ns)
{
	const struct proc_info *in = proc_info(p);
	const struct proc *one[1] = { p };
	struct pprof_opts po = { 0 };
	char comm[72], stem[96], who[64];

	if (o->opts->period_ns) {
		/* A window ends at its boundary at the latest, even when the
		 * timer runs late and the process leaves first. */
		uint64_t start = in->win_start_unix_ns, period = o->opts->period_ns;
		uint64_t limit = (start / period + 1) * period;
		po.start_unix_ns = start;
		po.end_unix_ns = end_ns < start ? start
			       : end_ns > limit ? limit : end_ns;
	}
	file_stem(symtab_string(o->st, in->comm_sid), comm, sizeof(comm));
	snprintf(stem, sizeof(stem), "%s.%" PRIu64, comm, in->pid);
	snprintf(who, sizeof(who), "pid %" PRIu64, in->pid);
	write_new_file(o, stem, in->win_start_unix_ns, one, 1, &po, who);
}

static int has_window_data(const struct proc *p)
{
	const struct proc_info *in = proc_info(p);
	return in->win_samples || in->win_lost ||
	       heapagg_has_data(proc_heap(p));
}

/* Fills list with the processes a merged profile takes: all of them, or
 * only those with data in the window; all in the first one's mode (a
 * profile has one sample type), the others left out with a warning. */
static size_t merged_list(const struct output *o, const struct proc **list,
			  int window_only, const char *target)
{
	size_t n = 0;
	unsigned mode = 0;
	for (struct proc *p = procs_first(o->reg); p; p = proc_next(p)) {
		const struct proc_info *in = proc_info(p);
		if (window_only && !has_window_data(p))
			continue;
		if (n == 0)
			mode = in->mode;
		if (in->mode != mode) {
			log_warn("pid %" PRIu64 " ran in %s mode, unlike the "
				 "first process (%s mode): left out of %s",
				 in->pid, in->mode == WIRE_MODE_WALL ? "wall"
								    : "cpu",
				 mode == WIRE_MODE_WALL ? "wall" : "cpu",
				 target);
			continue;
		}
		list[n++] = p;
	}
	return n;
}

/* --merge: one profile of every process with data in the window
 * [start_ns, end_ns] (end_ns 0: the processes' own times), labelled by
 * process. Nothing is written for a window without data. */
static void write_merged_window(struct output *o, uint64_t start_ns,
				uint64_t end_ns)
{
	struct pprof_opts po = { .proc_labels = 1 };
	const struct proc **list;
	char who[64];
	size_t n;

	list = calloc(procs_len(o->reg) + 1, sizeof(*list));
	if (!list) {
		log_error("merged profile: out of memory");
		o->failed = 1;
		return;
	}
	n = merged_list(o, list, 1, "the merged profile");
	if (n == 0) {
		log_debug("no samples in the window: no merged profile "
			  "written");
		goto out;
	}
	if (end_ns) {
		po.start_unix_ns = start_ns;
		po.end_unix_ns = end_ns > start_ns ? end_ns : start_ns;
	}
	snprintf(who, sizeof(who), "merged, %zu process%s", n,
		 n == 1 ? "" : "es");
	write_new_file(o, "merged", start_ns, list, n, &po, who);
out:
	free(list);
}

/* --timeline: the samples of the --output profile just written, in
 * arrival order, naming its Location ids (timeline.h). */
static void write_timeline(struct output *o, const struct pprof_stats *st)
{
	const char *path = o->opts->timeline_file;
	int rc = timeline_write(o->tl, o->st, st->loc_map, st->n_loc_map,
				st->time_nanos, path);

	if (rc < 0) {
		log_error("cannot write %s: %s", path, strerror(-rc));
		o->failed = 1;
		return;
	}
	log_info("wrote %s: %zu samples in arrival order%s", path,
		 timeline_len(o->tl), timeline_dropped(o->tl) ?
		 " (some dropped past the memory cap)" : "");
}

/* FILE without its .pb.gz (else .gz, else .pb) ending: what per-thread
 * files of --output FILE are named after. */
void output_file_base(const char *file, char *out, size_t cap)
{
	static const char *const ends[] = { ".pb.gz", ".gz", ".pb" };
	size_t len = strlen(file);
	snprintf(out, cap, "%s", file);
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		size_t e = strlen(ends[i]);
		const char *slash = strrchr(file, '/');
		size_t name_at = slash ? (size_t)(slash - file) + 1 : 0;
		/* not the whole name: "x/.gz" keeps its base */
		if (len > name_at + e && strcmp(file + len - e, ends[i]) == 0 &&
		    len - e < cap) {
			out[len - e] = 0;
			break;
		}
	}
}

/* --output: every process seen, in one file, replaced if it exists. */
static void write_output_file(struct output *o)
{
	const char *path = o->opts->output_file;
	struct pprof_opts po = { .proc_labels = 1,
				 .want_loc_map = o->tl != NULL };
	struct pprof_stats stats = { 0 };
	const struct proc **list;
	size_t n;
	int rc = -ENOMEM;

	list = calloc(procs_len(o->reg) + 1, sizeof(*list));
	if (!list)
		goto out;
	n = merged_list(o, list, 0, path);
	rc = pprof_write(o->st, list, n, &po, path, FILEIO_REPLACE, &stats);
	if (rc < 0)
		goto out;
	log_info("wrote %s: %" PRIu64 " samples, %" PRIu64 " lost, from %zu "
		 "processes", path, stats.samples, stats.lost, n);
	if (o->tl)
		write_timeline(o, &stats);
	write_heap_beside(o, path, list, n, &po, "all processes");
	if (o->opts->per_thread) {
		char base[4096];
		output_file_base(path, base, sizeof(base));
		for (size_t i = 0; i < n; i++)
			write_thread_files(o, base, list[i], &po, n > 1,
					   FILEIO_REPLACE);
	}
out:
	if (rc < 0) {
		log_error("cannot write %s: %s", path, strerror(-rc));
		o->failed = 1;
	}
	free(stats.loc_map);
	free(list);
}

static void write_summary(struct output *o, uint64_t n_running)
{
	char line[160], running[40] = "";
	/* running=N only when some were: the line stays what it was */
	if (n_running)
		snprintf(running, sizeof(running), " running=%" PRIu64,
			 n_running);
	int n = snprintf(line, sizeof(line),
			 "processes=%" PRIu64 " samples=%" PRIu64
			 " lost=%" PRIu64 "%s\n",
			 procs_n_seen(o->reg), procs_total_samples(o->reg),
			 procs_total_lost(o->reg), running);
	int rc = file_write_atomic(o->opts->summary_file, line, (size_t)n,
				   FILEIO_REPLACE);
	if (rc < 0) {
		log_error("cannot write %s: %s", o->opts->summary_file,
			  strerror(-rc));
		o->failed = 1;
	}
}

/* ---- windows ----------------------------------------------------------------- */

/* Ends the window at end_ns: writes it, starts the next one, and frees
 * the processes that ended in it (--merge keeps them until now). */
static void close_window(struct output *o, uint64_t end_ns)
{
	struct proc *p, *next;
	int removed = 0;

	log_debug("window %" PRIu64 ".%03u s ends", end_ns / 1000000000u,
		  (unsigned)(end_ns / 1000000u % 1000u));
	if (o->opts->merge)
		write_merged_window(o, o->win_start_ns, end_ns);
	for (p = procs_first(o->reg); p; p = next) {
		next = proc_next(p);
		if (!proc_is_live(p)) {
			/* Only --merge keeps ended processes (--output
			 * cannot go with --period). */
			procs_remove(o->reg, p);
			removed = 1;
			continue;
		}
		if (!o->opts->merge && has_window_data(p))
			write_proc(o, p, end_ns);
		proc_window_reset(p, end_ns);
	}
	o->win_start_ns = end_ns;
	if (procs_maybe_compact(o->reg, 1) || removed)
		schedule_trim(o);
}

static void on_period(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct output *o = arg;
	uint64_t period = o->opts->period_ns;
	(void)loop;
	(void)t;
	/* The boundary the timer stands for: the nearest multiple. */
	uint64_t end = (now_unix_ns() + period / 2) / period * period;
	if (end <= o->win_start_ns)
		return; /* fired early by the clocks' drift: next time */
	close_window(o, end);
}

/* ---- the interface ------------------------------------------------------------ */

struct output *output_new(const struct collector_opts *opts, struct loop *loop,
			  struct symtab *st, struct procs *reg)
{
	struct output *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->opts = opts;
	o->loop = loop;
	o->st = st;
	o->reg = reg;
	if (opts->timeline_file) {
		o->tl = timeline_new(0);
		if (!o->tl) {
			free(o);
			return NULL;
		}
		procs_set_timeline(reg, o->tl);
	}
	return o;
}

void output_free(struct output *o)
{
	if (!o)
		return;
	loop_del_timer(o->loop, o->period_timer);
	loop_del_timer(o->loop, o->trim_timer);
	if (o->tl)
		procs_set_timeline(o->reg, NULL);
	timeline_free(o->tl);
	free(o);
}

int output_start(struct output *o)
{
	uint64_t period = o->opts->period_ns;
	uint64_t now = now_unix_ns();

	o->win_start_ns = now;
	if (!period)
		return 0;
	/* First boundary: the next multiple of the period. */
	o->period_timer = loop_add_timer(o->loop, (now / period + 1) * period -
							  now,
					 period, on_period, o);
	return o->period_timer ? 0 : -ENOMEM;
}

/* HEAP_SNAPSHOT (PYPROF_HEAP_SNAPSHOT_SECONDS): the process's heap profile
 * as of that point in its stream, in-use blocks then and allocations of
 * its window so far:
 *   --output FILE  FILE-without-.pb.gz.<pid>.heap.<seq>.pb.gz
 *   --output-dir   <dir>/<name>.<pid>.<its start>.heap.<seq>.pb.gz
 * seq zero-padded to 4 digits so that names sort in time order. */
void output_snapshots(struct output *o)
{
	struct proc *p;
	uint64_t seq;

	while ((p = procs_next_snapshot(o->reg, &seq))) {
		const struct proc_info *in = proc_info(p);
		const struct proc *one[1] = { p };
		struct pprof_opts po = { .heap = 1,
					 .proc_labels = o->opts->output_file
							!= NULL };
		char path[4096 + 128], base[4096], comm[72], stamp[32];
		int rc;

		if (o->opts->output_file) {
			output_file_base(o->opts->output_file, base,
					 sizeof(base));
			snprintf(path, sizeof(path),
				 "%s.%" PRIu64 ".heap.%04" PRIu64 ".pb.gz",
				 base, in->pid, seq);
		} else if (o->opts->output_dir) {
			file_stem(symtab_string(o->st, in->comm_sid), comm,
				  sizeof(comm));
			format_stamp(in->start_unix_ns, stamp, sizeof(stamp));
			snprintf(path, sizeof(path),
				 "%s/%s.%" PRIu64 ".%s.heap.%04" PRIu64
				 ".pb.gz",
				 o->opts->output_dir, comm, in->pid, stamp,
				 seq);
		} else {
			continue;
		}
		rc = pprof_write(o->st, one, 1, &po, path, FILEIO_REPLACE,
				 NULL);
		if (rc < 0) {
			log_error("pid %" PRIu64 ": cannot write heap "
				  "snapshot %s: %s", in->pid, path,
				  strerror(-rc));
			o->failed = 1;
			continue;
		}
		log_info("wrote %s (pid %" PRIu64 ", heap snapshot %" PRIu64
			 ")", path, in->pid, seq);
	}
}

void output_proc_ended(struct output *o, struct proc *p)
{
	const struct proc_info *in = proc_info(p);

	output_snapshots(o);

	/* --merge writes it with its window (or at exit) and frees it then. */
	if (o->opts->merge)
		return;
	if (o->opts->output_dir) {
		/* One that sent nothing (no sample, no loss) gets no file: a
		 * busy host starts many short Python processes that never
		 * run long enough to be sampled. */
		/* Its last window ends now: its last samples may have been
		 * taken before the window began, and arrived in it. */
		if (has_window_data(p))
			write_proc(o, p, now_unix_ns());
		else
			log_info("pid %" PRIu64 ": no samples%s, no profile "
				 "written", in->pid,
				 o->opts->period_ns ? " in its last window"
						    : "");
	}
	if (!o->opts->output_file) {
		procs_remove(o->reg, p);
		after_remove(o);
	}
}

void output_shutdown(struct output *o, uint64_t n_running)
{
	output_snapshots(o);
	if (o->opts->merge)
		write_merged_window(o, o->win_start_ns,
				    o->opts->period_ns ? now_unix_ns() : 0);
	if (o->opts->output_file)
		write_output_file(o);
	if (o->opts->summary_file)
		write_summary(o, n_running);
}

int output_failed(const struct output *o)
{
	return o->failed;
}
