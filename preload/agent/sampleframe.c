/*
 * sampleframe.c - see sampleframe.h. Agent thread, under the agent's
 * lock (agent.c's ag_lock).
 */
#include "sampleframe.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/intern.h"
#include "base/sampler.h"
#include "heapframe.h"
#include "native/merge.h"
#include "native/modules.h"
#include "native/native.h"
#include "pyprof/wire.h"
#include "pyprof/wire_frames.h"
#include "sample/labels.h"
#include "sample/threadnames.h"
#include "sample/threads.h"
#include "signal/sig_waits.h"
#include "symbolize.h"
#include "transport.h"

#define BATCH_CAP (256u << 10) /* bytes of one SAMPLES frame payload */

static struct {
	/* what the agent owns and lends (sampleframe_init) */
	struct intern *in;
	struct symbolizer *sym;
	struct transport *tr;
	struct modules *mods; /* PYPROF_NATIVE's loaded objects, or NULL */
	struct heapframe *heap;

	/* the SAMPLES frame being built */
	uint8_t *batch;
	struct wire_out w;
	uint64_t batch_prev_ns;
	int batch_n;
	uint64_t batch_count, batch_value; /* its records' weights and
					      values: what is lost if it
					      cannot be queued */

	struct imap name_cache;	  /* tid -> name sid (UINT32_MAX: none)    */
	unsigned threadnames_gen; /* names table generation cached        */
	uint32_t loc_no_frame, loc_non_python, loc_no_py, loc_gil;
	uint64_t lost[WIRE_LOST_REASON_MAX + 1][2]; /* samples, value   */
	unsigned long n_samples;		    /* queued in SAMPLES frames (weights)   */
	uint64_t lost_total;			    /* lost, all reasons, since start        */
	unsigned long lost_ring_seen;
	uint64_t lost_closed_seen; /* threads_lost_closed_ns, counted    */

	/* PYPROF_NATIVE (merge.h): scratch for one merge, the marker
	 * frames' locations, samples not merged */
	uint8_t *py_entry, *nat_class;
	struct merge_item *items;
	uint32_t loc_mark[4]; /* by enum merge_status */
	unsigned long n_native, n_unmerged;
} sf;

static void count_lost(int reason, uint64_t samples, uint64_t value)
{
	sf.lost[reason][0] += samples;
	sf.lost[reason][1] += value;
	sf.lost_total += samples;
}

/* Ends the SAMPLES frame under construction and queues it. */
void sampleframe_flush(void)
{
	if (!sf.batch_n)
		return;
	if (transport_put_frame(sf.tr, sf.in, sf.batch, &sf.w,
				WIRE_SAMPLES) < 0) {
		/* no room: the samples in this batch are lost */
		count_lost(WIRE_LOST_BUFFER, sf.batch_count, sf.batch_value);
		sf.n_samples -= sf.batch_count; /* never queued after all */
	}
	sf.batch_n = 0;
}

static void add_to_batch(uint32_t node, uint32_t thread,
			 const struct raw_sample *s, uint32_t flags,
			 uint32_t labels)
{
	if (sf.batch_n && (size_t)(sf.w.end - sf.w.p) < 64)
		sampleframe_flush();
	if (!sf.batch_n) {
		sf.w = wire_tagged_begin(sf.batch, WIRE_HDR_LEN + BATCH_CAP);
		wire_put_samples_lead(&sf.w, s->time_ns);
		sf.batch_prev_ns = s->time_ns;
		sf.batch_count = sf.batch_value = 0;
	}
	/* Samples of different threads can arrive a little out of order;
	 * the wire wants unsigned deltas, so clamp (error: microseconds). */
	uint64_t dt = s->time_ns > sf.batch_prev_ns
			      ? s->time_ns - sf.batch_prev_ns
			      : 0;
	if (s->time_ns > sf.batch_prev_ns)
		sf.batch_prev_ns = s->time_ns;
	struct wire_sample rec = {
		.node = node,
		.thread = thread,
		.dt_ns = dt,
		.count = s->weight,
		.value = s->value_ns,
		.flags = flags,
		.opcode = s->opcode ? (uint64_t)s->opcode - 1 : 0,
		.labels = labels,
	};
	if (s->opcode)
		rec.flags |= WIRE_SF_OPCODE;
	if (labels)
		rec.flags |= WIRE_SF_LABELS;
	wire_put_sample(&sf.w, &rec);
	sf.batch_n++;
	sf.batch_count += s->weight;
	sf.batch_value += s->value_ns;
	sf.n_samples += s->weight;
}

/* The interned name of a thread (0 if unknown), cached per refresh of
 * the names table. */
static uint32_t thread_name(int tid)
{
	unsigned g = threadnames_generation();
	if (g != sf.threadnames_gen) {
		imap_free(&sf.name_cache);
		sf.threadnames_gen = g;
	}
	uint32_t v = imap_get(&sf.name_cache, (uint64_t)(unsigned)tid, 0);
	if (v)
		return v == UINT32_MAX ? 0 : v;
	char buf[NAMES_LEN];
	uint32_t sid = 0;
	if (threadnames_get(tid, buf, sizeof buf))
		sid = intern_str(sf.in, buf, strlen(buf));
	else
		threadnames_request(); /* a new thread: ask now, not in 500 ms */
	imap_put(&sf.name_cache, (uint64_t)(unsigned)tid, 0,
		 sid ? sid : UINT32_MAX);
	return sid;
}

/* The thread of a sample of tid, interned with its name (0 when out of
 * memory). A name once known is kept when the names table has lost it:
 * a thread that has left threading._active on its way out still waits
 * for the GIL and locks, and its last samples stay named. */
static uint32_t sample_thread(int tid)
{
	uint32_t name = thread_name(tid), known = 0;
	if (!name && intern_thread_find(sf.in, tid, &known))
		name = known;
	int changed;
	uint32_t thread = intern_thread(sf.in, tid, name, &changed);
	if (thread && changed) /* new, or a rename: resend if the old name
				  went out already */
		transport_put_thread(sf.tr, sf.in, thread);
	return thread;
}

/* A sample for the batch, its thread named now. */
static void send_sample(uint32_t node, const struct raw_sample *s,
			uint32_t flags, uint32_t labels)
{
	uint32_t thread = sample_thread((int)s->tid);
	if (!thread) {
		count_lost(WIRE_LOST_BUFFER, s->weight, s->value_ns);
		return;
	}
	add_to_batch(node, thread, s, flags, labels);
}

/*
 * Held samples. The first samples of a thread the agent has not named yet
 * wait here until the names thread has looked at the program's threads
 * (threadnames_answered), so that the thread goes out with its name: sent
 * at once, without it, a window cut before the thread's next sample (the
 * rename) kept them nameless (a thread waiting right at its start, a
 * window ending 40 ms later: tests/e2e/waits.bats 2.9). A thread is held
 * once, until it is interned; at most HOLD_MS (the GIL held that long by
 * the program) and HOLD_MAX samples, then it goes without a name, as
 * before; a flush (the collector's STOP or FLUSH, the exit) sends all.
 * Heap samples are never held (a free must follow its allocation).
 */
#define HOLD_MAX 4096
#define HOLD_MS 500

struct held {
	struct raw_sample s; /* its fixed part: tid, time, weight, value */
	uint32_t node, flags, labels;
	unsigned ticket;
	uint64_t since_ns;
};

static struct held *held; /* grown on demand, up to HOLD_MAX */
static size_t n_held, cap_held;

/* Whether s waits for its thread's name (held then). */
static int hold_sample(uint32_t node, const struct raw_sample *s,
		       uint32_t flags, uint32_t labels)
{
	uint32_t name;
	if (intern_thread_find(sf.in, (int)s->tid, &name) ||
	    thread_name((int)s->tid))
		return 0;
	if (n_held == cap_held) {
		size_t cap = cap_held ? 2 * cap_held : 64;
		struct held *v = cap <= HOLD_MAX
					 ? realloc(held, cap * sizeof *held)
					 : NULL;
		if (!v)
			return 0;
		held = v;
		cap_held = cap;
	}
	unsigned ticket = threadnames_request();
	if (threadnames_answered(ticket))
		return 0; /* no names thread to answer */
	struct held *h = &held[n_held++];
	memcpy(&h->s, s, sizeof h->s);
	h->node = node;
	h->flags = flags;
	h->labels = labels;
	h->ticket = ticket;
	h->since_ns = mono_ns();
	return 1;
}

/* Sends the held samples whose threads the names thread has looked at
 * (all of them with force), oldest first. */
void sampleframe_release_held(int force)
{
	uint64_t now = mono_ns();
	size_t i = 0;
	for (; i < n_held; i++) {
		const struct held *h = &held[i];
		if (!force && !threadnames_answered(h->ticket) &&
		    now - h->since_ns < HOLD_MS * 1000000ull)
			break;
		send_sample(h->node, &h->s, h->flags, h->labels);
	}
	if (i) {
		memmove(held, held + i, (n_held - i) * sizeof *held);
		n_held -= i;
	}
}

static void put_sample(uint32_t node, const struct raw_sample *s,
		       uint32_t flags, uint32_t labels)
{
	if (!hold_sample(node, s, flags, labels))
		send_sample(node, s, flags, labels);
}

/* The pseudo-location name (a frame that says why there is no stack),
 * made once into *loc. */
static uint32_t pseudo_loc(uint32_t *loc, const char *name)
{
	if (!*loc)
		*loc = symbolize_pseudo(sf.sym, name);
	return *loc;
}

/* The merged native and Python stack of s as a node (0 when out of memory
 * or when both stacks are empty). */
static uint32_t merged_node(const struct raw_sample *s,
			    const struct raw_frame *fr)
{
	static const char *const marks[4] = {
		[MERGE_MISMATCH] = "[merge failed]",
		[MERGE_TRUNCATED] = "[native stack truncated]",
		[MERGE_NO_NATIVE] = "[native unwind failed]",
	};
	const uint64_t *pcs = raw_native(s);
	int n_py = (s->flags & SAMPLE_NO_TSTATE) ? 0 : s->n_frames;
	int n_nat = s->n_native, n = 0;
	uint32_t node = 0;

	if (n_py > sampler.max_depth || n_nat > SAMPLER_NATIVE_MAX)
		return 0; /* cannot be: the handler bounds both */
	for (int i = 0; i < n_py; i++)
		sf.py_entry[i] = (fr[i].code & RAW_ENTRY) != 0;
	for (int i = 0; i < n_nat; i++)
		sf.nat_class[i] = (uint8_t)native_classify(pcs[i], i == 0);
	struct merge_in in = {
		.py_entry = sf.py_entry,
		.n_py = n_py,
		.py_complete = !(s->flags & SAMPLE_TRUNCATED),
		.nat_class = sf.nat_class,
		.n_nat = n_nat,
		.nat_truncated = (s->flags & SAMPLE_NATIVE_TRUNCATED) != 0,
		.nat_failed = (s->flags & SAMPLE_NATIVE_FAILED) != 0,
		.keep_all = sampler.native == CONFIG_NATIVE_ALL,
	};
	int status = merge_stacks(&in, sf.items, &n);
	sf.n_native += s->weight;
	if (status != MERGE_EXACT)
		sf.n_unmerged += s->weight;
	for (int k = 0; k < n; k++) {
		const struct merge_item *it = &sf.items[k];
		uint32_t loc;
		if (it->kind == MERGE_PY) {
			loc = symbolize_frame(sf.sym, &fr[it->index]);
		} else if (it->kind == MERGE_NATIVE) {
			loc = modules_location(sf.mods, sf.in,
					       pcs[it->index], it->index == 0);
		} else {
			loc = pseudo_loc(&sf.loc_mark[status], marks[status]);
		}
		node = loc ? intern_node(sf.in, node, loc) : 0;
		if (!node)
			return 0;
	}
	return node;
}

/* The stack of s as a node (0: out of memory): merged with its native
 * stack, a pseudo-frame saying why there is no Python stack, or its
 * Python frames. */
static uint32_t stack_node(const struct raw_sample *s,
			   const struct raw_frame *fr)
{
	if (sampler.native && sf.mods &&
	    (s->n_native || (s->n_frames && !(s->flags & SAMPLE_NO_TSTATE) &&
			     (s->flags & SAMPLE_NATIVE_FAILED))))
		return merged_node(s, fr);
	if (s->flags & SAMPLE_HEAP_NO_PY)
		return intern_node(sf.in, 0,
				   pseudo_loc(&sf.loc_no_py,
					      "[Python not running]"));
	if (s->flags & SAMPLE_NO_TSTATE)
		return intern_node(sf.in, 0,
				   pseudo_loc(&sf.loc_non_python,
					      "[non-Python thread]"));
	if (s->n_frames == 0)
		return intern_node(sf.in, 0,
				   pseudo_loc(&sf.loc_no_frame,
					      "[no Python frame]"));
	/* frames are leaf first; the trie grows from the root */
	uint32_t node = 0;
	for (int i = s->n_frames - 1; i >= 0; i--) {
		uint32_t loc = symbolize_frame(sf.sym, &fr[i]);
		node = loc ? intern_node(sf.in, node, loc) : 0;
		if (!node)
			break;
	}
	return node;
}

/* The SAMPLES record's flags (wire.h) for s. */
static uint32_t wire_flags(const struct raw_sample *s)
{
	uint32_t flags = 0;
	if (s->flags & SAMPLE_TRUNCATED)
		flags |= WIRE_SF_TRUNCATED;
	if (s->flags & SAMPLE_OFF_CPU)
		flags |= WIRE_SF_OFF_CPU;
	if (s->flags & SAMPLE_NATIVE_KNOWN)
		flags |= WIRE_SF_NATIVE_KNOWN |
			 (s->flags & SAMPLE_NATIVE ? WIRE_SF_NATIVE : 0);
	if (s->flags & SAMPLE_GIL_KNOWN)
		flags |= WIRE_SF_GIL_KNOWN |
			 (s->flags & SAMPLE_GIL ? WIRE_SF_GIL : 0);
	if (!(s->flags & (SAMPLE_OFF_CPU | SAMPLE_WAIT | SAMPLE_HEAP)) &&
	    s->cpu_kind != SAMPLE_CPU_UNKNOWN)
		flags |= WIRE_SF_TIME_KNOWN |
			 (s->cpu_kind == SAMPLE_CPU_SYSTEM   ? WIRE_SF_TIME_SYSTEM
			  : s->cpu_kind == SAMPLE_CPU_NATIVE ? WIRE_SF_TIME_NATIVE
							     : 0);
	return flags;
}

/* One record drained from the ring (ring_drain's callback, ag_lock
 * held): a CPU or wall sample into the SAMPLES frame, a heap allocation
 * or free into the HEAP frame, or counted lost. */
void sampleframe_on_record(const void *payload, size_t len, void *arg)
{
	(void)arg;
	const struct raw_sample *s = payload;
	if (len < sizeof *s || len < raw_size(s))
		return;
	const struct raw_frame *fr = (const struct raw_frame *)(s + 1);
	if (s->flags & SAMPLE_HEAP_FREE) {
		if (sf.heap->buf)
			heapframe_put_free(sf.heap, s->heap_addr);
		return;
	}
	int heap = (s->flags & SAMPLE_HEAP) != 0;
	if (heap && !sf.heap->buf)
		return;
	if (heap && (s->flags & SAMPLE_INVALID)) {
		/* the allocation happened: keep it, with what was walked */
		struct raw_sample *w = (struct raw_sample *)(uintptr_t)s;
		w->flags &= (uint16_t)~SAMPLE_INVALID;
	}
	if (s->flags & SAMPLE_FAULT) {
		count_lost(WIRE_LOST_FAULT, s->weight, s->value_ns);
		return;
	}
	if ((s->flags & SAMPLE_INVALID) || !s->tid) {
		count_lost(WIRE_LOST_INVALID, s->weight, s->value_ns);
		return;
	}
	uint32_t node = stack_node(s, fr);
	if (!node) {
		if (heap)
			heapframe_lost(sf.heap, s->heap_size);
		else
			count_lost(WIRE_LOST_BUFFER, s->weight, s->value_ns);
		return;
	}
	/* a torn or unnumbered set: the sample counts, without labels */
	uint32_t labels = s->n_labels || s->n_task
				  ? labels_set_id(sf.in, raw_labels(s),
						  s->n_labels, raw_task(s),
						  s->n_task)
				  : 0;
	if (heap) {
		uint32_t thread = sample_thread((int)s->tid);
		if (!thread) {
			count_lost(WIRE_LOST_BUFFER, s->weight, s->value_ns);
			return;
		}
		heapframe_put_alloc(sf.heap, s->value_ns, node, thread,
				    s->heap_size, s->heap_addr, labels);
		return;
	}
	if (s->flags & SAMPLE_WAIT) {
		uint32_t f = s->wait & WAITS_BLOCK ? WIRE_SF_WAIT_BLOCK
						   : WIRE_SF_WAIT_MUTEX;
		if (s->wait & WAITS_GIL) {
			uint32_t loc = pseudo_loc(&sf.loc_gil, "[GIL]");
			node = loc ? intern_node(sf.in, node, loc) : 0;
			if (!node) {
				count_lost(WIRE_LOST_BUFFER, s->weight,
					   s->value_ns);
				return;
			}
			f |= WIRE_SF_GIL | WIRE_SF_GIL_KNOWN;
		}
		if (s->flags & SAMPLE_TRUNCATED)
			f |= WIRE_SF_TRUNCATED;
		put_sample(node, s, f, labels);
		return;
	}
	put_sample(node, s, wire_flags(s), labels);
}

void sampleframe_put_lost(void)
{
	unsigned long ring = __atomic_load_n(&sampler.n_lost_ring,
					     __ATOMIC_RELAXED);
	if (ring > sf.lost_ring_seen) {
		count_lost(WIRE_LOST_RING_FULL, ring - sf.lost_ring_seen,
			   (ring - sf.lost_ring_seen) * sampler.period_ns);
		sf.lost_ring_seen = ring;
	}
	uint64_t closed = threads_lost_closed_ns();
	if (closed > sf.lost_closed_seen) {
		uint64_t ns = closed - sf.lost_closed_seen;
		uint64_t n = sampler.period_ns ? ns / sampler.period_ns : 0;
		if (n) { /* the rest waits for more */
			count_lost(WIRE_LOST_FD_CLOSED, n,
				   n * sampler.period_ns);
			sf.lost_closed_seen += n * sampler.period_ns;
		}
	}
	for (int r = 1; r <= WIRE_LOST_REASON_MAX; r++) {
		if (!sf.lost[r][0])
			continue;
		uint8_t buf[64];
		struct wire_out w = wire_tagged_begin(buf, sizeof buf);
		wire_put_lost(&w, &(struct wire_lost){ (uint64_t)r,
						       sf.lost[r][0],
						       sf.lost[r][1] });
		/* if even this does not fit, keep counting and retry later */
		if (transport_put_frame(sf.tr, NULL, buf, &w, WIRE_LOST) == 0)
			sf.lost[r][0] = sf.lost[r][1] = 0;
	}
}


int sampleframe_init(struct intern *in, struct symbolizer *sym,
		     struct transport *tr, struct modules *mods,
		     struct heapframe *heap)
{
	memset(&sf, 0, sizeof sf);
	sf.in = in;
	sf.sym = sym;
	sf.tr = tr;
	sf.mods = mods;
	sf.heap = heap;
	sf.batch = malloc(BATCH_CAP + WIRE_HDR_LEN + 64);
	if (!sf.batch)
		return -1;
	if (mods) {
		size_t n = (size_t)sampler.max_depth + SAMPLER_NATIVE_MAX + 1;
		sf.py_entry = malloc((size_t)sampler.max_depth);
		sf.nat_class = malloc(SAMPLER_NATIVE_MAX);
		sf.items = malloc(n * sizeof *sf.items);
		if (!sf.py_entry || !sf.nat_class || !sf.items) {
			sampleframe_free();
			return -1;
		}
	}
	return 0;
}

void sampleframe_free(void)
{
	free(sf.batch);
	free(sf.py_entry);
	free(sf.nat_class);
	free(sf.items);
	imap_free(&sf.name_cache);
	free(held);
	held = NULL;
	n_held = cap_held = 0;
	memset(&sf, 0, sizeof sf);
}

int sampleframe_pending(void)
{
	return sf.batch_n || sf.n_samples || n_held;
}

void sampleframe_stats(struct sampleframe_stats *out)
{
	out->n_samples = sf.n_samples;
	out->lost_total = sf.lost_total;
	out->n_native = sf.n_native;
	out->n_unmerged = sf.n_unmerged;
}

void sampleframe_after_fork_child(void)
{
	memset(sf.lost, 0, sizeof sf.lost);
	sf.n_samples = 0;
	sf.lost_total = 0;
	sf.n_native = sf.n_unmerged = 0;
	sf.lost_ring_seen = 0;
	sf.lost_closed_seen = 0;
	sf.batch_n = 0;
	n_held = 0; /* the parent's threads, sent by the parent */
	imap_free(&sf.name_cache);
	sf.threadnames_gen = 0;
}
