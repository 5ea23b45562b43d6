/*
 * view_speedscope.c - speedscope's own file format
 * (https://www.speedscope.app/file-format-schema.json, as shipped in the
 * speedscope npm package): shared frames, then one "sampled" profile per
 * (pid, thread), named "pid P thread T (NAME)".
 *
 * Frames are functions (name, file, start line). Stacks are written root
 * first, as the format wants. Two sources of samples:
 * - the profile alone: pprof holds no time order, so each distinct stack
 *   is one sample weighing its total, in the profile's order; speedscope's
 *   "Left Heavy" and "Sandwich" views are right, "Time Order" is not
 *   meaningful;
 * - a timeline (timeline.h) recorded with the profile: every sample in
 *   time order per thread, weighing its own value, so "Time Order" shows
 *   what each thread did when. Labels other than pid and thread_id are not
 *   in the timeline, so --tag may only name those two then.
 * Weights are in the chosen sample type: nanoseconds stay nanoseconds,
 * counts are "none".
 *
 * The format has no per-sample tags, so with split the time label
 * (docs/reading.md, "Python, native and system time") becomes a frame: a
 * sample whose time was native or system gets a leaf "[native]" or
 * "[system]" under its stack (a timeline record: from its WIRE_SF_TIME_*
 * flags). Python time gets none, so that a function's self time in
 * speedscope is its Python time and the pseudo-frames below it are the
 * rest; the file's name says so, since self times change.
 */
#include "views/renderers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/idhash.h"
#include "pyprof/wire.h"
#include "common/timeline_file.h"

#define SS_NAME_LEN 256

/* Output frames that are no key: the split's leaves (order[] holds these
 * instead of a key id). */
#define SS_NATIVE UINT32_MAX
#define SS_SYSTEM (UINT32_MAX - 1)

/* One output profile: a (pid, tid) pair and its samples. */
struct lane {
	uint64_t pid, tid;
	char name[SS_NAME_LEN]; /* thread name, "" if unknown */
	size_t *items;		/* sample or record indexes, in order */
	size_t n, cap;
	int64_t total;
};

struct ss {
	FILE *out;
	const struct view_profile *p;
	const struct view_keys *keys;
	const uint32_t *kmap;
	int32_t *frame_of_key; /* key -> output frame index, -1 unused */
	uint32_t *order;       /* output frame index -> key */
	size_t n_out;
	int32_t trunc_frame; /* output index of "[truncated]", -1 */
	/* split: [native] and [system] leaves; kind_frame: their output
	 * indexes, -1 until used */
	int split;
	int32_t kind_frame[2];
	struct lane *lanes;
	size_t n_lanes, lanes_cap;
	struct idhash lane_hash;
	int oom;
	/* what is written */
	const struct timeline_data *tl; /* NULL: the profile's samples */
	size_t type;			/* the sample type */
	int use_count;			/* timeline weights: counts, not values */
	uint32_t *fbuf;			/* a timeline record's frames */
	size_t fcap;
};

static int lane_eq(const void *ctx, uint32_t id)
{
	const uint64_t *k = ctx;
	const struct ss *s = (const struct ss *)k[2];
	return s->lanes[id - 1].pid == k[0] && s->lanes[id - 1].tid == k[1];
}

static struct lane *lane_get(struct ss *s, uint64_t pid, uint64_t tid)
{
	uint64_t key[3] = { pid, tid, (uint64_t)(uintptr_t)s };
	uint64_t h = idhash_combine(idhash_mix(pid), tid);
	uint32_t id = idhash_find(&s->lane_hash, h, lane_eq, key);
	struct lane *l;

	if (id)
		return &s->lanes[id - 1];
	if (grow_array(&s->lanes, &s->lanes_cap, s->n_lanes + 1,
		       sizeof(*s->lanes), 16) < 0)
		return NULL;
	if (idhash_insert(&s->lane_hash, h, (uint32_t)s->n_lanes + 1) < 0)
		return NULL;
	l = &s->lanes[s->n_lanes++];
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->tid = tid;
	return l;
}

static int lane_push(struct lane *l, size_t item, int64_t w)
{
	if (grow_array(&l->items, &l->cap, l->n + 1, sizeof(*l->items),
		       256) < 0)
		return -ENOMEM;
	l->items[l->n++] = item;
	l->total += w;
	return 0;
}

static uint64_t label_u64(const struct view_sample *smp, const char *key)
{
	char buf[32];
	const char *v = view_sample_label(smp, key, buf, sizeof(buf));
	return v ? strtoull(v, NULL, 10) : 0;
}

/* ---- JSON --------------------------------------------------------------------- */

static void json_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if (*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else if (*s < 0x80)
			putc(*s, out);
		else {
			/* Copy a valid UTF-8 sequence; replace a bad byte. */
			size_t n = (*s & 0xe0) == 0xc0 ? 2 : (*s & 0xf0) == 0xe0 ? 3
						     : (*s & 0xf8) == 0xf0	 ? 4
										 : 0;
			size_t i;
			for (i = 1; n && i < n; i++)
				if ((s[i] & 0xc0) != 0x80)
					n = 0;
			if (n < 2 || *s < 0xc2 || *s > 0xf4) {
				fputs("\\ufffd", out);
				continue;
			}
			fwrite(s, 1, n, out);
			s += n - 1;
		}
	}
	putc('"', out);
}

static int32_t out_frame(struct ss *s, uint32_t key)
{
	if (s->frame_of_key[key] < 0) {
		s->order[s->n_out] = key;
		s->frame_of_key[key] = (int32_t)s->n_out++;
	}
	return s->frame_of_key[key];
}

/* The output index of the split's leaf for kind (0 native, 1 system). */
static int32_t kind_frame(struct ss *s, int kind)
{
	if (s->kind_frame[kind] < 0) {
		s->order[s->n_out] = kind ? SS_SYSTEM : SS_NATIVE;
		s->kind_frame[kind] = (int32_t)s->n_out++;
	}
	return s->kind_frame[kind];
}

/* Writes one stack of frame indexes (leaf first in frames) root first,
 * then the split's leaf for kind (0 native, 1 system; -1 none). */
static void put_stack(struct ss *s, const uint32_t *frames, size_t n,
		      int truncated, int kind, int *first)
{
	fputs(*first ? "[" : ",[", s->out);
	*first = 0;
	if (truncated)
		fprintf(s->out, "%d%s", s->trunc_frame, n ? "," : "");
	for (size_t i = n; i-- > 0;)
		fprintf(s->out, "%d%s", out_frame(s, s->kmap[frames[i]]),
			i ? "," : "");
	if (kind >= 0)
		fprintf(s->out, "%s%d", n || truncated ? "," : "",
			kind_frame(s, kind));
	putc(']', s->out);
}

/* The split's kind of a profile sample: 0 native, 1 system, -1 python or
 * no time label (or no split asked for). */
static int sample_kind(const struct ss *s, const struct view_sample *smp)
{
	char buf[16];
	const char *v;

	if (!s->split)
		return -1;
	v = view_sample_label(smp, "time", buf, sizeof(buf));
	if (v && !strcmp(v, "native"))
		return 0;
	if (v && !strcmp(v, "system"))
		return 1;
	return -1;
}

/* The same for a timeline record, from its flags as the wire sent them. */
static int rec_kind(const struct ss *s, const struct timeline_rec *r)
{
	if (!s->split || !(r->flags & WIRE_SF_TIME_KNOWN))
		return -1;
	if (r->flags & WIRE_SF_TIME_SYSTEM)
		return 1;
	return r->flags & WIRE_SF_TIME_NATIVE ? 0 : -1;
}

static const char *ss_unit(const char *unit)
{
	static const char *const ok[] = { "nanoseconds", "microseconds",
					  "milliseconds", "seconds", "bytes" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(unit, ok[i]))
			return ok[i];
	return "none";
}

static void lane_head(struct ss *s, const struct lane *l, const char *unit,
		      int first)
{
	char name[SS_NAME_LEN + 64];

	if (l->name[0])
		snprintf(name, sizeof(name), "pid %" PRIu64 " thread %" PRIu64 " (%s)", l->pid, l->tid, l->name);
	else
		snprintf(name, sizeof(name), "pid %" PRIu64 " thread %" PRIu64,
			 l->pid, l->tid);
	fputs(first ? "\n" : ",\n", s->out);
	fputs("{\"type\":\"sampled\",\"name\":", s->out);
	json_str(s->out, name);
	fprintf(s->out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRId64 ",\n\"samples\":[", ss_unit(unit), l->total);
}

/* ---- the two sources ---------------------------------------------------------- */

static int from_profile(struct ss *s, size_t type,
			const struct view_filter *f)
{
	const struct view_profile *p = s->p;

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *smp = &p->samples[i];
		struct lane *l;
		if (smp->values[type] <= 0 || (f && !view_sample_matches(smp, f)))
			continue;
		l = lane_get(s, label_u64(smp, "pid"),
			     label_u64(smp, "thread_id"));
		if (!l || lane_push(l, i, smp->values[type]) < 0)
			return -ENOMEM;
	}
	return 0;
}

static const struct timeline_data *sort_tl;

static int cmp_rec(const void *a, const void *b)
{
	const struct timeline_rec *x = &sort_tl->recs[*(const size_t *)a];
	const struct timeline_rec *y = &sort_tl->recs[*(const size_t *)b];
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* Stable: arrival order breaks ties. */
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int from_timeline(struct ss *s, const struct timeline_data *tl,
			 int use_count, const struct view_filter *f,
			 char *err)
{
	for (size_t i = 0; f && i < f->n; i++) {
		const char *k = f->tags[i].key;
		size_t len = (size_t)(f->tags[i].value - 1 - k);
		if (!(len == 3 && !memcmp(k, "pid", 3)) &&
		    !(len == 9 && !memcmp(k, "thread_id", 9))) {
			snprintf(err, ERR_LEN, "with a timeline, --tag "
					       "may only name pid and thread_id");
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < tl->n_records; i++) {
		const struct timeline_rec *r = &tl->recs[i];
		int64_t w = use_count ? r->count : r->value;
		struct lane *l;
		if (w <= 0)
			continue;
		if (f && f->n) {
			char pid[24], tid[24];
			struct view_label lb[2] = {
				{ "pid", pid, 0, "" },
				{ "thread_id", tid, 0, "" },
			};
			struct view_sample fake = { .labels = lb, .n_labels = 2 };
			snprintf(pid, sizeof(pid), "%" PRIu64, r->pid);
			snprintf(tid, sizeof(tid), "%" PRIu64, r->tid);
			if (!view_sample_matches(&fake, f))
				continue;
		}
		l = lane_get(s, r->pid, r->tid);
		if (!l || lane_push(l, i, w) < 0)
			return -ENOMEM;
	}
	sort_tl = tl;
	for (size_t i = 0; i < s->n_lanes; i++)
		qsort(s->lanes[i].items, s->lanes[i].n, sizeof(size_t),
		      cmp_rec);
	sort_tl = NULL;
	return 0;
}

/* Thread names from the profile's labels. */
static void name_lanes(struct ss *s)
{
	const struct view_profile *p = s->p;
	char buf[SS_NAME_LEN];

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct view_sample *smp = &p->samples[i];
		uint64_t key[3] = { label_u64(smp, "pid"),
				    label_u64(smp, "thread_id"),
				    (uint64_t)(uintptr_t)s };
		uint64_t h = idhash_combine(idhash_mix(key[0]), key[1]);
		uint32_t id = idhash_find(&s->lane_hash, h, lane_eq, key);
		if (id && !s->lanes[id - 1].name[0] &&
		    view_sample_label(smp, "thread_name", buf, sizeof(buf)))
			snprintf(s->lanes[id - 1].name, SS_NAME_LEN, "%s", buf);
	}
}

/* Frames of the records' stacks, from the profile's locations. */
static int tl_frames(const struct view_profile *p,
		     const struct timeline_data *tl, size_t stack,
		     uint32_t **buf, size_t *cap, size_t *n, char *err)
{
	const uint64_t *locs = tl->locs + tl->stack_first[stack];
	size_t len = 0;

	for (uint32_t i = 0; i < tl->stack_len[stack]; i++) {
		uint32_t first, cnt;
		if (view_find_location(p, locs[i], &first, &cnt) < 0) {
			snprintf(err, ERR_LEN, "the timeline names "
					       "location %" PRIu64 ", which the profile does "
					       "not have (not the profile it was recorded "
					       "with?)",
				 locs[i]);
			return -EINVAL;
		}
		if (grow_array(buf, cap, len + cnt, sizeof(**buf), 64) < 0)
			return -ENOMEM;
		for (uint32_t k = 0; k < cnt; k++)
			(*buf)[len++] = first + k;
	}
	*n = len;
	return 0;
}

/* Lane l's stacks, root first, each as output frame indexes. */
static int write_samples(struct ss *s, const struct lane *l, char *err)
{
	int first = 1, rc;

	for (size_t i = 0; i < l->n; i++) {
		if (s->tl) {
			const struct timeline_rec *r = &s->tl->recs[l->items[i]];
			size_t n;
			rc = tl_frames(s->p, s->tl, r->stack, &s->fbuf,
				       &s->fcap, &n, err);
			if (rc < 0)
				return rc;
			put_stack(s, s->fbuf, n,
				  (r->flags & WIRE_SF_TRUNCATED) != 0,
				  rec_kind(s, r), &first);
		} else {
			const struct view_sample *smp =
				&s->p->samples[l->items[i]];
			put_stack(s, smp->frames, smp->n_frames, 0,
				  sample_kind(s, smp), &first);
		}
	}
	return 0;
}

/* Lane l's weights, one per stack. */
static void write_weights(struct ss *s, const struct lane *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct timeline_rec *r;
		int64_t w;
		if (s->tl) {
			r = &s->tl->recs[l->items[i]];
			w = s->use_count ? r->count : r->value;
		} else {
			w = s->p->samples[l->items[i]].values[s->type];
		}
		fprintf(s->out, "%s%" PRId64, i ? "," : "", w);
	}
}

/* The shared frames, in output order. */
static void write_frames(struct ss *s)
{
	for (size_t i = 0; i < s->n_out; i++) {
		const struct view_key *k;
		if (i)
			fputs(",", s->out);
		fputs("\n{\"name\":", s->out);
		if (i == 0 && s->trunc_frame == 0) {
			json_str(s->out, "[truncated]");
			fputs("}", s->out);
			continue;
		}
		if (s->order[i] == SS_NATIVE || s->order[i] == SS_SYSTEM) {
			json_str(s->out, s->order[i] == SS_NATIVE ? "[native]"
								  : "[system]");
			fputs("}", s->out);
			continue;
		}
		k = &s->keys->v[s->order[i]];
		json_str(s->out, k->name);
		if (k->file[0]) {
			fputs(",\"file\":", s->out);
			json_str(s->out, k->file);
		}
		if (k->line > 0)
			fprintf(s->out, ",\"line\":%" PRId64, k->line);
		fputs("}", s->out);
	}
}

/* The whole file: header, one profile per lane, the shared frames. */
static int write_file(struct ss *s, const char *name, char *err)
{
	int rc;

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema"
	      ".json\",\n\"exporter\":\"pyprof\",\"name\":",
	      s->out);
	if (s->split) {
		/* Self times are not the profile's own: say why. */
		char *named = NULL;
		if (asprintf(&named, "%s (split: [native], [system] leaves)",
			     name ? name : "pyprof profile") < 0)
			return -ENOMEM;
		json_str(s->out, named);
		free(named);
	} else {
		json_str(s->out, name ? name : "pyprof profile");
	}
	fputs(",\"activeProfileIndex\":0,\n\"profiles\":[", s->out);
	for (size_t li = 0; li < s->n_lanes; li++) {
		const struct lane *l = &s->lanes[li];
		lane_head(s, l, s->p->types[s->type].unit, li == 0);
		rc = write_samples(s, l, err);
		if (rc < 0)
			return rc;
		fputs("],\n\"weights\":[", s->out);
		write_weights(s, l);
		fputs("]}", s->out);
	}
	fputs("\n],\n\"shared\":{\"frames\":[", s->out);
	write_frames(s);
	fputs("\n]}}\n", s->out);
	return ferror(s->out) ? -EIO : 0;
}

/* Samples into lanes, from the timeline or the profile, and the lanes'
 * thread names. */
static int collect(struct ss *s, const struct view_filter *filter,
		   char *err)
{
	int rc;

	s->trunc_frame = -1;
	if (s->tl) {
		for (size_t i = 0; i < s->tl->n_records && s->trunc_frame < 0;
		     i++)
			if (s->tl->recs[i].flags & WIRE_SF_TRUNCATED)
				s->trunc_frame = 0;
		rc = from_timeline(s, s->tl, s->use_count, filter, err);
	} else {
		rc = from_profile(s, s->type, filter);
	}
	if (rc < 0)
		return rc;
	name_lanes(s);
	/* "[truncated]" is frame 0 when a timeline needs it (in a profile
	 * alone it is an ordinary frame). */
	if (s->trunc_frame == 0)
		s->n_out = 1;
	return 0;
}

int view_speedscope(FILE *out, const struct view_profile *p,
		    const struct timeline_data *tl, const char *sample_type,
		    const struct view_filter *filter, const char *name,
		    int split, char *err)
{
	struct view_keys keys;
	struct ss s = { 0 };
	uint32_t *kmap = NULL;
	size_t type;
	int rc;

	err[0] = 0;
	if (view_need_type(p, sample_type, &type, err) < 0)
		return -ENOENT;
	view_keys_init(&keys, VIEW_BY_FUNCTION);
	idhash_init(&s.lane_hash);
	rc = view_keys_map(&keys, p, &kmap);
	if (rc < 0)
		goto out;
	rc = -ENOMEM;
	s.out = out;
	s.p = p;
	s.keys = &keys;
	s.kmap = kmap;
	s.tl = tl;
	s.type = type;
	s.use_count = !strcmp(p->types[type].unit, "count");
	s.split = split;
	s.kind_frame[0] = s.kind_frame[1] = -1;
	s.frame_of_key = malloc((keys.n + 1) * sizeof(*s.frame_of_key));
	/* every key, "[truncated]", [native] and [system] */
	s.order = malloc((keys.n + 3) * sizeof(*s.order));
	if (!s.frame_of_key || !s.order)
		goto out;
	for (size_t i = 0; i < keys.n; i++)
		s.frame_of_key[i] = -1;
	rc = collect(&s, filter, err);
	if (rc == 0)
		rc = write_file(&s, name, err);
out:
	view_errno_text(rc, err);
	for (size_t i = 0; i < s.n_lanes; i++)
		free(s.lanes[i].items);
	free(s.lanes);
	idhash_fini(&s.lane_hash);
	free(s.frame_of_key);
	free(s.order);
	free(s.fbuf);
	free(kmap);
	view_keys_fini(&keys);
	return rc;
}
