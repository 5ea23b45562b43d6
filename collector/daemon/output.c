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
 * Per-thread files (--per-thread, thread_files.h) follow the profile they
 * split, named after it (collector.h).
 *
 * A window that cannot be written (a full disk, a quota, a directory
 * gone for a while) is not thrown away: its encoded profile is held in
 * memory, oldest first, up to hold_max bytes in all (--hold-max), and
 * tried again every OUTPUT_RETRY_NS and before each new file, in the
 * order the windows ended; a held profile is written under the name it
 * would have had. When it must go (no room to hold it, older ones pushed
 * out by newer ones, or still unwritten at exit), its samples are
 * counted as lost with the reason "[lost: not written]": in the log, in
 * the totals (--summary), and in the next profile of each of its
 * processes that is still held (process ended: the log and the totals
 * only). Only the profile itself is held: the heap and per-thread files
 * beside it are written with it or not at all.
 *
 * Memory. A process is freed as soon as what it sent is written (at its
 * disconnect, or with --merge at the end of the window it ended in).
 * After each removal, and at each boundary, procs_maybe_compact decides
 * whether to compact the shared symbol tables; freed memory is handed back
 * to the kernel with malloc_trim a little later (coalesced by a timer:
 * trimming walks the heap, and ten thousand processes may end in a
 * minute).
 *
 * Where a new file goes, and the windows held because they could not be
 * written, are output_held.c's; the structs both share output_impl.h's.
 */
#include "daemon/output.h"
#include "daemon/output_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "daemon/agg.h"
#include "daemon/collector_opts.h"
#include "common/fileio.h"
#include "common/readers.h"
#include "common/grow.h"
#include "daemon/heapagg.h"
#include "common/log.h"
#include "common/loop.h"
#include "daemon/pprof.h"
#include "daemon/thread_files.h"
#include "daemon/timeline.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"
#include "daemon/symtab.h"

#define OUTPUT_TRIM_DELAY_NS (200 * 1000000ull)

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


/* Whether any of list[0..n) has a heap profile to write. */
static int any_heap(const struct proc *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (heapagg_has_data(proc_heap(list[i])))
			return 1;
	return 0;
}

/* Hands the profile data[0..len) of list[0..n) to every sink
 * (output.h). */
static void to_sinks(struct output *o, const struct proc *const *list,
		     size_t n, const struct pprof_opts *po, const void *data,
		     size_t len, int heap)
{
	if (n == 0)
		return;
	for (size_t i = 0; i < o->n_sinks; i++)
		o->sinks[i].profile(o->sinks[i].ctx, list, n, po, data, len,
				    heap);
}

/* Beside the CPU profile cpu_path (NAME.pb.gz, or any name; NULL: no
 * files), the block and mutex profiles of list[0..n) as NAME.block.pb.gz
 * and NAME.mutex.pb.gz, each when one of them has such records
 * (PYPROF_WAITS); with push, each is handed to the sinks too (po->waits
 * says which). who names them in log lines. */
static void write_waits_beside(struct output *o, const char *cpu_path,
			       const struct proc *const *list, size_t n,
			       const struct pprof_opts *po, const char *who,
			       int push)
{
	static const struct {
		int kind;
		const char *suffix;
	} kinds[] = { { PPROF_WAITS_BLOCK, "block" },
		      { PPROF_WAITS_MUTEX, "mutex" } };

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct pprof_opts wpo = *po;
		struct pprof_stats stats;
		char base[4096], path[4096 + 16];
		void *data = NULL;
		size_t len = 0;
		int rc;

		if (!pprof_has_waits(list, n, kinds[k].kind))
			continue;
		wpo.waits = kinds[k].kind;
		wpo.want_loc_map = 0;
		wpo.one_thread = 0;
		rc = pprof_build(o->st, list, n, &wpo, &data, &len, &stats);
		if (rc == 0 && push)
			to_sinks(o, list, n, &wpo, data, len, 0);
		if (rc == 0 && cpu_path) {
			file_profile_base(cpu_path, base, sizeof(base));
			snprintf(path, sizeof(path), "%s.%s.pb.gz", base,
				 kinds[k].suffix);
			rc = file_write_atomic(path, data, len,
					       FILEIO_REPLACE);
			if (rc == 0)
				log_info("wrote %s: %" PRIu64
					 " contentions (%s)",
					 path, stats.samples, who);
		}
		free(data);
		if (rc < 0) {
			log_error("%s: cannot build or write its %s profile: "
				  "%s",
				  who, kinds[k].suffix, strerror(-rc));
			o->failed = 1;
		}
	}
}

/* Beside the CPU profile cpu_path (NAME.pb.gz, or any name), the heap
 * profile of list[0..n) as NAME.heap.pb.gz, when one of them has heap
 * data. who names it in log lines. */
static void write_heap_beside(struct output *o, const char *cpu_path,
			      const struct proc *const *list, size_t n,
			      const struct pprof_opts *po, const char *who,
			      int push)
{
	struct pprof_opts hpo = *po;
	struct pprof_stats stats;
	char base[4096], path[4096 + 16];
	void *data = NULL;
	size_t len = 0;
	int rc;

	write_waits_beside(o, cpu_path, list, n, po, who, push);
	if (!any_heap(list, n))
		return;
	hpo.heap = 1;
	hpo.want_loc_map = 0;
	rc = pprof_build(o->st, list, n, &hpo, &data, &len, &stats);
	if (rc == 0 && push)
		to_sinks(o, list, n, po, data, len, 1);
	if (rc == 0 && !cpu_path)
		goto out;
	if (rc == 0) {
		file_profile_base(cpu_path, base, sizeof(base));
		snprintf(path, sizeof(path), "%s.heap.pb.gz", base);
		rc = file_write_atomic(path, data, len, FILEIO_REPLACE);
	}
	if (rc < 0) {
		log_error("%s: cannot build or write its heap profile: %s",
			  who, strerror(-rc));
		o->failed = 1;
		goto out;
	}
	log_info("wrote %s: %" PRIu64 " allocations (estimated), %" PRIu64
		 " lost (%s)",
		 path, stats.samples, stats.lost, who);
out:
	free(data);
}


/* The uid whose directory holds p's files (output_file_dir). */
static long proc_dir_uid(const struct output *o, const struct proc *p)
{
	return o->opts->per_uid ? (long)proc_info(p)->peer_uid : -1;
}


/* Builds the profile of list[0..n) and writes it as a new file
 * <dir>/<stem>.<stamp>[.N].pb.gz, then with --per-thread its threads'
 * files. who names it in log lines. A profile that cannot be written is
 * held and tried again (see above). */
static void write_new_file(struct output *o, long dir_uid, const char *stem,
			   uint64_t stamp_ns, const struct proc *const *list,
			   size_t n, const struct pprof_opts *po,
			   const char *who)
{
	char path[4096] = "";
	struct pprof_stats stats;
	void *data = NULL;
	size_t len = 0;
	int rc;

	rc = pprof_build(o->st, list, n, po, &data, &len, &stats);
	if (rc < 0) {
		log_error("%s: cannot build its profile: %s", who,
			  strerror(-rc));
		o->failed = 1;
		goto out;
	}
	to_sinks(o, list, n, po, data, len, 0);
	if (!o->opts->output_dir) { /* pushed only */
		log_debug("%s: window of %" PRIu64 " samples queued for push",
			  who, stats.samples);
		for (size_t i = 0; i < n; i++)
			proc_mark_written((struct proc *)list[i]);
		write_heap_beside(o, NULL, list, n, po, who, 1);
		goto out;
	}
	/* Older windows first, if there is room again. */
	output_retry_held(o);
	rc = output_place_new_file(o, dir_uid, stem, stamp_ns, data, len, path,
				   sizeof(path));
	if (rc == -ENAMETOOLONG) {
		log_error("%s: cannot write its profile %s: %s", who, path,
			  strerror(-rc));
		o->failed = 1;
		goto out;
	}
	if (rc < 0) {
		output_hold_window(o, dir_uid, stem, stamp_ns, data, len, list, n, who,
				   path, rc);
		data = NULL;
		goto out;
	}
	log_info("wrote %s: %" PRIu64 " samples, %" PRIu64 " lost (%s)", path,
		 stats.samples, stats.lost, who);
	/* Their samples so far are on disk: the libraries may hear so
	 * (proc.h). The list is const for the writing only. */
	for (size_t i = 0; i < n; i++)
		proc_mark_written((struct proc *)list[i]);
	write_heap_beside(o, path, list, n, po, who, 1);
	if (o->opts->per_thread) {
		path[strlen(path) - strlen(".pb.gz")] = 0;
		for (size_t i = 0; i < n; i++)
			if (thread_files_write(o->st, path, list[i], po,
					       n > 1, FILEIO_NOREPLACE) < 0)
				o->failed = 1;
	}
out:
	free(data);
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
		po.end_unix_ns = end_ns < start	  ? start
				 : end_ns > limit ? limit
						  : end_ns;
	}
	file_stem(symtab_string(o->st, in->comm_sid), comm, sizeof(comm));
	snprintf(stem, sizeof(stem), "%s.%" PRIu64, comm, in->pid);
	snprintf(who, sizeof(who), "pid %" PRIu64, in->pid);
	write_new_file(o, proc_dir_uid(o, p), stem, in->win_start_unix_ns, one,
		       1, &po, who);
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
				 in->pid, in->mode == WIRE_MODE_WALL ? "wall" : "cpu",
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
	write_new_file(o, -1, "merged", start_ns, list, n, &po, who);
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
		 timeline_len(o->tl), timeline_dropped(o->tl) ? " (some dropped past the memory cap)" : "");
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
	log_info("wrote %s: %" PRIu64 " sample%s, %" PRIu64 " lost, from %zu "
		 "process%s",
		 path, stats.samples,
		 stats.samples == 1 ? "" : "s", stats.lost, n,
		 n == 1 ? "" : "es");
	if (o->tl)
		write_timeline(o, &stats);
	write_heap_beside(o, path, list, n, &po, "all processes", 0);
	if (o->opts->per_thread) {
		char base[4096];
		file_profile_base(path, base, sizeof(base));
		for (size_t i = 0; i < n; i++)
			if (thread_files_write(o->st, base, list[i], &po,
					       n > 1, FILEIO_REPLACE) < 0)
				o->failed = 1;
	}
out:
	if (rc < 0) {
		log_error("cannot write %s: %s", path, strerror(-rc));
		o->failed = 1;
	}
	free(stats.loc_map);
	free(list);
}

/* The --summary file: one line of counts (running=N only when some
 * processes were still connected, refused=N only when some process was
 * not profiled, heap_procs=N heap_peak=BYTES heap_peak_unix_ns=T
 * heap_peak_pid=PID only when some sent heap data: procs_heap_peak),
 * then one line per reason why processes were not profiled: "refused N
 * REASON" (cmd_summary_parse). */
static void write_summary(struct output *o, uint64_t n_running)
{
	char text[512 + (PROCS_REFUSED_KINDS + 1) * (PROCS_REFUSED_LEN + 32)];
	size_t len = 0;
	const char *why;
	uint64_t n_why;
	int n = snprintf(text, sizeof(text),
			 "processes=%" PRIu64 " samples=%" PRIu64
			 " lost=%" PRIu64,
			 procs_n_seen(o->reg),
			 procs_total_samples(o->reg) - procs_total_waits(o->reg),
			 procs_total_lost(o->reg));
	len = (size_t)n;
	/* running=N only when some were: the line stays what it was */
	if (n_running)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					" running=%" PRIu64, n_running);
	if (procs_n_refused(o->reg))
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					" refused=%" PRIu64,
					procs_n_refused(o->reg));
	struct procs_heap_peak hp;
	if (procs_heap_peak(o->reg, &hp))
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					" heap_procs=%" PRIu64
					" heap_peak=%" PRIu64
					" heap_peak_unix_ns=%" PRIu64
					" heap_peak_pid=%" PRIu64,
					hp.n_procs, hp.bytes, hp.unix_ns,
					hp.pid);
	text[len++] = '\n';
	for (size_t i = 0; (why = procs_refused_reason(o->reg, i, &n_why)); i++) {
		n = snprintf(text + len, sizeof(text) - len,
			     "refused %" PRIu64 " %s\n", n_why, why);
		if (n < 0 || (size_t)n >= sizeof(text) - len)
			break;
		len += (size_t)n;
	}
	int rc = file_write_atomic(o->opts->summary_file, text, len,
				   FILEIO_REPLACE);
	if (rc < 0) {
		log_error("cannot write %s: %s", o->opts->summary_file,
			  strerror(-rc));
		o->failed = 1;
	}
}

/* ---- windows ----------------------------------------------------------------- */

/* window_end (output.h): every sink that has one is told that the window
 * [o->win_start_ns, end_ns) is over, with the processes that have data
 * in it (those that ended meanwhile included). */
static void sinks_window_end(struct output *o, uint64_t end_ns)
{
	const struct proc **all;
	size_t n = 0, i;

	for (i = 0; i < o->n_sinks && !o->sinks[i].window_end; i++)
		;
	if (i == o->n_sinks || !o->opts->period_ns)
		return;
	all = calloc(procs_len(o->reg) + 1, sizeof(*all));
	if (!all) {
		log_error("out of memory for the window's end: the sinks are "
			  "not told");
		return;
	}
	for (struct proc *p = procs_first(o->reg); p; p = proc_next(p))
		if (has_window_data(p))
			all[n++] = p;
	for (i = 0; i < o->n_sinks; i++)
		if (o->sinks[i].window_end)
			o->sinks[i].window_end(o->sinks[i].ctx, all, n,
					       o->win_start_ns, end_ns);
	free(all);
}

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
	sinks_window_end(o, end_ns);
	for (p = procs_first(o->reg); p; p = next) {
		next = proc_next(p);
		if (!proc_is_live(p)) {
			/* Only --merge and a sink's keeps_ended keep ended
			 * processes (--output cannot go with --period). */
			procs_remove(o->reg, p);
			removed = 1;
			continue;
		}
		if (!o->opts->merge && has_window_data(p))
			write_proc(o, p, end_ns);
		proc_window_reset(p, end_ns);
	}
	o->win_start_ns = end_ns;
	output_charge_dropped(o); /* into the windows just started */
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

int output_add_sink(struct output *o, const struct output_sink *sink)
{
	if (o->n_sinks == OUTPUT_MAX_SINKS)
		return -ENOSPC;
	o->sinks[o->n_sinks++] = *sink;
	if (sink->keeps_ended)
		o->keep_ended = 1;
	return 0;
}

void output_clear_sinks(struct output *o)
{
	o->n_sinks = 0;
	o->keep_ended = 0;
}

void output_free(struct output *o)
{
	if (!o)
		return;
	loop_del_timer(o->loop, o->period_timer);
	loop_del_timer(o->loop, o->trim_timer);
	loop_del_timer(o->loop, o->retry_timer);
	while (o->held) {
		struct held *h = output_pop_held(o);
		free(h->procs);
		free(h->data);
		free(h);
	}
	free(o->charge);
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
	o->period_timer = loop_add_timer(o->loop, (now / period + 1) * period - now,
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
					 .proc_labels = o->opts->output_file != NULL };
		char path[4096 + 128], base[4096], comm[72], stamp[32];
		int rc;

		if (o->opts->output_file) {
			file_profile_base(o->opts->output_file, base,
					  sizeof(base));
			snprintf(path, sizeof(path),
				 "%s.%" PRIu64 ".heap.%04" PRIu64 ".pb.gz",
				 base, in->pid, seq);
		} else if (o->opts->output_dir) {
			file_stem(symtab_string(o->st, in->comm_sid), comm,
				  sizeof(comm));
			output_format_stamp(in->start_unix_ns, stamp, sizeof(stamp));
			rc = output_file_dir(o, proc_dir_uid(o, p), base,
					     sizeof(base));
			snprintf(path, sizeof(path),
				 "%s/%s.%" PRIu64 ".%s.heap.%04" PRIu64
				 ".pb.gz",
				 base, comm, in->pid, stamp, seq);
			if (rc < 0) {
				log_error("pid %" PRIu64 ": cannot write heap "
					  "snapshot %s: %s",
					  in->pid, path,
					  strerror(-rc));
				o->failed = 1;
				continue;
			}
		} else {
			continue;
		}
		rc = pprof_write(o->st, one, 1, &po, path, FILEIO_REPLACE,
				 NULL);
		if (rc < 0) {
			log_error("pid %" PRIu64 ": cannot write heap "
				  "snapshot %s: %s",
				  in->pid, path,
				  strerror(-rc));
			o->failed = 1;
			continue;
		}
		log_info("wrote %s (pid %" PRIu64 ", heap snapshot %" PRIu64
			 ")",
			 path, in->pid, seq);
	}
}

void output_proc_ended(struct output *o, struct proc *p)
{
	const struct proc_info *in = proc_info(p);

	output_snapshots(o);

	/* --merge writes it with its window (or at exit) and frees it then. */
	if (o->opts->merge)
		return;
	if (o->opts->output_dir || o->n_sinks) {
		/* One that sent nothing (no sample, no loss) gets no file: a
		 * busy host starts many short Python processes that never
		 * run long enough to be sampled. */
		/* Its last window ends now: its last samples may have been
		 * taken before the window began, and arrived in it. */
		if (has_window_data(p))
			write_proc(o, p, now_unix_ns());
		else
			log_info("pid %" PRIu64 ": no samples%s, no profile "
				 "written",
				 in->pid,
				 o->opts->period_ns ? " in its last window"
						    : "");
	}
	/* Kept for their window's end (a sink's keeps_ended), after
	 * which close_window or output_shutdown removes them. */
	if (!o->opts->output_file && !o->keep_ended) {
		procs_remove(o->reg, p);
		after_remove(o);
	}
	output_charge_dropped(o);
}

void output_flush_held(struct output *o)
{
	if (!o->held)
		return;
	if (output_retry_held(o) == 0)
		return;
	output_drop_all_held(o, "still no room at exit");
	output_charge_dropped(o);
}

void output_shutdown(struct output *o, uint64_t n_running)
{
	output_snapshots(o);
	/* Last windows that could not be written either. */
	output_flush_held(o);
	if (o->opts->merge) {
		write_merged_window(o, o->win_start_ns,
				    o->opts->period_ns ? now_unix_ns() : 0);
		/* The merged profile itself, if it had no room: its loss
		 * goes to the totals, and --output shows it. */
		output_flush_held(o);
	}
	sinks_window_end(o, now_unix_ns());
	if (o->opts->output_file)
		write_output_file(o);
	if (o->opts->summary_file)
		write_summary(o, n_running);
}

int output_failed(const struct output *o)
{
	return o->failed;
}
