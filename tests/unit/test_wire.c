/*
 * test_wire.c - the wire protocol's two halves against each other: the
 * encoders of include/pyprof/wire_frames.h (what the library, the
 * collector and pyprof ctl write with) and the collector's decoders
 * (collector/daemon/decode.h, hello.h), on the frames of
 * tests/data/wire/ (malformed streams after a valid prefix),
 * tests/data/wire/frames/ (one tagged frame of each kind, fields in the
 * C writers' order) and tests/fuzz/wire_seeds/ (valid streams), all
 * written by tests/lib/wire_client.py, an encoder independent of the C
 * one.
 *
 * 1. Round trip: every frame of every file whose payload decodes is
 *    encoded again from what was decoded and compared byte for byte,
 *    header included; every frame kind of wire.h is seen at least once.
 * 2. Fields: decoding gives the values the fixtures' README and
 *    wire_client.py put in (a STRING's text, a MAPPING's range, ...).
 * 3. The typed writers: HELLO's head, BYE from its struct, CTL_WRITTEN
 *    whole, each equal to the frames/ file of its kind.
 * 4. The decoder's verdicts: cut short, left over, too many pairs.
 */
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "daemon/decode.h"
#include "daemon/hello.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"

static char root[PATH_MAX];

#define N_KINDS 40

/* Per frame kind: round trips that matched, that differed. */
static unsigned n_same[N_KINDS], n_differ[N_KINDS];

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 21];
	if (!f)
		return NULL;
	*len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return buf;
}

/* ---- 1. round trip ------------------------------------------------------ */

/* The tagged fields from r on, written again as read. 0, or -1 if one is
 * malformed. */
static int copy_fields(struct wire_in *r, struct wire_out *w)
{
	struct wire_field f;
	while (!wire_at_end(r)) {
		if (wire_field_next(r, WIRE_MAX_PAYLOAD, &f) < 0)
			return -1;
		wire_put_field(w, &f);
	}
	return 0;
}

/* Decodes the payload of a type frame and encodes it again into w.
 * 0, or -1 if the payload does not decode (a malformed fixture). */
static int reencode(unsigned type, const uint8_t *p, size_t len,
		    struct wire_out *w)
{
	struct wire_in r = { p, p + len, 1 };
	uint64_t kv[2 * WIRE_MAX_LABELS], lead;

	switch (type) {
	case WIRE_HELLO: {
		/* the head through wire_hello_begin when it is the usual
		 * VERSION 1, PID, PPID; the rest as read */
		struct wire_field v, pid, ppid;
		if (len < WIRE_MAGIC_LEN || memcmp(p, WIRE_MAGIC, WIRE_MAGIC_LEN))
			return -1;
		r.p += WIRE_MAGIC_LEN;
		if (wire_field_next(&r, WIRE_MAX_STRING, &v) < 0 ||
		    wire_field_next(&r, WIRE_MAX_STRING, &pid) < 0 ||
		    wire_field_next(&r, WIRE_MAX_STRING, &ppid) < 0 ||
		    v.tag != WIRE_H_VERSION || v.v != WIRE_VERSION ||
		    v.is_bytes || pid.tag != WIRE_H_PID || pid.is_bytes ||
		    ppid.tag != WIRE_H_PPID || ppid.is_bytes)
			return -1;
		uint8_t *frame = w->p - WIRE_HDR_LEN;
		*w = wire_hello_begin(frame, (size_t)(w->end - frame), pid.v,
				      ppid.v);
		return copy_fields(&r, w);
	}
	case WIRE_BYE:
	case WIRE_CTL_REPLY:
	case WIRE_CTL_STATE:
	case WIRE_CTL_REQUEST:
	case WIRE_CTL_START:
	case WIRE_CTL_STOP:
	case WIRE_CTL_FLUSH:
	case WIRE_CTL_STATUS:
	case WIRE_CTL_ANSWER:
	case WIRE_CTL_DONE:
	case WIRE_CTL_WRITTEN:
		return copy_fields(&r, w);
	case WIRE_STRING: {
		struct wire_string f;
		if (decode_string(&r, &f))
			return -1;
		wire_put_string(w, &f);
		return 0;
	}
	case WIRE_FUNCTION: {
		struct wire_function f;
		if (decode_function(&r, &f))
			return -1;
		wire_put_function(w, &f);
		return 0;
	}
	case WIRE_LOCATION: {
		struct wire_location f;
		if (decode_location(&r, &f))
			return -1;
		wire_put_location(w, &f);
		return 0;
	}
	case WIRE_NODE: {
		struct wire_node f;
		if (decode_node(&r, &f))
			return -1;
		wire_put_node(w, &f);
		return 0;
	}
	case WIRE_THREAD: {
		struct wire_thread f;
		if (decode_thread(&r, &f))
			return -1;
		wire_put_thread(w, &f);
		return 0;
	}
	case WIRE_LOST: {
		struct wire_lost f;
		if (decode_lost(&r, &f))
			return -1;
		wire_put_lost(w, &f);
		return 0;
	}
	case WIRE_MAPPING: {
		struct wire_mapping f;
		if (decode_mapping(&r, &f))
			return -1;
		wire_put_mapping(w, &f);
		return 0;
	}
	case WIRE_ADDRESS: {
		struct wire_address f;
		if (decode_address(&r, &f))
			return -1;
		wire_put_address(w, &f);
		return 0;
	}
	case WIRE_LABELS: {
		struct wire_labels f;
		if (decode_labels(&r, &f, kv))
			return -1;
		wire_put_labels(w, &f);
		return 0;
	}
	case WIRE_HEAP_SNAPSHOT: {
		struct wire_heap_snapshot f;
		if (decode_heap_snapshot(&r, &f))
			return -1;
		wire_put_heap_snapshot(w, &f);
		return 0;
	}
	case WIRE_SAMPLES: {
		struct wire_sample s;
		if (decode_lead(&r, &lead))
			return -1;
		wire_put_samples_lead(w, lead);
		while (!wire_at_end(&r)) {
			if (decode_sample(&r, &s))
				return -1;
			wire_put_sample(w, &s);
		}
		return 0;
	}
	case WIRE_HEAP: {
		struct wire_heap_rec h;
		if (decode_lead(&r, &lead))
			return -1;
		wire_put_heap_lead(w, lead);
		while (!wire_at_end(&r)) {
			if (decode_heap_rec(&r, &h))
				return -1;
			if (h.kind < WIRE_HEAP_ALLOC ||
			    h.kind > WIRE_HEAP_ALLOC_LABELS)
				return -1; /* the rest is not records */
			wire_put_heap_rec(w, &h);
		}
		return 0;
	}
	}
	return -1;
}

/* Every whole frame of the len bytes at p (one connection). */
static void round_trip_stream(const char *name, const uint8_t *p, size_t len)
{
	static uint8_t out[WIRE_HDR_LEN + (1 << 20) + 64];
	size_t off = 0;

	while (len - off >= WIRE_HDR_LEN) {
		unsigned type;
		size_t plen;
		wire_get_hdr(p + off, &type, &plen);
		if (plen > WIRE_MAX_PAYLOAD || len - off - WIRE_HDR_LEN < plen)
			break;
		const uint8_t *payload = p + off + WIRE_HDR_LEN;
		struct wire_out w = { out + WIRE_HDR_LEN, out + sizeof(out), 1 };
		if (type < N_KINDS && reencode(type, payload, plen, &w) == 0) {
			size_t n = w.ok ? wire_end_frame(out, &w, type) : 0;
			int same = n == WIRE_HDR_LEN + plen &&
				   !memcmp(out, p + off, n);
			if (same) {
				n_same[type]++;
			} else {
				if (n_differ[type]++ < 3)
					fprintf(stderr, "  %s: frame at %zu (type %u) "
							"encodes to other bytes\n",
						name,
						off, type);
			}
		}
		off += WIRE_HDR_LEN + plen;
	}
}

static int walk_dir(const char *dir)
{
	static const char sep[] = "@@conn@@";
	char path[PATH_MAX + 300];
	struct dirent *e;
	int files = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len, nl = strlen(e->d_name);
		if (nl < 5 || strcmp(e->d_name + nl - 4, ".bin"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		const uint8_t *p = read_file(path, &len);
		if (!p)
			continue;
		for (;;) {
			const uint8_t *at = memmem(p, len, sep, strlen(sep));
			size_t n = at ? (size_t)(at - p) : len;
			round_trip_stream(e->d_name, p, n);
			if (!at)
				break;
			p = at + strlen(sep);
			len -= n + strlen(sep);
		}
		files++;
	}
	closedir(d);
	return files;
}

static void test_round_trip(void)
{
	static const unsigned kinds[] = {
		WIRE_HELLO, WIRE_STRING, WIRE_FUNCTION, WIRE_LOCATION,
		WIRE_NODE, WIRE_THREAD, WIRE_SAMPLES, WIRE_LOST, WIRE_BYE,
		WIRE_MAPPING, WIRE_ADDRESS, WIRE_HEAP, WIRE_HEAP_SNAPSHOT,
		WIRE_LABELS, WIRE_CTL_REPLY, WIRE_CTL_STATE, WIRE_CTL_REQUEST,
		WIRE_CTL_START, WIRE_CTL_STOP, WIRE_CTL_FLUSH, WIRE_CTL_STATUS,
		WIRE_CTL_ANSWER, WIRE_CTL_DONE, WIRE_CTL_WRITTEN
	};
	char dir[PATH_MAX + 64], what[96];
	unsigned total = 0, differ = 0;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/tests/data/wire", root);
	files += walk_dir(dir);
	snprintf(dir, sizeof(dir), "%s/tests/data/wire/frames", root);
	files += walk_dir(dir);
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/wire_seeds", root);
	files += walk_dir(dir);
	CHECK(files >= 60, "1.0 the fixtures, frames/ and the seeds read");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
		unsigned k = kinds[i];
		snprintf(what, sizeof(what), "1.1 frame type %u: round trips "
					     "seen (%u) and none differs (%u)",
			 k, n_same[k],
			 n_differ[k]);
		CHECK(n_same[k] > 0 && n_differ[k] == 0, what);
	}
	for (unsigned k = 0; k < N_KINDS; k++) {
		total += n_same[k];
		differ += n_differ[k];
	}
	printf("round trip: %d files, %u frames the same, %u differ\n", files,
	       total, differ);
	CHECK(total > 9000, "1.2 thousands of frames compared (too-deep's "
			    "8192 nodes among them)");
}

/* ---- 2. fields ---------------------------------------------------------- */

/* The payload of the index-th frame of type in file name of
 * tests/data/wire (or frames/...); NULL if none. */
static const uint8_t *nth_frame(const char *name, unsigned type, int index,
				size_t *plen)
{
	char path[PATH_MAX + 100];
	size_t len, off = 0;
	snprintf(path, sizeof(path), "%s/tests/data/wire/%s", root, name);
	const uint8_t *p = read_file(path, &len);
	if (!p)
		return NULL;
	while (len - off >= WIRE_HDR_LEN) {
		unsigned t;
		wire_get_hdr(p + off, &t, plen);
		if (len - off - WIRE_HDR_LEN < *plen)
			return NULL;
		if (t == type && index-- == 0)
			return p + off + WIRE_HDR_LEN;
		off += WIRE_HDR_LEN + *plen;
	}
	return NULL;
}

static struct wire_in in_of(const uint8_t *p, size_t n)
{
	return (struct wire_in){ p, p + n, 1 };
}

static void test_fields(void)
{
	const uint8_t *p;
	size_t n;
	struct wire_in r;

	/* every fixture starts with the same HELLO: pid 4242, comm
	 * badclient */
	p = nth_frame("leftover.bin", WIRE_HELLO, 0, &n);
	CHECK_OR_RETURN(p != NULL, "2.0 leftover.bin has a HELLO", );
	struct hello hl;
	char err[ERR_LEN];
	CHECK(hello_decode(p, n, &hl, err) == 0 && hl.h.pid == 4242 &&
		      hl.h.comm.len == 9 && !memcmp(hl.h.comm.p, "badclient", 9),
	      "2.1 HELLO: pid 4242, comm badclient");
	hello_free(&hl);

	/* the Program's first string, function, node and thread */
	struct wire_string s;
	p = nth_frame("leftover.bin", WIRE_STRING, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_string(&r, &s) == 0 && s.id == 1 && s.len > 0,
	      "2.2 STRING 1 decodes");
	struct wire_node nd;
	p = nth_frame("leftover.bin", WIRE_NODE, 2, &n);
	r = in_of(p, n);
	CHECK(p && decode_node(&r, &nd) == 0 && nd.id == 3 && nd.parent == 2,
	      "2.3 NODE 3 (work>leaf_a) has parent 2");
	struct wire_thread th;
	p = nth_frame("leftover.bin", WIRE_THREAD, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_thread(&r, &th) == 0 && th.ref == 1 &&
		      th.tid == 4242,
	      "2.4 THREAD ref 1 is tid 4242 (the pid)");

	/* README: MAPPING 1 from 0x2000 to 0x1000 */
	struct wire_mapping m;
	p = nth_frame("mapping-bad-range.bin", WIRE_MAPPING, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_mapping(&r, &m) == 0 && m.id == 1 &&
		      m.start == 0x2000 && m.limit == 0x1000,
	      "2.5 MAPPING 1: start 0x2000, limit 0x1000");
	/* ADDRESS 6 at 0x3000 in mapping 1 */
	struct wire_address a;
	p = nth_frame("address-outside.bin", WIRE_ADDRESS, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_address(&r, &a) == 0 && a.id == 6 &&
		      a.mapping == 1 && a.address == 0x3000,
	      "2.6 ADDRESS 6: mapping 1, 0x3000");
	/* LOST with reason 9 */
	struct wire_lost l;
	p = nth_frame("bad-lost-reason.bin", WIRE_LOST, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_lost(&r, &l) == 0 && l.reason == 9,
	      "2.7 LOST: reason 9");
	/* HEAP_SNAPSHOT seq 0 */
	struct wire_heap_snapshot hs;
	p = nth_frame("heap-snapshot-zero.bin", WIRE_HEAP_SNAPSHOT, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_heap_snapshot(&r, &hs) == 0 && hs.seq == 0,
	      "2.8 HEAP_SNAPSHOT: seq 0");
	/* HEAP: an ALLOC_LABELS of set 1, 64 bytes at 0x1000 */
	struct wire_heap_rec h;
	uint64_t rate;
	p = nth_frame("heap-undefined-labels.bin", WIRE_HEAP, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_lead(&r, &rate) == 0 && rate == 4096 &&
		      decode_heap_rec(&r, &h) == 0 &&
		      h.kind == WIRE_HEAP_ALLOC_LABELS && h.size == 64 &&
		      h.addr == 0x1000 && h.labels == 1 && wire_at_end(&r),
	      "2.9 HEAP: rate 4096, ALLOC_LABELS 64 bytes at 0x1000, set 1");
	/* LABELS: 65 pairs is one too many */
	uint64_t kv[2 * WIRE_MAX_LABELS];
	struct wire_labels lb;
	p = nth_frame("labels-too-many.bin", WIRE_LABELS, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_labels(&r, &lb, kv) == DECODE_TOO_MANY,
	      "2.10 LABELS with 65 pairs: too many");
	p = nth_frame("labels-id-gap.bin", WIRE_LABELS, 0, &n);
	r = in_of(p, n);
	CHECK(p && decode_labels(&r, &lb, kv) == 0 && lb.id == 2 &&
		      lb.n_pairs == 1,
	      "2.11 LABELS 2: one pair");
	/* SAMPLES: labels-undefined-set names set 1 then set 2 */
	struct wire_sample sm;
	p = nth_frame("labels-undefined-set.bin", WIRE_SAMPLES, 0, &n);
	r = in_of(p, n);
	int ok = p && decode_lead(&r, &rate) == 0;
	uint64_t sets[2] = { 0, 0 };
	for (int i = 0; ok && i < 2; i++) {
		ok = decode_sample(&r, &sm) == 0 &&
		     (sm.flags & WIRE_SF_LABELS);
		sets[i] = sm.labels;
	}
	CHECK(ok && sets[0] == 1 && sets[1] == 2 && wire_at_end(&r),
	      "2.12 SAMPLES: records on label sets 1 and 2");
	/* the control request of frames/: VERB start, PID 4242 */
	p = nth_frame("frames/ctl-request.bin", WIRE_CTL_REQUEST, 0, &n);
	r = in_of(p, n);
	struct wire_field f;
	ok = p && wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) == 0 &&
	     f.tag == WIRE_C_VERB && f.v == WIRE_VERB_START &&
	     wire_field_next(&r, WIRE_MAX_CTL_PAYLOAD, &f) == 0 &&
	     f.tag == WIRE_C_PID && f.v == 4242;
	CHECK(ok, "2.13 CTL_REQUEST: VERB start, PID 4242");
}

/* ---- 3. the typed writers ------------------------------------------------ */

static void test_typed(void)
{
	uint8_t out[512];
	const uint8_t *p;
	size_t n, len;
	struct wire_out w;

	/* BYE: decoded into the collector's struct, written from the
	 * library's */
	p = nth_frame("frames/bye.bin", WIRE_BYE, 0, &n);
	struct proc_bye b;
	CHECK_OR_RETURN(p && bye_decode(p, n, &b) == 0,
			"3.0 frames/bye.bin decodes", );
	struct wire_bye wb = {
		b.samples,
		b.lost,
		b.end_mono_ns,
		b.handler_n,
		b.handler_ns,
		b.faults,
		b.achieved_ns,
		b.native_unmerged,
		b.cpu_source,
		b.has_native,
	};
	w = wire_tagged_begin(out, sizeof(out));
	wire_put_bye(&w, &wb);
	len = wire_tagged_end(out, &w, WIRE_BYE);
	CHECK(len == n + WIRE_HDR_LEN && !memcmp(out + WIRE_HDR_LEN, p, n) &&
		      !memcmp(out, p - WIRE_HDR_LEN, WIRE_HDR_LEN),
	      "3.1 wire_put_bye writes frames/bye.bin");

	/* CTL_WRITTEN whole */
	p = nth_frame("frames/ctl-written.bin", WIRE_CTL_WRITTEN, 0, &n);
	len = wire_ctl_written(out, sizeof(out), 1500);
	CHECK(p && len == n + WIRE_HDR_LEN &&
		      !memcmp(out, p - WIRE_HDR_LEN, len),
	      "3.2 wire_ctl_written writes frames/ctl-written.bin");
	CHECK(wire_ctl_written(out, WIRE_HDR_LEN + 2, 1500) == 0,
	      "3.3 CTL_WRITTEN that does not fit: 0");

	/* a refused HELLO, as refuse.c writes it */
	p = nth_frame("frames/hello-refused.bin", WIRE_HELLO, 0, &n);
	w = wire_hello_begin(out, sizeof(out), 4243, 4242);
	wire_put_tag_str(&w, WIRE_H_PYVERSION, "3.16.0");
	wire_put_tag_str(&w, WIRE_H_EXE, "/usr/bin/python3.16");
	wire_put_tag_str(&w, WIRE_H_COMM, "python3.16");
	wire_put_tag_varint(&w, WIRE_H_UID, 1000);
	wire_put_tag_str(&w, WIRE_H_REFUSED, "Python 3.16 is not supported");
	len = wire_tagged_end(out, &w, WIRE_HELLO);
	CHECK(p && len == n + WIRE_HDR_LEN &&
		      !memcmp(out, p - WIRE_HDR_LEN, len),
	      "3.4 a refused HELLO written field by field");

	/* wire.h's worked example of CTL_START */
	static const uint8_t start[] = { 0x20, 0x0c, 0x00, 0x00, 0x02, 0x05,
					 0x04, 0x00, 0x06, 0xc0, 0x96, 0xb1,
					 0x02, 0x0c, 0xb8, 0x17 };
	w = wire_tagged_begin(out, sizeof(out));
	wire_put_tag_varint(&w, WIRE_C_REQ, 5);
	wire_put_tag_varint(&w, WIRE_C_MODE, WIRE_MODE_CPU);
	wire_put_tag_varint(&w, WIRE_C_PERIOD_NS, 5000000);
	wire_put_tag_varint(&w, WIRE_C_LEASE_MS, 3000);
	len = wire_tagged_end(out, &w, WIRE_CTL_START);
	CHECK(len == sizeof(start) && !memcmp(out, start, len),
	      "3.5 CTL_START: wire.h's worked example");

	/* a CTL_ANSWER relays a reply's fields as they came */
	const uint8_t *reply = nth_frame("frames/ctl-reply.bin",
					 WIRE_CTL_REPLY, 0, &n);
	size_t reply_n = n;
	uint8_t reply_copy[512]; /* nth_frame's buffer is reused */
	CHECK_OR_RETURN(reply && reply_n <= sizeof(reply_copy),
			"3.6 frames/ctl-reply.bin read", );
	memcpy(reply_copy, reply, reply_n);
	p = nth_frame("frames/ctl-answer.bin", WIRE_CTL_ANSWER, 0, &n);
	w = wire_tagged_begin(out, sizeof(out));
	wire_put_tag_varint(&w, WIRE_C_PID, 4242);
	wire_put_tag_str(&w, WIRE_C_COMM, "python3");
	wire_put_tag_str(&w, WIRE_C_MSG, "lease shortened to 60 s");
	wire_put_fields(&w, reply_copy, reply_n);
	len = wire_tagged_end(out, &w, WIRE_CTL_ANSWER);
	CHECK(p && len == n + WIRE_HDR_LEN &&
		      !memcmp(out, p - WIRE_HDR_LEN, len),
	      "3.7 CTL_ANSWER: PID, COMM, MSG, then the reply's fields");
	w = wire_tagged_begin(out, 40);
	wire_put_fields(&w, reply_copy, reply_n);
	CHECK(!w.ok && wire_tagged_end(out, &w, WIRE_CTL_ANSWER) == 0,
	      "3.8 fields that do not fit: not ok, no frame");
}

/* ---- 4. verdicts --------------------------------------------------------- */

static void test_verdicts(void)
{
	uint8_t buf[64];
	struct wire_out w = { buf, buf + sizeof(buf), 1 };
	struct wire_node nd;
	struct wire_in r;

	wire_put_node(&w, &(struct wire_node){ 7, 3, 12 });
	CHECK(w.p - buf == 3 && buf[0] == 7 && buf[1] == 3 && buf[2] == 12,
	      "4.1 NODE 7 (parent 3, location 12) is 07 03 0c");
	for (size_t cut = 0; cut < 3; cut++) {
		r = in_of(buf, cut);
		CHECK(decode_node(&r, &nd) == DECODE_SHORT,
		      "4.2 a NODE cut short");
	}
	buf[3] = 0;
	r = in_of(buf, 4);
	CHECK(decode_node(&r, &nd) == DECODE_LEFTOVER && r.end - r.p == 1,
	      "4.3 a NODE with one byte left over");
	/* an 11-byte varint */
	memset(buf, 0x80, 10);
	buf[10] = 0x01;
	r = in_of(buf, 11);
	uint64_t lead;
	CHECK(decode_lead(&r, &lead) == DECODE_SHORT,
	      "4.4 a varint of 11 bytes is malformed");
	/* a STRING over WIRE_MAX_STRING */
	static uint8_t big[WIRE_MAX_STRING + 16];
	w = (struct wire_out){ big, big + sizeof(big), 1 };
	static uint8_t text[WIRE_MAX_STRING + 1];
	wire_put_string(&w, &(struct wire_string){ 1, text, sizeof(text) });
	struct wire_string s;
	r = in_of(big, (size_t)(w.p - big));
	CHECK(w.ok && decode_string(&r, &s) == DECODE_SHORT,
	      "4.5 a STRING of WIRE_MAX_STRING + 1 bytes is refused");
	/* a sample's opcode and labels follow only with their flags */
	struct wire_sample in = { 5, 1, 0, 1, 10000000,
				  WIRE_SF_OPCODE | WIRE_SF_LABELS, 83, 2 };
	struct wire_sample back;
	w = (struct wire_out){ buf, buf + sizeof(buf), 1 };
	wire_put_sample(&w, &in);
	r = in_of(buf, (size_t)(w.p - buf));
	CHECK(decode_sample(&r, &back) == 0 && wire_at_end(&r) &&
		      !memcmp(&in, &back, sizeof(in)),
	      "4.6 a sample with opcode and labels comes back whole");
	in.flags = 0;
	w = (struct wire_out){ buf, buf + sizeof(buf), 1 };
	wire_put_sample(&w, &in);
	CHECK(w.p - buf == 9, "4.7 without the flags, no opcode or labels "
			      "(9 bytes: 10000000 takes 4)");
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)argc;
	(void)argv;
	CHECK_OR_RETURN(n > 0, "0.1 /proc/self/exe", check_summary());
	exe[n] = 0;
	/* build/tests/test_wire -> the source tree */
	snprintf(root, sizeof(root), "%s/../..", dirname(exe));
	test_round_trip();
	test_fields();
	test_typed();
	test_verdicts();
	return check_summary();
}
