/*
 * signal/sig_labels.c - the labels in force on a thread, read by the
 * samplers (labels.h).
 *
 * ASYNC-SIGNAL-SAFE: runs in the SIGPROF handler, in the heap hooks and
 * on the wall sampler thread. No malloc, stdio or locks; every load from
 * interpreter memory is made inside a guarded region (guard_run_sigsafe):
 * a fault costs this sample its labels, nothing more. Bounded: a HAMT
 * lookup visits at most HAMT_MAX_DEPTH nodes and a collision node's
 * entries are capped.
 *
 * The lookup is CPython's own (Python/hamt.c) done with plain reads:
 *   - the key's hash is folded to 32 bits (done once, at set-up);
 *   - at depth d (shift 5d) the hash's 5 bits (hash >> shift) & 31 pick
 *     a slot: a bitmap node holds the set slots densely, the index of
 *     slot b being popcount(bitmap & (bit(b) - 1)), each a (key, value)
 *     pair whose key NULL means the value is a sub-node one level down;
 *     an array node holds 32 sub-node pointers, NULL for none;
 *   - past the last level, a collision node lists (key, value) pairs of
 *     keys with equal hashes.
 * Keys are compared by identity: the module's ContextVar is the object
 * the program set, and a ContextVar equals only itself.
 *
 * The node types are not exported by every build, so they are told apart
 * by their tp_name ("hamt_bitmap_node", "hamt_array_node",
 * "hamt_collision_node": the same in 3.7 to 3.15) the first time each is
 * met, and remembered by address.
 *
 * 2.7 and 3.6 (LABELS_THREAD) have no context variables: the module tells
 * the library each thread's value (labels_thread_put, lock-free, on the
 * thread itself) and the samplers read it from a table keyed by thread
 * state, here.
 */
#include <errno.h>
#include <string.h>

#include "base/guard.h"
#include "base/sampler.h"
#include "sig_labels.h"

#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_U32(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))
#define RD_U8(a) (*(volatile uint8_t *)(uintptr_t)(a))

/* 32 bits of hash, 5 a level: 7 levels, then collision nodes. */
#define HAMT_MAX_DEPTH 8
#define HAMT_MAX_COLLISIONS 64

struct labels_abi labels_abi;

enum node_kind { NODE_BITMAP = 0,
		 NODE_ARRAY = 1,
		 NODE_COLLISION = 2 };

/* The kind of node n, by its type: remembered, else by tp_name. -1: not
 * a HAMT node. */
static int node_kind(uintptr_t n)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t t = RD_PTR(n + a->ob_type);
	for (int k = 0; k < 3; k++)
		if (t && __atomic_load_n(&labels_abi.node_type[k],
					 __ATOMIC_RELAXED) == t)
			return k;
	uintptr_t name = RD_PTR(t + (uintptr_t)a->tp_name);
	static const char pfx[] = "hamt_";
	for (int i = 0; i < 5; i++)
		if (RD_U8(name + i) != (uint8_t)pfx[i])
			return -1;
	int k;
	switch (RD_U8(name + sizeof pfx - 1)) { /* after "hamt_" */
	case 'b':
		k = NODE_BITMAP;
		break;
	case 'a':
		k = NODE_ARRAY;
		break;
	case 'c':
		k = NODE_COLLISION;
		break;
	default:
		return -1;
	}
	__atomic_store_n(&labels_abi.node_type[k], t, __ATOMIC_RELAXED);
	return k;
}

/* Set bits of x (without libgcc's __popcountdi2, which check-sigsafe
 * does not know: the same arithmetic, in the open). */
static uint32_t popcount32(uint32_t x)
{
	x = x - ((x >> 1) & 0x55555555u);
	x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
	x = (x + (x >> 4)) & 0x0f0f0f0fu;
	return (x * 0x01010101u) >> 24;
}

/* The value stored under key (hash h) in the HAMT rooted at node, or 0. */
static uintptr_t hamt_find(uintptr_t node, uintptr_t key, uint32_t h)
{
	const struct pyabi *a = sampler.abi;
	/* where each node keeps its fields: the row's (Python/hamt.c's
	 * private structs, measured) */
	const uintptr_t bitmap = (uintptr_t)a->hamt_bitmap_bits;
	const uintptr_t pairs = (uintptr_t)a->hamt_bitmap_array;
	const uintptr_t items = (uintptr_t)a->hamt_array_items;
	const uintptr_t coll = (uintptr_t)a->hamt_collision_array;
	for (int depth = 0; node && depth < HAMT_MAX_DEPTH; depth++) {
		uint32_t slot = (h >> (5 * depth)) & 31;
		switch (node_kind(node)) {
		case NODE_BITMAP: {
			uint32_t bits = RD_U32(node + bitmap);
			uint32_t bit = 1u << slot;
			if (!(bits & bit))
				return 0;
			uint32_t idx = popcount32(bits & (bit - 1));
			uintptr_t pair = node + pairs + 16 * idx; /* key, value */
			uintptr_t k = RD_PTR(pair);
			uintptr_t v = RD_PTR(pair + sizeof(uintptr_t));
			if (k)
				return k == key ? v : 0;
			node = v; /* a sub-node */
			break;
		}
		case NODE_ARRAY:
			node = RD_PTR(node + items + 8 * slot);
			break;
		case NODE_COLLISION: {
			int64_t n = RD_I64(node + (uintptr_t)a->var_size);
			if (n > 2 * HAMT_MAX_COLLISIONS)
				n = 2 * HAMT_MAX_COLLISIONS;
			for (int64_t i = 0; i + 1 < n; i += 2)
				if (RD_PTR(node + coll + 8 * i) == key)
					return RD_PTR(node + coll + 8 * (i + 1));
			return 0;
		}
		default:
			return 0;
		}
	}
	return 0;
}

/* LABELS_THREAD: (thread state, value) slots, open addressing. A slot is
 * claimed once for a thread state address (CAS from 0) and keeps it: a
 * thread state freed and made again at the same address finds its slot.
 * The value is the module's tuple, kept alive by the module while it is
 * in force and cleared (0) when the thread leaves its last block. */
#define THREAD_SLOTS 4096
static struct tslot {
	uintptr_t ts, value;
} tslots[THREAD_SLOTS];

static uint32_t ts_hash(uintptr_t ts)
{
	uint64_t h = (uint64_t)ts * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 40) & (THREAD_SLOTS - 1);
}

uintptr_t labels_thread_value_sigsafe(uintptr_t ts)
{
	uint32_t i = ts_hash(ts);
	for (int probe = 0; probe < THREAD_SLOTS; probe++) {
		uintptr_t t = __atomic_load_n(&tslots[i].ts, __ATOMIC_ACQUIRE);
		if (t == ts)
			return __atomic_load_n(&tslots[i].value,
					       __ATOMIC_ACQUIRE);
		if (!t)
			return 0;
		i = (i + 1) & (THREAD_SLOTS - 1);
	}
	return 0;
}

int labels_thread_put(uintptr_t key, uintptr_t value)
{
	uint32_t i = ts_hash(key);
	if (!key)
		return -1;
	for (int probe = 0; probe < THREAD_SLOTS; probe++) {
		uintptr_t t = __atomic_load_n(&tslots[i].ts, __ATOMIC_ACQUIRE);
		if (!t && value) {
			uintptr_t zero = 0;
			if (__atomic_compare_exchange_n(&tslots[i].ts, &zero, key,
							0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				t = key;
			else
				t = zero;
		}
		if (t == key) {
			__atomic_store_n(&tslots[i].value, value,
					 __ATOMIC_RELEASE);
			return 0;
		}
		if (!t)
			return 0; /* clearing a thread that never had a slot */
		i = (i + 1) & (THREAD_SLOTS - 1);
	}
	return -1;
}

static uintptr_t value_in(uintptr_t ctx);

/* The module's value (a tuple) in force on ts, or 0. */
static uintptr_t value_of(uintptr_t ts, int kind)
{
	if (kind == LABELS_THREAD)
		return labels_thread_value_sigsafe(ts);
	return value_in(RD_PTR(ts + (uintptr_t)labels_abi.ts_context));
}

/* The module's value in context ctx (a PyContext), or 0. */
static uintptr_t value_in(uintptr_t ctx)
{
	if (!ctx)
		return 0; /* the thread never made a context */
	uintptr_t vars = RD_PTR(ctx + (uintptr_t)labels_abi.ctx_vars);
	if (!vars)
		return 0;
	uintptr_t root = RD_PTR(vars + (uintptr_t)labels_abi.hamt_root);
	return hamt_find(root, labels_abi.var, labels_abi.hash);
}

struct capture {
	uintptr_t ts;  /* the thread state's labels, or */
	uintptr_t ctx; /* those of this context, if set */
	uint8_t *out;
	size_t n;
};

static void capture_region(void *arg)
{
	struct capture *c = arg;
	const struct pyabi *a = sampler.abi;
	int kind = __atomic_load_n(&labels_abi.kind, __ATOMIC_ACQUIRE);
	if (kind == LABELS_OFF)
		return;
	uintptr_t v = c->ctx ? (kind == LABELS_CONTEXT ? value_in(c->ctx) : 0)
			     : value_of(c->ts, kind);
	if (!v || RD_PTR(v + a->ob_type) != labels_abi.tuple_type ||
	    RD_I64(v + a->var_size) < 1)
		return;
	uintptr_t b = RD_PTR(v + (uintptr_t)labels_abi.tuple_item);
	if (!b || RD_PTR(b + a->ob_type) != labels_abi.bytes_type)
		return;
	int64_t len = RD_I64(b + a->var_size);
	if (len <= 0 || len > LABELS_MAX_BYTES)
		return;
	const volatile uint8_t *src =
		(const volatile uint8_t *)(b + (uintptr_t)a->bytes_sval);
	for (int64_t i = 0; i < len; i++)
		c->out[i] = src[i];
	c->n = (size_t)len;
}

size_t labels_capture_sigsafe(uintptr_t ts, uint8_t *out)
{
	struct capture c = { ts, 0, out, 0 };
	if (guard_run_sigsafe(capture_region, &c) < 0)
		return 0;
	return c.n;
}

size_t labels_capture_ctx_sigsafe(uintptr_t ctx, uint8_t *out)
{
	struct capture c = { 0, ctx, out, 0 };
	if (!ctx || guard_run_sigsafe(capture_region, &c) < 0)
		return 0;
	return c.n;
}

size_t sampler_labels_room_sigsafe(void)
{
	return __atomic_load_n(&labels_abi.kind, __ATOMIC_ACQUIRE)
		       ? LABELS_MAX_BYTES
		       : 0;
}

void sampler_labels_sigsafe(struct raw_sample *rec, size_t room)
{
	rec->n_labels = 0;
	if (room < LABELS_MAX_BYTES || !rec->tstate)
		return;
	uint8_t *out = (uint8_t *)(uintptr_t)raw_labels(rec);
	rec->n_labels = (uint16_t)labels_capture_sigsafe(rec->tstate, out);
}
