/*
 * output_held.c - where output.c's new files go, and the windows that
 * could not be written there. A new file is <dir>/<stem>.<stamp>[.N].pb.gz
 * (the directory per uid with --readers-group, the stamp in UTC, taken
 * without replacing: FILEIO_NOREPLACE). A profile that cannot be written
 * is held in memory, oldest first, up to --hold-max in all, retried every
 * OUTPUT_RETRY_NS and before each new file, and when it must go its
 * samples are counted as lost (output.c's header tells the whole rule).
 *
 * Called by output.c only (output_impl.h); runs on the collector's loop
 * thread.
 */
#include "daemon/output.h"
#include "daemon/output_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/fileio.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/readers.h"
#include "daemon/agg.h"
#include "daemon/collector_opts.h"
#include "daemon/proc.h"
#include "pyprof/wire.h"

#define OUTPUT_MAX_NAME_TRIES 1000
#define OUTPUT_RETRY_NS (2 * 1000000000ull)

/* ---- new files ------------------------------------------------------------------ */

/* YYYYmmddTHHMMSSZ: UTC, so that names sort by time all year. */
void output_format_stamp(uint64_t unix_ns, char *buf, size_t cap)
{
	time_t t = (time_t)(unix_ns / 1000000000u);
	struct tm tm;
	if (!gmtime_r(&t, &tm) ||
	    strftime(buf, cap, "%Y%m%dT%H%M%SZ", &tm) == 0)
		snprintf(buf, cap, "%lld", (long long)t);
}

/* The directory of a file of the process(es) of uid dir_uid, -1 for a
 * file of several processes: <dir>, or with --readers-group the uid's
 * own <dir>/uid-<UID> (readers.h), made if missing. 0 or a negative
 * errno (out holds the directory's name all the same). */
int output_file_dir(const struct output *o, long dir_uid, char *out,
		    size_t cap)
{
	if (!o->opts->per_uid || dir_uid < 0) {
		snprintf(out, cap, "%s", o->opts->output_dir);
		return 0;
	}
	return readers_user_dir(o->opts->output_dir, (unsigned)dir_uid, out,
				cap);
}

/* Writes data as a new file <dir>/<stem>.<stamp>[.N].pb.gz, <dir> that of
 * dir_uid (output_file_dir); its name in path. 0 or a negative errno. */
int output_place_new_file(const struct output *o, long dir_uid,
			  const char *stem, uint64_t stamp_ns,
			  const void *data, size_t len, char *path, size_t cap)
{
	char stamp[32], dir[4096];
	int rc = output_file_dir(o, dir_uid, dir, sizeof(dir));

	output_format_stamp(stamp_ns, stamp, sizeof(stamp));
	if (rc < 0) {
		/* the name it would have had, for the log */
		if ((size_t)snprintf(path, cap, "%s/%s.%s.pb.gz", dir, stem,
				     stamp) >= cap)
			snprintf(path, cap, "%s", dir);
		return rc;
	}
	rc = -EEXIST;
	for (int i = 0; i < OUTPUT_MAX_NAME_TRIES; i++) {
		char suffix[16] = "";
		if (i > 0)
			snprintf(suffix, sizeof(suffix), ".%d", i);
		if ((size_t)snprintf(path, cap, "%s/%s.%s%s.pb.gz", dir, stem,
				     stamp, suffix) >= cap)
			return -ENAMETOOLONG;
		rc = file_write_atomic(path, data, len, FILEIO_NOREPLACE);
		if (rc != -EEXIST)
			break;
	}
	return rc;
}

/* ---- windows that could not be written ------------------------------------ */

static struct proc *find_proc(const struct output *o, uint64_t pid,
			      uint64_t start_unix_ns)
{
	for (struct proc *p = procs_first(o->reg); p; p = proc_next(p)) {
		const struct proc_info *in = proc_info(p);
		if (in->pid == pid && in->start_unix_ns == start_unix_ns)
			return p;
	}
	return NULL;
}

/* Counts what was dropped as lost (not written): against each process
 * still held, in its current window, so that its next profile shows it;
 * else in the totals only. Called where no window is being written: a
 * window is dropped while its own process's window is being closed, and
 * the count must go to the next one. */
void output_charge_dropped(struct output *o)
{
	for (size_t i = 0; i < o->n_charge; i++) {
		const struct held_proc *hp = &o->charge[i];
		struct proc *p = find_proc(o, hp->pid, hp->start_unix_ns);
		if (p) {
			proc_count_lost(p, PROC_LOST_NOT_WRITTEN, hp->samples,
					hp->value);
			proc_carry_lost(p, PROC_LOST_NOT_WRITTEN, hp->carried,
					hp->carried_value);
		} else {
			procs_count_lost(o->reg, hp->samples);
		}
	}
	o->n_charge = 0;
}

/* The window is given up: its samples are to be counted as lost
 * (output_charge_dropped). why says why, for the log. Frees h. */
static void drop_held(struct output *o, struct held *h, const char *why)
{
	uint64_t samples = 0;
	char stamp[32];
	output_format_stamp(h->stamp_ns, stamp, sizeof(stamp));
	for (size_t i = 0; i < h->n_procs; i++) {
		const struct held_proc *hp = &h->procs[i];
		samples += hp->samples;
		if (grow_array(&o->charge, &o->charge_cap, o->n_charge + 1,
			       sizeof(*o->charge), 16) < 0) {
			/* The totals at least. */
			procs_count_lost(o->reg, hp->samples);
			continue;
		}
		o->charge[o->n_charge++] = *hp;
	}
	char dir[4096];
	output_file_dir(o, -1, dir, sizeof(dir));
	if (h->dir_uid >= 0)
		snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir),
			 "/uid-%ld", h->dir_uid);
	log_error("%s: its profile %s/%s.%s.pb.gz was never written (%s): "
		  "%" PRIu64 " samples counted as lost, \"[lost: not "
		  "written]\"",
		  h->who, dir, h->stem, stamp, why, samples);
	o->failed = 1;
	free(h->procs);
	free(h->data);
	free(h);
}

struct held *output_pop_held(struct output *o)
{
	struct held *h = o->held;
	if (!h)
		return NULL;
	o->held = h->next;
	if (!o->held)
		o->held_last = NULL;
	o->n_held--;
	o->held_bytes -= h->len;
	return h;
}

static void on_retry(struct loop *loop, struct loop_timer *t, void *arg);

/* Writes what is held, oldest first, until one fails (the disk is likely
 * still full: the rest wait too). Returns how many are still held. */
size_t output_retry_held(struct output *o)
{
	while (o->held) {
		struct held *h = o->held;
		char path[4096];
		int rc = output_place_new_file(o, h->dir_uid, h->stem, h->stamp_ns,
					       h->data, h->len, path, sizeof(path));
		if (rc < 0) {
			log_debug("%s: held profile still not written: %s",
				  h->who, strerror(-rc));
			break;
		}
		log_info("wrote %s (%s), held in memory until there was room",
			 path, h->who);
		h = output_pop_held(o);
		free(h->procs);
		free(h->data);
		free(h);
	}
	if (!o->held && o->retry_timer) {
		loop_del_timer(o->loop, o->retry_timer);
		o->retry_timer = NULL;
	}
	return o->n_held;
}

static void on_retry(struct loop *loop, struct loop_timer *t, void *arg)
{
	struct output *o = arg;
	(void)loop;
	(void)t;
	output_retry_held(o);
}

/* Keeps the profile data (len bytes, taken over: freed here whatever
 * happens) of list[0..n) that could not be written (err), to be tried
 * again; or, past the memory allowed, drops it (or older ones) and counts
 * their samples as lost. */
void output_hold_window(struct output *o, long dir_uid, const char *stem,
			uint64_t stamp_ns, void *data, size_t len,
			const struct proc *const *list, size_t n,
			const char *who, const char *path, int err)
{
	struct held *h = calloc(1, sizeof(*h));
	uint64_t hold_max = o->opts->hold_max;

	if (h)
		h->procs = calloc(n ? n : 1, sizeof(*h->procs));
	if (!h || !h->procs) {
		log_error("%s: cannot write %s (%s), and no memory to hold it",
			  who, path, strerror(-err));
		free(h);
		free(data);
		o->failed = 1;
		return;
	}
	snprintf(h->stem, sizeof(h->stem), "%s", stem);
	h->dir_uid = dir_uid;
	snprintf(h->who, sizeof(h->who), "%s", who);
	h->stamp_ns = stamp_ns;
	h->data = data;
	h->len = len;
	for (size_t i = 0; i < n; i++) {
		const struct proc_info *in = proc_info(list[i]);
		const struct agg_entry *e;
		size_t pos = 0;
		struct held_proc *hp = &h->procs[h->n_procs++];
		hp->pid = in->pid;
		hp->start_unix_ns = in->start_unix_ns;
		/* the CPU or wall profile's: block and mutex records go to
		 * files of their own */
		hp->samples = in->win_samples - in->win_waits;
		while ((e = agg_next(proc_agg(list[i]), &pos)))
			if (!(e->flags & WIRE_SF_WAITS))
				hp->value += e->value;
		proc_lost(list[i], PROC_LOST_NOT_WRITTEN, &hp->carried,
			  &hp->carried_value);
	}
	if (len > hold_max) {
		char why[160];
		snprintf(why, sizeof(why), "%s; %zu bytes is more than "
					   "--hold-max allows holding",
			 strerror(-err), len);
		drop_held(o, h, why);
		return;
	}
	while (o->held && o->held_bytes + len > hold_max)
		drop_held(o, output_pop_held(o), "pushed out of the memory held for "
						 "unwritten profiles (--hold-max) by a newer one");
	if (o->held_last)
		o->held_last->next = h;
	else
		o->held = h;
	o->held_last = h;
	o->n_held++;
	o->held_bytes += len;
	log_warn("%s: cannot write %s: %s; holding it in memory (%zu "
		 "profile%s, %zu bytes held) and trying again every %u s",
		 who, path, strerror(-err), o->n_held, o->n_held == 1 ? "" : "s",
		 o->held_bytes, (unsigned)(OUTPUT_RETRY_NS / 1000000000u));
	if (!o->retry_timer)
		o->retry_timer = loop_add_timer(o->loop, OUTPUT_RETRY_NS,
						OUTPUT_RETRY_NS, on_retry, o);
}

/* Gives up on whatever is still held (at exit). */
void output_drop_all_held(struct output *o, const char *why)
{
	struct held *h;
	while ((h = output_pop_held(o)))
		drop_held(o, h, why);
	loop_del_timer(o->loop, o->retry_timer);
	o->retry_timer = NULL;
}
