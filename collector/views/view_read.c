/*
 * view_read.c - the pprof reader every view uses (see view_read.h), and
 * its sample types. The helpers the views share (label filters, keys,
 * value formatting) are view_helpers.c's.
 *
 * Reading is three steps: gunzip (zlib, gzip or zlib wrapper detected by
 * the first bytes, output capped at VIEW_MAX_INFLATED), unpack (protobuf-c,
 * which rejects malformed wire data), then check and flatten: every string
 * index and every id is resolved once here, so the views index plain
 * arrays and never see a dangling reference. Ids are usually dense (1..n,
 * in order: ours and Go's), then an id is an index; otherwise a sorted
 * copy is binary-searched.
 *
 * Workload: profiles of up to a few hundred thousand samples with stacks
 * of tens of frames; the flattening is linear in the number of
 * (sample, location) pairs.
 */
#include "views/view_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"
#include "common/gunzip.h"
#include "common/readfile.h"
#include "common/sorted.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

/* ---- input ---------------------------------------------------------------- */

static int read_all(const char *path, uint8_t **out, size_t *out_len,
		    char *err)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	int rc;

	if (fd < 0) {
		rc = -errno;
		snprintf(err, ERR_LEN, "%s", strerror(errno));
		return rc;
	}
	rc = read_fd_all(fd, VIEW_MAX_FILE, out, out_len);
	if (rc == -E2BIG)
		snprintf(err, ERR_LEN, "larger than %llu bytes",
			 VIEW_MAX_FILE);
	else if (rc < 0 && rc != -ENOMEM)
		snprintf(err, ERR_LEN, "%s", strerror(-rc));
	if (fd > 0)
		close(fd);
	return rc;
}

/* ---- id maps ---------------------------------------------------------------- */

/* Ids of one kind (functions or locations) -> their index in the message. */
struct ids {
	uint64_t *id; /* sorted, unless dense */
	uint32_t *idx;
	size_t n;
	int dense; /* id i+1 is index i */
};

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* get_id(msg, i) reads the id of entry i. */
static int ids_build(struct ids *m, size_t n, uint64_t (*get_id)(void *, size_t),
		     void *msg, const char *what, char *err)
{
	uint64_t *pairs = NULL;
	int rc = -ENOMEM;

	m->n = n;
	m->dense = 1;
	for (size_t i = 0; i < n && m->dense; i++)
		if (get_id(msg, i) != i + 1)
			m->dense = 0;
	if (m->dense)
		return 0;
	pairs = malloc(n * 2 * sizeof(*pairs) + 1);
	m->id = malloc(n * sizeof(*m->id) + 1);
	m->idx = malloc(n * sizeof(*m->idx) + 1);
	if (!pairs || !m->id || !m->idx)
		goto out;
	for (size_t i = 0; i < n; i++) {
		pairs[2 * i] = get_id(msg, i);
		pairs[2 * i + 1] = i;
	}
	qsort(pairs, n, 2 * sizeof(*pairs), cmp_pair);
	for (size_t i = 0; i < n; i++) {
		m->id[i] = pairs[2 * i];
		m->idx[i] = (uint32_t)pairs[2 * i + 1];
		if (m->id[i] == 0 || (i > 0 && m->id[i] == m->id[i - 1])) {
			snprintf(err, ERR_LEN, "%s id %" PRIu64 " is %s",
				 what, m->id[i], m->id[i] ? "repeated" : "zero");
			rc = -EINVAL;
			goto out;
		}
	}
	rc = 0;
out:
	free(pairs);
	return rc;
}

static void ids_fini(struct ids *m)
{
	free(m->id);
	free(m->idx);
}

/* The index of id, or -1. */
static long ids_find(const struct ids *m, uint64_t id)
{
	size_t lo;

	if (m->dense)
		return id >= 1 && id <= m->n ? (long)(id - 1) : -1;
	lo = sorted_lower_u64(m->id, m->n, sizeof(*m->id), 0, id);
	return lo < m->n && m->id[lo] == id ? (long)m->idx[lo] : -1;
}

static uint64_t func_id(void *msg, size_t i)
{
	return ((Profile *)msg)->function[i]->id;
}

static uint64_t loc_id(void *msg, size_t i)
{
	return ((Profile *)msg)->location[i]->id;
}

/* ---- flattening ------------------------------------------------------------- */

struct reader {
	Profile *pb;
	struct view_profile *p;
	char *err;
	int bad; /* a string index was out of range */
};

static const char *str(struct reader *r, int64_t idx)
{
	if (idx < 0 || (uint64_t)idx >= r->pb->n_string_table) {
		if (!r->bad)
			snprintf(r->err, ERR_LEN, "string index %" PRId64 " out of range (table has %zu)", idx,
				 r->pb->n_string_table);
		r->bad = 1;
		return "";
	}
	if (r->p->printable && r->p->printable[idx])
		return r->p->printable[idx];
	return r->pb->string_table[idx];
}

/* Length of the character of UTF-8 at s that a terminal shows as text,
 * or 0 when it must be escaped: a control character (C0, DEL, C1), a
 * bidirectional override or isolate (text that reads other than it is
 * stored), or a byte that is not well-formed UTF-8. */
static size_t shown_as_text(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x80)
		return 1;
	size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
					: c >= 0xf0 && c <= 0xf4       ? 4
								       : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0; /* overlong, a surrogate, past U+10FFFF */
	if (c == 0xc2 && s[1] < 0xa0)
		return 0; /* C1: U+0080..U+009F (0x9b is a CSI) */
	if (c == 0xe2 && ((s[1] == 0x80 && s[2] >= 0xaa && s[2] <= 0xae) ||
			  (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
		return 0; /* U+202A..U+202E, U+2066..U+2069 */
	return n;
}

/* s with what shown_as_text refuses written as visible escapes (\n, \t,
 * \r, \xNN for other bytes, \uNNNN for C1 and bidi characters), or NULL
 * when s needs none or on out of memory (*oom set). */
static char *printable_copy(const char *s, int *oom)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;
	while (u[i] && (n = shown_as_text(u + i)) != 0)
		i += n;
	if (!u[i])
		return NULL;
	size_t len = strlen(s);
	char *out = malloc(len * 6 + 1); /* a 3-byte char: \uNNNN */
	if (!out) {
		*oom = 1;
		return NULL;
	}
	size_t o = 0;
	for (i = 0; u[i];) {
		n = shown_as_text(u + i);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		unsigned c = u[i];
		if (c == '\n' || c == '\t' || c == '\r') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : c == '\t' ? 't'
							       : 'r';
			i++;
		} else if (c == 0xc2 && u[i + 1] >= 0x80 && u[i + 1] < 0xa0) {
			o += (size_t)sprintf(out + o, "\\u%04x", u[i + 1]);
			i += 2;
		} else if (c == 0xe2 && (u[i + 1] == 0x80 || u[i + 1] == 0x81) &&
			   (u[i + 2] & 0xc0) == 0x80) {
			o += (size_t)sprintf(out + o, "\\u%04x",
					     0x2000 | (u[i + 1] & 0x3f) << 6 |
						     (u[i + 2] & 0x3f));
			i += 3;
		} else {
			o += (size_t)sprintf(out + o, "\\x%02x", c);
			i++;
		}
	}
	out[o] = 0;
	return out;
}

/* For a view read on a terminal: a printable copy of every string of the
 * table that needs one (most need none). */
static int make_printable(struct reader *r)
{
	Profile *pb = r->pb;
	int oom = 0;
	r->p->printable = calloc(pb->n_string_table ? pb->n_string_table : 1,
				 sizeof(char *));
	if (!r->p->printable)
		return -ENOMEM;
	r->p->n_printable = pb->n_string_table;
	for (size_t i = 0; i < pb->n_string_table && !oom; i++)
		r->p->printable[i] = printable_copy(pb->string_table[i], &oom);
	return oom ? -ENOMEM : 0;
}

static void *own(struct view_profile *p, size_t size)
{
	for (size_t i = 0; i < sizeof(p->owned) / sizeof(p->owned[0]); i++) {
		if (!p->owned[i]) {
			p->owned[i] = calloc(1, size ? size : 1);
			return p->owned[i];
		}
	}
	return NULL;
}

/* The counts flattening needs, from a first pass over the message. */
struct sizes {
	size_t n_frames;  /* one per line of each location, one if none */
	size_t n_addr;	  /* locations without lines: named by address */
	size_t n_sframes; /* frames of all samples, locations expanded */
	size_t n_labels;
};

/* The first pass: each location's frame count (p->loc_n), the sizes,
 * and the checks of samples against sample types and location ids. */
static int count(struct reader *r, const struct ids *lids, struct sizes *z)
{
	Profile *pb = r->pb;
	struct view_profile *p = r->p;

	for (size_t i = 0; i < pb->n_location; i++) {
		size_t nl = pb->location[i]->n_line;
		z->n_frames += nl ? nl : 1;
		z->n_addr += nl == 0;
	}
	p->n_locs = pb->n_location;
	p->loc_first = malloc(p->n_locs * sizeof(uint32_t) + 1);
	p->loc_n = malloc(p->n_locs * sizeof(uint32_t) + 1);
	if (!p->loc_first || !p->loc_n)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_location; i++) {
		p->loc_first[i] = 0;
		p->loc_n[i] = pb->location[i]->n_line ? (uint32_t)
								pb->location[i]
									->n_line
						      : 1;
	}
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];
		if (s->n_value != pb->n_sample_type) {
			snprintf(r->err, ERR_LEN, "sample %zu has %zu "
						  "values for %zu sample types",
				 i, s->n_value,
				 pb->n_sample_type);
			return -EINVAL;
		}
		for (size_t j = 0; j < s->n_location_id; j++) {
			long li = ids_find(lids, s->location_id[j]);
			if (li < 0) {
				snprintf(r->err, ERR_LEN, "sample %zu: "
							  "no location with id %" PRIu64,
					 i,
					 s->location_id[j]);
				return -EINVAL;
			}
			z->n_sframes += p->loc_n[li];
		}
		z->n_labels += s->n_label;
	}
	if (z->n_frames > UINT32_MAX || z->n_sframes > UINT32_MAX ||
	    pb->n_function + z->n_addr > UINT32_MAX) {
		snprintf(r->err, ERR_LEN, "too many frames");
		return -E2BIG;
	}
	return 0;
}

/* Sample types, and which one is the default. */
static int read_types(struct reader *r)
{
	Profile *pb = r->pb;
	struct view_profile *p = r->p;
	struct view_type *types = own(p, pb->n_sample_type * sizeof(*types));

	if (!types)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_sample_type; i++) {
		types[i].type = str(r, pb->sample_type[i]->type);
		types[i].unit = str(r, pb->sample_type[i]->unit);
	}
	p->n_types = pb->n_sample_type;
	p->types = types;
	p->default_type = pb->n_sample_type - 1;
	if (pb->default_sample_type) {
		const char *want = str(r, pb->default_sample_type);
		for (size_t i = 0; i < p->n_types; i++)
			if (!strcmp(types[i].type, want))
				p->default_type = i;
	}
	return 0;
}

/* A location without lines: one frame, of a function named by its
 * address (made here, after the profile's own functions). */
static void address_frame(struct view_profile *p, size_t n_pb_funcs,
			  const Perftools__Profiles__Location *l,
			  struct view_func *funcs, struct view_frame *frame)
{
	char *name = p->addr_names + 20 * (p->n_funcs - n_pb_funcs);

	snprintf(name, 20, "0x%" PRIx64, l->address);
	funcs[p->n_funcs] = (struct view_func){ name, name, "", 0 };
	frame->func = (uint32_t)p->n_funcs++;
	frame->line = 0;
}

/* Functions, then every location's frames (one per line). */
static int read_frames(struct reader *r, const struct ids *fids,
		       const struct sizes *z)
{
	Profile *pb = r->pb;
	struct view_profile *p = r->p;
	struct view_func *funcs;
	struct view_frame *frames;
	size_t fr = 0;

	funcs = own(p, (pb->n_function + z->n_addr) * sizeof(*funcs));
	frames = own(p, z->n_frames * sizeof(*frames));
	p->addr_names = calloc(z->n_addr ? z->n_addr : 1, 20);
	if (!funcs || !frames || !p->addr_names)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_function; i++) {
		const Perftools__Profiles__Function *f = pb->function[i];
		funcs[i].name = str(r, f->name);
		funcs[i].system_name = str(r, f->system_name);
		funcs[i].file = str(r, f->filename);
		funcs[i].start_line = f->start_line;
	}
	p->n_funcs = pb->n_function;
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];
		p->loc_first[i] = (uint32_t)fr;
		if (l->n_line == 0) {
			address_frame(p, pb->n_function, l, funcs,
				      &frames[fr++]);
			continue;
		}
		for (size_t j = 0; j < l->n_line; j++) {
			long fi = ids_find(fids, l->line[j]->function_id);
			if (fi < 0) {
				snprintf(r->err, ERR_LEN, "location %" PRIu64 ": no function with id %" PRIu64, l->id, l->line[j]->function_id);
				return -EINVAL;
			}
			frames[fr].func = (uint32_t)fi;
			frames[fr++].line = l->line[j]->line;
		}
	}
	p->funcs = funcs;
	p->n_frames = fr;
	p->frames = frames;
	return 0;
}

/* Sample s's labels into labels[]. */
static void read_labels(struct reader *r,
			const Perftools__Profiles__Sample *s,
			struct view_label *labels)
{
	for (size_t j = 0; j < s->n_label; j++) {
		const Perftools__Profiles__Label *l = s->label[j];
		labels[j].key = str(r, l->key);
		/* pprof: a string index of 0 makes it numeric. */
		labels[j].str = l->str ? str(r, l->str) : NULL;
		labels[j].num = l->num;
		labels[j].num_unit = str(r, l->num_unit);
	}
}

/* Samples: their frames (every location expanded to its frames), values
 * and labels. */
static int read_samples(struct reader *r, const struct ids *lids,
			const struct sizes *z)
{
	Profile *pb = r->pb;
	struct view_profile *p = r->p;
	struct view_sample *samples;
	struct view_label *labels;
	uint32_t *sframes;
	size_t sf = 0, lb = 0;

	samples = own(p, pb->n_sample * sizeof(*samples));
	sframes = own(p, z->n_sframes * sizeof(*sframes));
	labels = own(p, z->n_labels * sizeof(*labels));
	if (!samples || !sframes || !labels)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pb->sample[i];
		size_t start = sf;
		samples[i].frames = sframes + sf;
		for (size_t j = 0; j < s->n_location_id; j++) {
			long li = ids_find(lids, s->location_id[j]);
			for (uint32_t k = 0; k < p->loc_n[li]; k++)
				sframes[sf++] = p->loc_first[li] + k;
		}
		samples[i].n_frames = (uint32_t)(sf - start);
		samples[i].values = s->value;
		samples[i].labels = labels + lb;
		samples[i].n_labels = (uint32_t)s->n_label;
		read_labels(r, s, labels + lb);
		lb += s->n_label;
	}
	p->n_samples = pb->n_sample;
	p->samples = samples;
	return 0;
}

/* Comments, times and the period. */
static int read_about(struct reader *r)
{
	Profile *pb = r->pb;
	struct view_profile *p = r->p;
	const char **comments = own(p, pb->n_comment * sizeof(*comments));

	if (!comments)
		return -ENOMEM;
	for (size_t i = 0; i < pb->n_comment; i++)
		comments[i] = str(r, pb->comment[i]);
	p->n_comments = pb->n_comment;
	p->comments = comments;
	p->time_nanos = pb->time_nanos;
	p->duration_nanos = pb->duration_nanos;
	p->period = pb->period;
	p->period_type.type = pb->period_type ? str(r, pb->period_type->type)
					      : "";
	p->period_type.unit = pb->period_type ? str(r, pb->period_type->unit)
					      : "";
	return 0;
}

/* Location ids for view_find_location: kept sorted. */
static int keep_location_ids(struct view_profile *p, const struct ids *lids)
{
	p->loc_ids = malloc(p->n_locs * sizeof(uint64_t) + 1);
	p->loc_index = malloc(p->n_locs * sizeof(uint32_t) + 1);
	if (!p->loc_ids || !p->loc_index)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_locs; i++) {
		p->loc_ids[i] = lids->dense ? i + 1 : lids->id[i];
		p->loc_index[i] = lids->dense ? (uint32_t)i : lids->idx[i];
	}
	return 0;
}

static int flatten(struct reader *r)
{
	Profile *pb = r->pb;
	struct ids fids = { 0 }, lids = { 0 };
	struct sizes z = { 0 };
	int rc;

	if (pb->n_string_table == 0 || pb->string_table[0][0] != 0) {
		snprintf(r->err, ERR_LEN, "string table does not start "
					  "with \"\"");
		return -EINVAL;
	}
	if (pb->n_sample_type == 0) {
		snprintf(r->err, ERR_LEN, "no sample types");
		return -EINVAL;
	}
	if ((rc = ids_build(&fids, pb->n_function, func_id, pb, "function",
			    r->err)) < 0 ||
	    (rc = ids_build(&lids, pb->n_location, loc_id, pb, "location",
			    r->err)) < 0 ||
	    (rc = count(r, &lids, &z)) < 0 ||
	    (rc = read_types(r)) < 0 ||
	    (rc = read_frames(r, &fids, &z)) < 0 ||
	    (rc = read_samples(r, &lids, &z)) < 0 ||
	    (rc = read_about(r)) < 0)
		goto out;
	rc = -EINVAL;
	if (r->bad) /* a string index out of range, said in r->err */
		goto out;
	rc = keep_location_ids(r->p, &lids);
out:
	ids_fini(&fids);
	ids_fini(&lids);
	return rc;
}

int view_pack_commented(const struct view_profile *p,
			const char *const *extra, size_t n, uint8_t **out,
			size_t *len)
{
	const Perftools__Profiles__Profile *pb = p->pb;
	Perftools__Profiles__Profile copy = *pb;
	char **strs = malloc((pb->n_string_table + n + 1) * sizeof(*strs));
	int64_t *cm = malloc((pb->n_comment + n + 1) * sizeof(*cm));
	uint8_t *buf = NULL;
	int rc = -ENOMEM;

	if (!strs || !cm)
		goto out;
	/* A shallow copy whose string table and comments are longer: the
	 * new strings at the table's end, so no index moves. */
	memcpy(strs, pb->string_table, pb->n_string_table * sizeof(*strs));
	memcpy(cm, pb->comment, pb->n_comment * sizeof(*cm));
	for (size_t i = 0; i < n; i++) {
		strs[pb->n_string_table + i] = (char *)(uintptr_t)extra[i];
		cm[pb->n_comment + i] = (int64_t)(pb->n_string_table + i);
	}
	copy.string_table = strs;
	copy.n_string_table = pb->n_string_table + n;
	copy.comment = cm;
	copy.n_comment = pb->n_comment + n;
	*len = perftools__profiles__profile__get_packed_size(&copy);
	buf = malloc(*len ? *len : 1);
	if (!buf)
		goto out;
	perftools__profiles__profile__pack(&copy, buf);
	*out = buf;
	rc = 0;
out:
	free(strs);
	free(cm);
	return rc;
}

void view_free(struct view_profile *p)
{
	if (!p)
		return;
	if (p->pb)
		perftools__profiles__profile__free_unpacked(p->pb, NULL);
	for (size_t i = 0; i < sizeof(p->owned) / sizeof(p->owned[0]); i++)
		free(p->owned[i]);
	free(p->loc_ids);
	free(p->loc_index);
	free(p->loc_first);
	free(p->loc_n);
	free(p->addr_names);
	for (size_t i = 0; i < p->n_printable; i++)
		free(p->printable[i]);
	free(p->printable);
	free(p);
}

static int read_mem(const void *data, size_t len, int printable,
		    struct view_profile **out, char *err)
{
	const uint8_t *d = data;
	uint8_t *plain = NULL;
	size_t plain_len = len;
	struct view_profile *p = NULL;
	struct reader r = { 0 };
	int rc;

	*out = NULL;
	err[0] = 0;
	if (len == 0) {
		snprintf(err, ERR_LEN, "not a pprof profile (empty file)");
		return -EINVAL;
	}
	if (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) {
		rc = gunzip_mem(d, len, VIEW_MAX_INFLATED, &plain, &plain_len,
				err, ERR_LEN);
		if (rc < 0)
			goto out;
		d = plain;
		if (plain_len == 0) {
			snprintf(err, ERR_LEN, "not a pprof profile "
					       "(empty once uncompressed)");
			rc = -EINVAL;
			goto out;
		}
	}
	rc = -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		goto out;
	p->pb = perftools__profiles__profile__unpack(NULL, plain_len, d);
	if (!p->pb) {
		snprintf(err, ERR_LEN, "not a pprof profile (protobuf "
				       "decoding failed)");
		rc = -EINVAL;
		goto out;
	}
	r.pb = p->pb;
	r.p = p;
	r.err = err;
	rc = printable ? make_printable(&r) : 0;
	if (rc == 0)
		rc = flatten(&r);
	if (rc == -ENOMEM && !err[0])
		snprintf(err, ERR_LEN, "out of memory");
	if (rc < 0)
		goto out;
	*out = p;
	p = NULL;
out:
	view_free(p);
	free(plain);
	return rc;
}

int view_read_mem(const void *data, size_t len, struct view_profile **out,
		  char *err)
{
	return read_mem(data, len, 0, out, err);
}

static int read_file(const char *path, int printable,
		     struct view_profile **out, char *err)
{
	uint8_t *data = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = read_all(path, &data, &len, err);
	if (rc == 0)
		rc = read_mem(data, len, printable, out, err);
	free(data);
	return rc;
}

int view_read_file(const char *path, struct view_profile **out, char *err)
{
	return read_file(path, 0, out, err);
}

int view_read_text_mem(const void *data, size_t len,
		       struct view_profile **out, char *err)
{
	return read_mem(data, len, 1, out, err);
}

int view_read_text_file(const char *path, struct view_profile **out,
			char *err)
{
	return read_file(path, 1, out, err);
}

int view_find_location(const struct view_profile *p, uint64_t id,
		       uint32_t *first, uint32_t *n)
{
	size_t lo = sorted_lower_u64(p->loc_ids, p->n_locs,
				     sizeof(*p->loc_ids), 0, id);

	if (lo >= p->n_locs || p->loc_ids[lo] != id)
		return -ENOENT;
	*first = p->loc_first[p->loc_index[lo]];
	*n = p->loc_n[p->loc_index[lo]];
	return 0;
}

/* ---- sample types ------------------------------------------------------------ */

int view_pick_type(const struct view_profile *p, const char *name,
		   size_t *idx)
{
	if (!name || !name[0]) {
		*idx = p->default_type;
		return 0;
	}
	for (size_t i = 0; i < p->n_types; i++) {
		size_t tl = strlen(p->types[i].type);
		if (!strcmp(name, p->types[i].type) ||
		    (!strncmp(name, p->types[i].type, tl) && name[tl] == '/' &&
		     !strcmp(name + tl + 1, p->types[i].unit))) {
			*idx = i;
			return 0;
		}
	}
	return -ENOENT;
}

int view_need_type(const struct view_profile *p, const char *name,
		   size_t *idx, char *err)
{
	if (view_pick_type(p, name, idx) == 0)
		return 0;
	snprintf(err, ERR_LEN, "the profile has no sample type '%s'",
		 name);
	return -ENOENT;
}

int view_errno_text(int rc, char *err)
{
	if (rc == -ENOMEM)
		snprintf(err, ERR_LEN, "out of memory");
	else if (rc == -EIO)
		snprintf(err, ERR_LEN, "write error");
	return rc;
}

int view_count_type(const struct view_profile *p)
{
	/* only the number of samples: a heap profile's object counts
	 * (alloc_objects, inuse_objects) are values of their own */
	for (size_t i = 0; i < p->n_types; i++)
		if (!strcmp(p->types[i].type, "samples") &&
		    !strcmp(p->types[i].unit, "count"))
			return (int)i;
	return -1;
}
