/*
 * view_read.h - a pprof profile as the views read it (top, flame graphs,
 * folded stacks, speedscope, diff), and the helpers they share.
 *
 * view_read.c is the one reader: it gunzips (or takes plain protobuf),
 * unpacks with protobuf-c and checks pprof's validity rules (string 0 is
 * "", every index and id resolves, one value per sample type), then flattens
 * the message into the arrays below. It reads any pprof, not only ours:
 * Go's profiles with sparse ids, several Lines per Location (inlining:
 * callee first, caller last) and Locations without Lines (an address only).
 * The helpers below the reader (filters, keys, formatting) are defined in
 * view_helpers.c.
 *
 * Frames. Each Line of each Location is one frame; a sample's frames are
 * its Locations' Lines in order, so leaf first as in pprof. A Location
 * without a Line becomes one frame of a made-up function "0xADDRESS".
 *
 * Keys. A view groups frames by function (name and file: pprof function
 * ids may differ for the same function, as in merged profiles) or by line
 * (function and line). struct view_keys interns those; it can take several
 * profiles, so that a diff compares the same function in both.
 *
 * Ownership: every string is a pointer into the profile's string table and
 * lives as long as the profile (keys must not outlive their profiles).
 * Everything is read-only after view_read_*. Single-threaded; the pyprof
 * command and the unit tests are the callers.
 */
#ifndef PYPROF_VIEW_READ_H
#define PYPROF_VIEW_READ_H

#include <stddef.h>
#include <stdint.h>

#include "common/idhash.h"
#include "common/errbuf.h"

#define VIEW_MAX_TAGS 16
/* The largest profile file we read (gzipped or not), and the largest it
 * may inflate to: guards against a zip bomb eating the machine. */
#define VIEW_MAX_FILE (1ull << 30)
#define VIEW_MAX_INFLATED (4ull << 30)

struct view_type {
	const char *type; /* "cpu", "samples", "alloc_space"...          */
	const char *unit; /* "nanoseconds", "count", "bytes"...          */
};

struct view_func {
	const char *name;
	const char *system_name;
	const char *file;
	int64_t start_line;
};

/* One Line of one Location. */
struct view_frame {
	uint32_t func; /* index into funcs */
	int64_t line;
};

struct view_label {
	const char *key;
	const char *str; /* NULL for a numeric label */
	int64_t num;
	const char *num_unit; /* "" if none */
};

struct view_sample {
	const uint32_t *frames; /* n_frames frame indexes, leaf first */
	uint32_t n_frames;
	const int64_t *values; /* one per sample type */
	const struct view_label *labels;
	uint32_t n_labels;
};

struct view_profile {
	/* read-only for callers */
	size_t n_types;
	const struct view_type *types;
	size_t default_type; /* default_sample_type, else the last type */
	size_t n_funcs;
	const struct view_func *funcs;
	size_t n_frames;
	const struct view_frame *frames;
	size_t n_samples;
	const struct view_sample *samples;
	size_t n_comments;
	const char *const *comments;
	int64_t time_nanos, duration_nanos, period;
	struct view_type period_type;

	/* private to view_read.c */
	void *pb; /* the unpacked message */
	size_t n_locs;
	uint64_t *loc_ids;   /* sorted ids, for view_find_location */
	uint32_t *loc_index; /* loc_ids[i] is location loc_index[i] */
	uint32_t *loc_first; /* location -> its first frame */
	uint32_t *loc_n;     /* location -> its number of frames */
	void *owned[8];	     /* arrays freed with the profile */
	char *addr_names;    /* names made up for address-only frames */
	char **printable;    /* view_read_text_*: string i's escaped copy,
				  NULL where it needs none */
	size_t n_printable;
};

/* ---- reading ------------------------------------------------------------ */

/* Reads a profile from len bytes of data (gzipped or plain protobuf). On
 * success *out is a new profile the caller frees with view_free. On
 * failure returns -EINVAL (not a valid pprof: err says why), -E2BIG (too
 * large) or -ENOMEM, and *out is NULL. err has ERR_LEN bytes. */
int view_read_mem(const void *data, size_t len, struct view_profile **out,
		  char *err);
/* The same for a file ("-" is standard input); -errno if it cannot be
 * read. err does not repeat the path: the caller names it. */
int view_read_file(const char *path, struct view_profile **out, char *err);
/* The same for a view printed as text on a terminal (pyprof top, diff):
 * every string (function and file names, label keys and values, sample
 * types, comments) shows only characters a terminal prints as text;
 * control characters (C0, DEL, C1), bidirectional overrides and bytes
 * that are not UTF-8 become visible escapes: \n, \t, \r, \x1b, \u009b,
 * \u202e. A profile is the profiled programs' data: a function, file or
 * task name must not move the cursor, recolour or clear the screen, or
 * reorder the text around it. */
int view_read_text_mem(const void *data, size_t len,
		       struct view_profile **out, char *err);
int view_read_text_file(const char *path, struct view_profile **out,
			char *err);
void view_free(struct view_profile *p);

/* p's message as it was read, with n more comments (extra, as given)
 * after its own: plain protobuf bytes, malloc'd, in *out and *len. 0 or
 * -ENOMEM. (convert --format pprof's annotations.) */
int view_pack_commented(const struct view_profile *p,
			const char *const *extra, size_t n, uint8_t **out,
			size_t *len);

/* The frames of the Location with pprof id `id`: 0 with *first and *n
 * set, or -ENOENT. (Timeline files name stacks by location id.) */
int view_find_location(const struct view_profile *p, uint64_t id,
		       uint32_t *first, uint32_t *n);

/* ---- sample types ---------------------------------------------------------- */

/* The index of the sample type called name ("cpu" or "cpu/nanoseconds");
 * NULL or "" picks the default type. 0 or -ENOENT. */
int view_pick_type(const struct view_profile *p, const char *name,
		   size_t *idx);
/* view_pick_type for a renderer: when there is no such type, err says
 * "the profile has no sample type 'NAME'" (-ENOENT). */
int view_need_type(const struct view_profile *p, const char *name,
		   size_t *idx, char *err);
/* Puts in err what a renderer's rc says when it is -ENOMEM ("out of
 * memory") or -EIO ("write error"); returns rc. */
int view_errno_text(int rc, char *err);
/* The index of the samples/count type, or -1 if there is none (a heap
 * profile's object counts are not numbers of samples). */
int view_count_type(const struct view_profile *p);

/* ---- label filters ----------------------------------------------------------- */

struct view_filter {
	size_t n;
	struct {
		const char *key, *value; /* caller-owned strings */
	} tags[VIEW_MAX_TAGS];
};

/* Adds "KEY=VALUE" (kv must outlive the filter; it is not copied, the
 * '=' is not modified). -EINVAL without '=' or an empty KEY, -E2BIG past
 * VIEW_MAX_TAGS. */
int view_filter_add(struct view_filter *f, const char *kv);
/* Non-zero if s passes: for every key named in f, one of the values
 * given for that key equals one of s's labels with that key (a string
 * label's text, or a numeric label's decimal value). An empty filter
 * passes everything. */
int view_sample_matches(const struct view_sample *s,
			const struct view_filter *f);
/* The value of s's label key as text in buf, or NULL if s has none. */
const char *view_sample_label(const struct view_sample *s, const char *key,
			      char *buf, size_t n);

/* ---- keys -------------------------------------------------------------------- */

enum view_by {
	VIEW_BY_FUNCTION,
	VIEW_BY_LINE
};

struct view_key {
	const char *name;
	const char *file;
	int64_t line; /* the frame's line (by line), else the function's
			 start line (0 if unknown) */
};

struct view_keys {
	/* read-only for callers */
	enum view_by by;
	size_t n;
	struct view_key *v; /* ids 0..n-1 */
	/* private */
	size_t cap;
	struct idhash hash;
};

void view_keys_init(struct view_keys *k, enum view_by by);
void view_keys_fini(struct view_keys *k);
/* Interns the key of every frame of p; *of_frame (malloc'd, the caller
 * frees it) maps frame index -> key id. 0 or -ENOMEM. */
int view_keys_map(struct view_keys *k, const struct view_profile *p,
		  uint32_t **of_frame);
/* A rank per key id in alphabetical order of (name, file, line), for
 * views that sort by name; malloc'd array of k->n, or NULL (ENOMEM). */
uint32_t *view_keys_rank(const struct view_keys *k);

/* ---- formatting ------------------------------------------------------------------ */

/* v in unit, human-readable: nanoseconds as "1.23s", "45.6ms", "789us",
 * "12ns"; microseconds/milliseconds/seconds likewise; bytes as "1.50MB";
 * anything else (counts) as a plain integer. Returns buf. */
const char *view_fmt_value(char *buf, size_t n, int64_t v, const char *unit);
/* Non-zero if unit is a time unit view_fmt_value scales. */
int view_unit_is_time(const char *unit);

#endif /* PYPROF_VIEW_READ_H */
