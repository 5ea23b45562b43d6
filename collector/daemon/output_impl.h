/*
 * output_impl.h - the output's structs, private to output.c (what is
 * written when: windows, merges, snapshots, the interface) and
 * output_held.c (where a new file goes; the windows that could not be
 * written, held and retried). Nothing else includes it: the rest of the
 * collector goes through output.h, which its includers include first.
 * output.c calls into output_held.c, never the other way.
 *
 * Runs on the collector's loop thread.
 */
#ifndef PYPROF_OUTPUT_IMPL_H
#define PYPROF_OUTPUT_IMPL_H

#include <stddef.h>
#include <stdint.h>

struct collector_opts;
struct loop;
struct loop_timer;
struct proc;
struct procs;
struct symtab;
struct timeline;

/* A process's share of a held window: what is lost if it is dropped. */
struct held_proc {
	uint64_t pid, start_unix_ns, samples, value;
	/* the window's own "[lost: not written]", already in the totals:
	 * carried to the next window if this one goes too */
	uint64_t carried, carried_value;
};

/* A profile that could not be written yet, in a FIFO. */
struct held {
	struct held *next;
	char stem[96]; /* the file name's parts (write_new_file) */
	/* whose directory it goes to (place_new_file) */
	long dir_uid;
	uint64_t stamp_ns;
	void *data; /* the encoded profile, owned */
	size_t len;
	char who[64];
	struct held_proc *procs;
	size_t n_procs;
};

struct output {
	const struct collector_opts *opts;
	struct loop *loop;
	struct symtab *st;
	struct procs *reg;
	struct loop_timer *period_timer; /* --period: repeats */
	struct loop_timer *trim_timer;	 /* pending malloc_trim, one-shot */
	uint64_t win_start_ns;		 /* the merged window's start, Unix ns */
	struct timeline *tl;		 /* --timeline: samples in arrival order */
	struct held *held, *held_last;	 /* oldest first */
	size_t n_held, held_bytes;
	struct loop_timer *retry_timer;		    /* while anything is held */
	struct output_sink sinks[OUTPUT_MAX_SINKS]; /* --pyroscope, --otlp */
	size_t n_sinks;
	int keep_ended;		  /* a sink's keeps_ended */
	struct held_proc *charge; /* dropped, not yet counted as lost */
	size_t n_charge, charge_cap;
	int failed;
};

/* ---- output_held.c ---- */

/* YYYYmmddTHHMMSSZ of unix_ns (UTC, so that names sort by time all
 * year) in buf. */
void output_format_stamp(uint64_t unix_ns, char *buf, size_t cap);

/* The directory of a file of the process(es) of uid dir_uid, -1 for a
 * file of several processes: <dir>, or with --readers-group the uid's
 * own <dir>/uid-<UID>, made if missing. 0 or a negative errno (out holds
 * the directory's name all the same). */
int output_file_dir(const struct output *o, long dir_uid, char *out,
		    size_t cap);

/* Writes data (len bytes, the caller's) as a new file
 * <dir>/<stem>.<stamp>[.N].pb.gz, <dir> that of dir_uid; its name in
 * path. 0 or a negative errno. */
int output_place_new_file(const struct output *o, long dir_uid,
			  const char *stem, uint64_t stamp_ns,
			  const void *data, size_t len, char *path,
			  size_t cap);

/* Keeps the profile data (len bytes, taken over: freed whatever
 * happens) of list[0..n) that could not be written to path (err), to be
 * tried again; or, past --hold-max, drops it (or older ones) and counts
 * their samples as lost. */
void output_hold_window(struct output *o, long dir_uid, const char *stem,
			uint64_t stamp_ns, void *data, size_t len,
			const struct proc *const *list, size_t n,
			const char *who, const char *path, int err);

/* Writes what is held, oldest first, until one fails. Returns how many
 * are still held. */
size_t output_retry_held(struct output *o);

/* The oldest held window, unlinked (the caller frees it), or NULL. */
struct held *output_pop_held(struct output *o);

/* Gives up on whatever is still held (at exit), why for the log. */
void output_drop_all_held(struct output *o, const char *why);

/* Counts what was dropped as lost: against each process still known, in
 * its current window, else in the totals only. Call where no window is
 * being written. */
void output_charge_dropped(struct output *o);

#endif
