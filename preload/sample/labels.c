/*
 * labels.c - the library's side of the `pyprof` module (labels.h): the
 * functions the module calls with ctypes, the per-thread values of 2.7
 * and 3.6, and the agent's numbering of encoded sets.
 *
 * The module's calls run on a Python thread holding the GIL, never in a
 * signal handler; the samplers read what they publish (sig_labels.c).
 */
#include "labels.h"

#include <string.h>

#include "asyncio.h"
#include "base/guard.h"
#include "base/log.h"
#include "base/sampler.h"
#include "signal/sig_asyncio.h"
#include "signal/sig_labels.h"


/* How far into a thread state the context pointer may be looked for. */
#define TS_SCAN_BYTES 4096

/*
 * pyprof_labels_thread(ts, value): the calling thread's labels (2.7,
 * 3.6): value is the module's tuple, or NULL for none. Returns 0, or -1
 * when no slot is left (the labels are not seen; the module carries on).
 */
int labels_module_thread(void *ts, void *value)
{
	return labels_thread_put((uintptr_t)ts, (uintptr_t)value);
}

struct scan {
	uintptr_t ts, ctx;
	long start, found;
};

static void scan_region(void *arg)
{
	struct scan *s = arg;
	for (long off = s->start; off + 8 <= TS_SCAN_BYTES; off += 8)
		if (*(volatile uintptr_t *)(s->ts + (uintptr_t)off) == s->ctx) {
			s->found = off;
			return;
		}
}

/*
 * pyprof_labels_find(ts, ctx, start): the first offset >= start (a
 * multiple of 8) at which thread state ts holds the pointer ctx, or -1.
 * The module calls it inside ctx.run() for two fresh contexts and keeps
 * the offset both agree on: where the interpreter keeps the thread's
 * current context, whatever the version's layout.
 */
long labels_module_find(void *ts, void *ctx, long start)
{
	struct scan s = { (uintptr_t)ts, (uintptr_t)ctx, start < 0 ? 0 : start,
			  -1 };
	if (!ts || !ctx || (s.start & 7))
		return -1;
	if (guard_run_sigsafe(scan_region, &s) < 0)
		return -1;
	return s.found;
}

/*
 * pyprof_labels_setup(kind, var, hash, ts_context, tuple_item,
 * tuple_type, bytes_type): the module's ContextVar (LABELS_CONTEXT; NULL
 * with LABELS_THREAD), hash(var), the context's offset in a thread state
 * (pyprof_labels_find), offsetof(PyTupleObject, ob_item) and the two
 * types. Returns 0 when the samplers will read labels; -1 when this
 * process is not being profiled (the module then does nothing at all).
 * The module checks the whole path once with pyprof_labels_read.
 */
int labels_module_setup(int kind, void *var, long long hash,
			long ts_context, long tuple_item,
			void *tuple_type, void *bytes_type)
{
	const struct pyabi *a = sampler.abi;
	if (!a || (kind != LABELS_CONTEXT && kind != LABELS_THREAD))
		return -1;
	if (kind == LABELS_CONTEXT &&
	    (!var || ts_context <= 0 || ts_context > TS_SCAN_BYTES ||
	     a->ctx_vars < 0 || a->hamt_root < 0 || a->hamt_bitmap_bits < 0))
		return -1;
	if (tuple_item <= 0 || tuple_item > 64 || !tuple_type || !bytes_type)
		return -1;
	__atomic_store_n(&labels_abi.kind, LABELS_OFF, __ATOMIC_RELEASE);
	labels_abi.var = (uintptr_t)var;
	/* CPython's HAMT folds the 64-bit hash to 32 bits (-1 is taken) */
	int32_t folded = (int32_t)(uint32_t)((uint64_t)hash & 0xffffffffu) ^
			 (int32_t)((uint64_t)hash >> 32);
	labels_abi.hash = (uint32_t)(folded == -1 ? -2 : folded);
	labels_abi.ts_context = (int)ts_context;
	labels_abi.ctx_vars = a->ctx_vars;
	labels_abi.hamt_root = a->hamt_root;
	labels_abi.tuple_item = (int)tuple_item;
	labels_abi.tuple_type = (uintptr_t)tuple_type;
	labels_abi.bytes_type = (uintptr_t)bytes_type;
	__atomic_store_n(&labels_abi.kind, kind, __ATOMIC_RELEASE);
	return 0;
}

/*
 * pyprof_labels_read(ts, out, cap): what a sampler would read on thread
 * state ts now, copied to out; returns its length (0: nothing). The
 * module's check of the set-up: it sets labels it knows and compares.
 */
long labels_module_read(void *ts, char *out, long cap)
{
	uint8_t buf[LABELS_MAX_BYTES];
	if (!ts || !out || cap <= 0)
		return 0;
	size_t n = labels_capture_sigsafe((uintptr_t)ts, buf);
	if ((long)n > cap)
		n = (size_t)cap;
	memcpy(out, buf, n);
	return (long)n;
}

/* pyprof_labels_off(): the module found the set-up wrong; no more
 * reads. */
void labels_module_off(void)
{
	__atomic_store_n(&labels_abi.kind, LABELS_OFF, __ATOMIC_RELEASE);
}

/* Whether key (a, an) sorts strictly before key (b, bn), bytewise. */
static int key_before(const uint8_t *a, size_t an, const uint8_t *b,
		      size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c < 0 || (c == 0 && an < bn);
}

/* Appends the pair (k, v) to kv (words so far in *words); 0, or -1. */
static int put_pair(struct intern *in, uint32_t *kv, uint32_t *words,
		    const char *k, size_t kl, const char *v, size_t vl)
{
	uint32_t ks, vs;
	if (*words == 2 * WIRE_MAX_LABELS || !(ks = intern_str(in, k, kl)) ||
	    !(vs = intern_str(in, v, vl)))
		return -1;
	kv[(*words)++] = ks;
	kv[(*words)++] = vs;
	return 0;
}

uint32_t labels_set_id(struct intern *in, const uint8_t *p, size_t n,
		       const uint8_t *task, size_t task_len)
{
	static const char task_key[] = "task";
	const size_t tk = sizeof task_key - 1;
	uint32_t kv[2 * WIRE_MAX_LABELS];
	uint32_t words = 0;
	const uint8_t *prev_key = NULL;
	size_t prev_len = 0;
	size_t i = 0;
	int task_put = task_len == 0;
	if (n > LABELS_MAX_BYTES || (n && p[n - 1] != 0) ||
	    task_len > ASYNCIO_NAME_MAX || (!n && !task_len))
		return 0;
	while (i < n) {
		const uint8_t *k = p + i;
		const uint8_t *kend = memchr(k, 0, n - i);
		size_t kl = (size_t)(kend - k);
		if (kend + 1 >= p + n)
			return 0; /* a key without a value */
		const uint8_t *v = kend + 1;
		size_t vl = (size_t)((const uint8_t *)memchr(v, 0, (size_t)(p + n - v)) - v);
		i += kl + vl + 2;
		/* keys: non-empty, not ours, sorted (so distinct) */
		if (!kl || wire_label_reserved((const char *)k, kl) ||
		    (prev_key && !key_before(prev_key, prev_len, k, kl)))
			return 0;
		prev_key = k;
		prev_len = kl;
		if (!task_put && !key_before(k, kl, (const uint8_t *)task_key, tk)) {
			/* the asyncio task's name goes here, and replaces a
			 * label of the same key */
			if (put_pair(in, kv, &words, task_key, tk,
				     (const char *)task, task_len) < 0)
				return 0;
			task_put = 1;
			if (kl == tk && !memcmp(k, task_key, tk))
				continue;
		}
		if (put_pair(in, kv, &words, (const char *)k, kl,
			     (const char *)v, vl) < 0)
			return 0;
	}
	if (!task_put && put_pair(in, kv, &words, task_key, tk,
				  (const char *)task, task_len) < 0)
		return 0;
	return intern_labels(in, kv, words / 2);
}
