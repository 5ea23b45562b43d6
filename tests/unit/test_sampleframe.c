/*
 * test_sampleframe.c - the agent's SAMPLES frames (preload/agent/
 * sampleframe.c): records as the ring hands them over, the frames as the
 * collector's own decoder (collector/daemon/decode.c) reads them back from
 * the transport's buffer (no collector listens: the frames wait there).
 *
 * 1.x  two samples of two threads without a Python stack: one SAMPLES
 *      frame, each record its own thread, its pseudo-frame's node (the
 *      agent's tables say what the NODE frames will, once connected), its
 *      weight, value and time delta; a system-time sample says so
 *      (TIME_KNOWN | TIME_SYSTEM); the counts add the weights.
 * 2.x  a faulted read, a stack that failed validation and a record with
 *      no thread are not sent but counted lost, each by its reason, in
 *      LOST frames with their weights and values.
 * 3.x  a wait on the GIL: a block record whose node is a [GIL] frame
 *      under the thread's stack (a node whose parent is the plain
 *      sample's), flagged WAIT_BLOCK, GIL and GIL_KNOWN.
 * 4.x  a forked child starts from zero: nothing pending, no counts.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "agent/heapframe.h"
#include "agent/sampleframe.h"
#include "agent/symbolize.h"
#include "agent/transport.h"
#include "base/intern.h"
#include "base/sampler.h"
#include "daemon/decode.h"
#include "pyprof/wire.h"
#include "signal/sig_waits.h"

#define MAX_RECS 16

/* What the transport's buffer holds, decoded. */
struct seen {
	struct wire_sample rec[MAX_RECS];
	uint64_t rec_time[MAX_RECS]; /* base + the deltas so far */
	int n_rec, n_samples_frames;
	struct wire_lost lost[8];
	int n_lost;
};

static void decode_frames(const struct transport *t, struct seen *s)
{
	const uint8_t *p = t->buf + t->off, *end = t->buf + t->len;
	memset(s, 0, sizeof *s);
	while (end - p >= WIRE_HDR_LEN) {
		unsigned type;
		size_t len;
		wire_get_hdr(p, &type, &len);
		if ((size_t)(end - p) < WIRE_HDR_LEN + len)
			break;
		struct wire_in r = { p + WIRE_HDR_LEN, p + WIRE_HDR_LEN + len,
				     1 };
		if (type == WIRE_SAMPLES) {
			uint64_t t0 = 0;
			s->n_samples_frames++;
			if (decode_lead(&r, &t0) == 0)
				while (!wire_at_end(&r) && s->n_rec < MAX_RECS &&
				       decode_sample(&r, &s->rec[s->n_rec]) ==
					       0) {
					t0 += s->rec[s->n_rec].dt_ns;
					s->rec_time[s->n_rec++] = t0;
				}
		} else if (type == WIRE_LOST && s->n_lost < 8) {
			decode_lost(&r, &s->lost[s->n_lost++]);
		}
		p += WIRE_HDR_LEN + len;
	}
}

/* A record of tid without a Python stack (flags), standing for weight
 * periods of 1 ms, taken at time_ns. */
static void record(int tid, uint16_t flags, uint32_t weight, uint64_t time_ns,
		   uint8_t cpu_kind)
{
	struct raw_sample r;
	memset(&r, 0, sizeof r);
	r.tid = (uint32_t)tid;
	r.flags = flags;
	r.weight = weight;
	r.value_ns = weight * 1000000ull;
	r.time_ns = time_ns;
	r.cpu_kind = cpu_kind;
	sampleframe_on_record(&r, sizeof r, NULL);
}

static const struct wire_lost *lost_of(const struct seen *s, uint64_t reason)
{
	for (int i = 0; i < s->n_lost; i++)
		if (s->lost[i].reason == reason)
			return &s->lost[i];
	return NULL;
}

/* The parent of node id in the agent's tables (the NODE frame it sends
 * once connected), UINT64_MAX if there is no such node. */
static uint64_t parent_of(const struct intern *in, uint64_t id)
{
	if (!id || id > in->n_nodes)
		return UINT64_MAX;
	return in->nodes[id - 1].parent;
}

/* The OS thread of thread ref, -1 if none. */
static int tid_of(const struct intern *in, uint64_t ref)
{
	if (!ref || ref > in->n_threads)
		return -1;
	return in->threads[ref - 1].tid;
}

int main(void)
{
	struct transport t;
	struct intern in;
	struct heapframe heap;
	struct seen seen;
	struct sampleframe_stats st;
	char path[64];

	memset(&in, 0, sizeof in);
	memset(&heap, 0, sizeof heap);
	sampler.period_ns = 1000000;
	snprintf(path, sizeof path, "/tmp/pyprof-sf-%d/none.sock", (int)getpid());
	transport_init(&t, path, -1);
	struct symbolizer *sym = symbolize_new(&in);
	CHECK(sym && heapframe_init(&heap, &t, &in) == 0 &&
		      sampleframe_init(&in, sym, &t, NULL, &heap) == 0,
	      "0.1 set up");

	/* 1.x */
	record(101, SAMPLE_NO_TSTATE, 1, 5000000, SAMPLE_CPU_UNKNOWN);
	record(102, 0, 3, 5400000, SAMPLE_CPU_SYSTEM);
	sampleframe_flush();
	decode_frames(&t, &seen);
	CHECK(seen.n_samples_frames == 1 && seen.n_rec == 2,
	      "1.1 one SAMPLES frame of two records");
	CHECK(tid_of(&in, seen.rec[0].thread) == 101 &&
		      tid_of(&in, seen.rec[1].thread) == 102,
	      "1.1 each record its own thread");
	CHECK(seen.rec[0].node && seen.rec[1].node &&
		      seen.rec[0].node != seen.rec[1].node &&
		      parent_of(&in, seen.rec[0].node) == 0 &&
		      parent_of(&in, seen.rec[1].node) == 0,
	      "1.2 each its own pseudo-frame, a root node");
	CHECK(seen.rec[0].count == 1 && seen.rec[0].value == 1000000 &&
		      seen.rec[1].count == 3 && seen.rec[1].value == 3000000,
	      "1.3 weights and values as recorded");
	CHECK(seen.rec_time[0] == 5000000 && seen.rec_time[1] == 5400000,
	      "1.3 times as recorded (the lead and the deltas)");
	CHECK(!(seen.rec[0].flags & WIRE_SF_TIME_KNOWN) &&
		      (seen.rec[1].flags &
		       (WIRE_SF_TIME_KNOWN | WIRE_SF_TIME_SYSTEM)) ==
			      (WIRE_SF_TIME_KNOWN | WIRE_SF_TIME_SYSTEM),
	      "1.4 the system-time sample says so, the unknown one nothing");
	sampleframe_stats(&st);
	CHECK(st.n_samples == 4 && st.lost_total == 0 && sampleframe_pending(),
	      "1.5 the counts add the weights");
	uint64_t plain_node = seen.rec[1].node;

	/* 2.x */
	t.len = t.off = 0;
	record(103, SAMPLE_FAULT, 2, 6000000, SAMPLE_CPU_UNKNOWN);
	record(104, SAMPLE_INVALID, 5, 6100000, SAMPLE_CPU_UNKNOWN);
	record(0, 0, 7, 6200000, SAMPLE_CPU_UNKNOWN);
	sampleframe_flush();
	sampleframe_put_lost();
	decode_frames(&t, &seen);
	CHECK(seen.n_rec == 0, "2.1 none of them is sent as a sample");
	const struct wire_lost *f = lost_of(&seen, WIRE_LOST_FAULT);
	const struct wire_lost *v = lost_of(&seen, WIRE_LOST_INVALID);
	CHECK(f && f->samples == 2 && f->value == 2000000,
	      "2.2 the faulted read counted lost, with its weight and value");
	CHECK(v && v->samples == 12 && v->value == 12000000,
	      "2.3 the invalid stack and the thread-less record counted "
	      "lost as invalid");
	sampleframe_stats(&st);
	CHECK(st.lost_total == 14 && st.n_samples == 4,
	      "2.4 the lost total; nothing more counted as sent");

	/* 3.x: the same thread's stack as 1.x's second sample */
	t.len = t.off = 0;
	struct raw_sample w;
	memset(&w, 0, sizeof w);
	w.tid = 102;
	w.flags = SAMPLE_WAIT;
	w.wait = WAITS_BLOCK | WAITS_GIL;
	w.weight = 1;
	w.value_ns = 250000;
	w.time_ns = 7000000;
	sampleframe_on_record(&w, sizeof w, NULL);
	sampleframe_flush();
	decode_frames(&t, &seen);
	CHECK(seen.n_rec == 1 && seen.rec[0].value == 250000,
	      "3.1 the wait sent with its time");
	CHECK((seen.rec[0].flags & (WIRE_SF_WAIT_BLOCK | WIRE_SF_GIL |
				    WIRE_SF_GIL_KNOWN)) ==
			      (WIRE_SF_WAIT_BLOCK | WIRE_SF_GIL |
			       WIRE_SF_GIL_KNOWN) &&
		      !(seen.rec[0].flags & WIRE_SF_TIME_KNOWN),
	      "3.2 flagged a block on the GIL, no CPU kind");
	CHECK(seen.rec[0].node != plain_node &&
		      parent_of(&in, seen.rec[0].node) == plain_node,
	      "3.3 its node a [GIL] frame under the thread's stack");

	/* 4.x */
	sampleframe_after_fork_child();
	sampleframe_stats(&st);
	CHECK(!sampleframe_pending() && st.n_samples == 0 &&
		      st.lost_total == 0,
	      "4.1 a forked child starts from zero");

	sampleframe_free();
	heapframe_free(&heap);
	symbolize_free(sym);
	transport_fini(&t);
	intern_free(&in);
	return check_summary();
}
