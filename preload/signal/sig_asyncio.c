/*
 * signal/sig_asyncio.c - the guarded half of the asyncio view (asyncio.h):
 * a thread's event loop, its tasks, their await chains and names.
 *
 * Runs on the wall sampler thread, with the discipline of the signal
 * handler (no malloc, stdio or locks; every load from interpreter memory
 * inside guard_run_sigsafe): tasks come and go while they are read, so a
 * read may fault or see a half-made object, and that costs one tick's view
 * of one thread, nothing more. Every walk is bounded. The tables below are
 * the wall thread's own.
 *
 * Per version (asyncio_abi.kind):
 *   LISTS (3.14+)  the loop and the running task are in the thread state
 *                  (asyncio_running_loop, asyncio_running_task); the C
 *                  tasks a thread made are on its circular list
 *                  (asyncio_tasks_head, linked through each task's
 *                  task_node), those of threads that ended on the
 *                  interpreter's. task_awaited_by names the tasks waiting
 *                  for a task: NULL, one object, or a set of them; CPython
 *                  keeps it for await, gather, TaskGroup and shield.
 *   SETS (3.7-3.13) tasks are in the registry asyncio.c found: weak
 *                  references in a set, and (3.12+) the eager tasks' set.
 *                  The loop of a thread is the self of its _run_once frame;
 *                  a task waits for another when its fut_waiter is that
 *                  task, or a future one of that task's done-callbacks
 *                  was made for (gather's outer future, shield's, wait_for's
 *                  waiter): the callback's bound self, partial arguments or
 *                  closure cells hold it. The running task is the one whose
 *                  coroutine's frame is on the thread's stack.
 * Pure-Python tasks (asyncio.tasks._PyTask, and its subclasses) keep
 * their fields in their instance dictionary (field(), sig_pydict.c);
 * SETS find them in the same registry; on LISTS they come from asyncio's
 * Python registry (3.14+ list only C tasks), a running one is the one
 * whose coroutine's frame is on the stack (they do not set the thread
 * state's running task), and who waits for them is found as SETS find
 * it (fut_waiter, done-callbacks).
 * A coroutine's await chain: its frame, then what it awaits, the top of
 * its suspended frame's value stack (CPython's own _PyGen_yf; on 3.15 the
 * entry under a null reference SEND leaves on top), while that
 * is a coroutine or a generator (generator-based coroutines, __await__
 * generators); it ends at a future's iterator.
 */
#include <errno.h>
#include <string.h>

#include "base/guard.h"
#include "base/sampler.h"
#include "sig_asyncio.h"
#include "sig_frames.h"
#include "sig_pydict.h"

#define RD_PTR(a) (*(volatile uintptr_t *)(uintptr_t)(a))
#define RD_I64(a) (*(volatile int64_t *)(uintptr_t)(a))
#define RD_I32(a) (*(volatile int32_t *)(uintptr_t)(a))
#define RD_U32(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define RD_I8(a) (*(volatile int8_t *)(uintptr_t)(a))
#define RD_U8(a) (*(volatile uint8_t *)(uintptr_t)(a))

#define SLOTS (2 * ASYNCIO_MAX_TASKS) /* a power of two */
#define MAX_CHAIN 256		      /* coroutines of one task's chain */
#define MAX_HOPS 32		      /* tasks up from a leaf           */
#define SET_MAX 65536		      /* entries of a set read          */

struct asyncio_abi asyncio_abi;

/* What a task is: the C Task (or a subclass of it: its fields at fixed
 * offsets) or the pure-Python one (or a subclass: its fields in its
 * instance dictionary). */
enum { TASK_NONE = 0,
       TASK_C = 1,
       TASK_PY = 2 };

struct task {
	uintptr_t obj;
	int32_t parent; /* index of a task waiting for this one, or -1 */
	uint8_t waits;	/* waits for another task of the table          */
	uint8_t kind;	/* TASK_C or TASK_PY                            */
};

static struct task tasks[ASYNCIO_MAX_TASKS];
static int n_tasks;
static int32_t slot[SLOTS]; /* index + 1, 0 free */
static int leaves[ASYNCIO_MAX_TASKS];
static int n_leaves;
static unsigned turn; /* where this tick's leaves start */
static uintptr_t thread_loop;
static uintptr_t py_task_type; /* this view's asyncio_abi.py_task_type */
static struct raw_frame chain_tmp[MAX_CHAIN];

static uint32_t ptr_hash(uintptr_t p)
{
	return (uint32_t)((p >> 4) * 2654435761u);
}

static int find(uintptr_t obj)
{
	for (uint32_t h = ptr_hash(obj), i = 0; i < SLOTS; i++) {
		int32_t s = slot[(h + i) & (SLOTS - 1)];
		if (!s)
			return -1;
		if (tasks[s - 1].obj == obj)
			return s - 1;
	}
	return -1;
}

static void add(uintptr_t obj, int kind)
{
	if (n_tasks >= ASYNCIO_MAX_TASKS || !obj || find(obj) >= 0)
		return;
	for (uint32_t h = ptr_hash(obj), i = 0; i < SLOTS; i++) {
		int32_t *s = &slot[(h + i) & (SLOTS - 1)];
		if (!*s) {
			tasks[n_tasks].obj = obj;
			tasks[n_tasks].parent = -1;
			tasks[n_tasks].waits = 0;
			tasks[n_tasks].kind = (uint8_t)kind;
			*s = ++n_tasks;
			return;
		}
	}
}

static void clear_waits(void);

static void clear_table(void)
{
	clear_waits();
	if (n_tasks)
		memset(slot, 0, sizeof slot);
	n_tasks = 0;
	n_leaves = 0;
}

static uintptr_t type_of(uintptr_t obj)
{
	return RD_PTR(obj + (uintptr_t)sampler.abi->ob_type);
}

/* What obj is (TASK_C, TASK_PY, or TASK_NONE): its type or one of the
 * type's bases is the C Task or the pure-Python one. LISTS hold C tasks
 * only; there the C Task's type is not needed. */
static int task_kind(uintptr_t obj)
{
	const struct asyncio_abi *x = &asyncio_abi;
	uintptr_t t = obj ? type_of(obj) : 0;
	for (int i = 0; t && i < 8; i++) {
		if (x->task_type && t == x->task_type)
			return TASK_C;
		if (py_task_type && t == py_task_type)
			return TASK_PY;
		t = RD_PTR(t + ASYNCIO_TP_BASE);
	}
	return TASK_NONE;
}

/* Field f (enum asyncio_py_field) of task t, or 0: a C task's at its
 * offset (0: this version's has none known), a pure-Python task's from
 * its instance dictionary. */
static uintptr_t field(uintptr_t t, int kind, int f)
{
	const struct asyncio_abi *x = &asyncio_abi;
	uint64_t at = 0;
	if (kind == TASK_PY)
		return pydict_attr_sigsafe(&x->dict, t, &x->py_keys[f]);
	switch (f) {
	case ASYNCIO_PY_LOOP:
		at = x->task_loop;
		break;
	case ASYNCIO_PY_NAME:
		at = x->task_name;
		break;
	case ASYNCIO_PY_CORO:
		at = x->task_coro;
		break;
	case ASYNCIO_PY_CONTEXT:
		at = x->task_context;
		break;
	case ASYNCIO_PY_WAITER:
		at = x->task_fut_waiter;
		break;
	case ASYNCIO_PY_CALLBACKS: /* fut_callbacks, SETS only */
		at = x->kind == ASYNCIO_SETS ? 40 : 0;
		break;
	}
	return at ? RD_PTR(t + at) : 0;
}

/* ---- coroutines ------------------------------------------------------ */

static int is_coroutine(uintptr_t obj)
{
	uintptr_t t = obj ? type_of(obj) : 0;
	return t && (t == asyncio_abi.coro_type || t == asyncio_abi.gen_type);
}

/* The frame of coroutine c if it is suspended in an await (or, <= 3.10,
 * suspended at all), else 0. */
static uintptr_t suspended_frame(uintptr_t c)
{
	const struct pyabi *a = sampler.abi;
	if (a->frame_kind != PYABI_FRAME_OBJECT) {
		int8_t st = RD_I8(c + a->gen_frame_state);
		if (st != a->gen_suspended && st != a->gen_yielded)
			return 0;
		return c + (uintptr_t)a->gen_frame;
	}
	uintptr_t f = RD_PTR(c + a->gen_frame);
	if (!f)
		return 0; /* finished */
	if (a->f_stack_kind == PYABI_STACK_TOP)
		return RD_PTR(f + a->f_stack) ? f : 0; /* NULL: running */
	return RD_I32(f + a->f_stack) > 0 ? f : 0;
}

/* The object suspended frame f awaits: the top of its value stack. */
static uintptr_t awaited(uintptr_t f)
{
	const struct pyabi *a = sampler.abi;
	switch (a->f_stack_kind) {
	case PYABI_STACK_TOP:
		return RD_PTR(RD_PTR(f + a->f_stack) - sizeof(uintptr_t));
	case PYABI_STACK_DEPTH: {
		int32_t d = RD_I32(f + a->f_stack);
		uintptr_t vs = RD_PTR(f + a->f_valuestack);
		return d > 0 ? RD_PTR(vs + (uintptr_t)(d - 1) * 8) : 0;
	}
	case PYABI_STACK_LOCALSPLUS: {
		int32_t d = RD_I32(f + a->f_stack);
		return d > 0 ? RD_PTR(f + a->f_localsplus +
				      (uintptr_t)(d - 1) * 8)
			     : 0;
	}
	case PYABI_STACK_POINTER: {
		/* 3.15 keeps a null reference above the receiver while a
		 * SEND is suspended; 3.14 has the receiver on top */
		uintptr_t mask = ~(uintptr_t)a->code_ref_tag_mask;
		uintptr_t sp = RD_PTR(f + a->f_stack);
		uintptr_t top = RD_PTR(sp - 8) & mask;
		return top ? top : RD_PTR(sp - 16) & mask;
	}
	}
	return 0;
}

/* Task t's await chain into chain_tmp, outermost (the task's coroutine)
 * first; returns how many, at most max. */
static int chain_of(uintptr_t t, int kind, int max)
{
	uintptr_t c = field(t, kind, ASYNCIO_PY_CORO);
	int n = 0;
	while (n < max && is_coroutine(c)) {
		uintptr_t f = suspended_frame(c);
		if (!f || frames_one_sigsafe(f, &chain_tmp[n]) < 0)
			break;
		n++;
		uintptr_t next = awaited(f);
		if (next == c)
			break;
		c = next;
	}
	return n;
}

/* ---- names ------------------------------------------------------------ */

static size_t put_utf8(char *out, size_t at, uint32_t ch)
{
	if (ch < 0x80) {
		if (at + 1 > ASYNCIO_NAME_MAX)
			return 0;
		out[at] = (char)ch;
		return 1;
	}
	if ((ch >= 0xd800 && ch < 0xe000) || ch > 0x10ffff)
		ch = 0xfffd; /* a lone surrogate is no UTF-8: the replacement */
	size_t n = ch < 0x800 ? 2 : ch < 0x10000 ? 3
						 : 4;
	if (at + n > ASYNCIO_NAME_MAX)
		return 0;
	static const uint8_t lead[5] = { 0, 0, 0xc0, 0xe0, 0xf0 };
	for (size_t i = n - 1; i > 0; i--) {
		out[at + i] = (char)(0x80 | (ch & 0x3f));
		ch >>= 6;
	}
	out[at] = (char)(lead[n] | ch);
	return n;
}

/* A str's text as UTF-8 (compact strings: every name a program makes). */
static size_t str_text(uintptr_t s, char *out)
{
	const struct pyabi *a = sampler.abi;
	uint32_t st = 0; /* the 4-byte state bitfield, byte by byte */
	for (unsigned b = 0; b < 4; b++)
		st |= (uint32_t)RD_U8(s + (uintptr_t)a->u_state + b) << 8 * b;
	if (!(st >> a->u_compact_bit & 1))
		return 0;
	int ascii = st >> a->u_ascii_bit & 1;
	unsigned kind = st >> a->u_kind_shift & 7;
	int64_t len = RD_I64(s + a->u_length);
	uintptr_t data = s + (uintptr_t)(ascii ? a->u_ascii_size
					       : a->u_compact_size);
	size_t n = 0;
	for (int64_t i = 0; i < len && i < ASYNCIO_NAME_MAX; i++) {
		uint32_t ch = kind == 1 ? RD_U8(data + (uintptr_t)i)
			      : kind == 2
				      ? *(volatile uint16_t *)(data + 2 * i)
				      : RD_U32(data + 4 * (uintptr_t)i);
		size_t w = put_utf8(out, n, ch);
		if (!w)
			break;
		n += w;
	}
	return n;
}

/* "Task-<n>" for a name still kept as the number n (3.12+: a compact
 * int, its 30-bit digits after lv_tag). */
static size_t number_name(uintptr_t v, char *out)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t tag = RD_PTR(v + (uintptr_t)a->long_tag);
	uint64_t n = 0;
	unsigned digits = (unsigned)(tag >> 3);
	if ((tag & 3) == 2 || digits > 2)
		return 0;
	for (unsigned i = digits; i-- > 0;)
		n = n << 30 | RD_U32(v + (uintptr_t)a->long_digits + 4 * i);
	static const char pre[] = "Task-";
	char rev[24];
	size_t k = 0, at = 0;
	do
		rev[k++] = (char)('0' + n % 10);
	while ((n /= 10) && k < sizeof rev);
	for (; pre[at]; at++)
		out[at] = pre[at];
	while (k)
		out[at++] = rev[--k];
	return at;
}

static size_t name_of(uintptr_t t, int kind, char *out)
{
	if (!sampler.abi->asyncio_task_names) {
		/* 3.7: tasks have no names; the coroutine's function's */
		const struct pyabi *a = sampler.abi;
		uintptr_t c = field(t, kind, ASYNCIO_PY_CORO);
		uintptr_t f = c && is_coroutine(c) ? RD_PTR(c + a->gen_frame) : 0;
		uintptr_t code = f ? RD_PTR(f + a->f_code) : 0;
		uintptr_t s = code ? RD_PTR(code + a->co_name) : 0;
		return s ? str_text(s, out) : 0;
	}
	uintptr_t v = field(t, kind, ASYNCIO_PY_NAME);
	uintptr_t ty = v ? type_of(v) : 0;
	if (ty && ty == asyncio_abi.unicode_type)
		return str_text(v, out);
	if (ty && ty == asyncio_abi.long_type &&
	    sampler.abi->long_tag != PYABI_NONE) /* 3.12+'s ints */
		return number_name(v, out);
	return 0;
}

/* ---- the tasks of a loop ---------------------------------------------- */

/* Each key of set s (a PySetObject: fill, used, mask, table), skipping
 * empty and dummy slots (a dummy's type is not a task's). */
static void set_each(uintptr_t s, void (*fn)(uintptr_t key, uintptr_t arg),
		     uintptr_t arg)
{
	if (!s || type_of(s) != asyncio_abi.set_type)
		return;
	const struct pyabi *a = sampler.abi;
	int64_t mask = RD_I64(s + (uintptr_t)a->set_mask);
	uintptr_t table = RD_PTR(s + (uintptr_t)a->set_table);
	if (mask < 0 || mask >= SET_MAX || !table)
		return;
	for (int64_t i = 0; i <= mask; i++) {
		uintptr_t key = RD_PTR(table + (uintptr_t)i * a->set_entry_size +
				       (uintptr_t)a->set_entry_key);
		if (key)
			fn(key, arg);
	}
}

static void add_if_ours(uintptr_t t, int kind)
{
	if (kind && field(t, kind, ASYNCIO_PY_LOOP) == thread_loop)
		add(t, kind);
}

/* A task from asyncio's registry: on LISTS only the pure-Python ones
 * (3.14+ keep no C task there). */
static void add_found(uintptr_t t)
{
	int kind = task_kind(t);
	if (asyncio_abi.kind == ASYNCIO_SETS || kind == TASK_PY)
		add_if_ours(t, kind);
}

/* LISTS: a circular list of tasks linked through task_node. */
static void add_list(uintptr_t head)
{
	uintptr_t node = RD_PTR(head);
	for (int i = 0; node && node != head && i < ASYNCIO_MAX_TASKS; i++) {
		add_if_ours(node - asyncio_abi.task_node, TASK_C);
		node = RD_PTR(node);
	}
}

static void link_parent(uintptr_t parent, uintptr_t child_index)
{
	int p = find(parent);
	if (p < 0 || p == (int)child_index)
		return;
	tasks[p].waits = 1;
	if (tasks[child_index].parent < 0)
		tasks[child_index].parent = p;
}

/* LISTS: the tasks waiting for task i, from task_awaited_by. */
static void link_awaited_by(int i)
{
	uintptr_t t = tasks[i].obj;
	uintptr_t by = RD_PTR(t + asyncio_abi.task_awaited_by);
	if (!by)
		return;
	if (RD_U8(t + asyncio_abi.task_awaited_by_is_set))
		set_each(by, link_parent, (uintptr_t)i);
	else
		link_parent(by, (uintptr_t)i);
}

static void add_weak(uintptr_t ref, uintptr_t arg)
{
	(void)arg;
	if (type_of(ref) == asyncio_abi.weakref_type)
		add_found(RD_PTR(ref + (uintptr_t)sampler.abi->weakref_object));
}

static void add_strong(uintptr_t t, uintptr_t arg)
{
	(void)arg;
	add_found(t);
}

/* SETS: the objects a waiting task waits on, each mapped to the task:
 * its fut_waiter, and the self of its innermost frame (TaskGroup's
 * __aexit__ waits on a future of the group's own). */
struct wslot {
	uintptr_t key;
	int32_t task;
};
static struct wslot waits_on[2 * SLOTS];
static uint32_t used[2 * ASYNCIO_MAX_TASKS]; /* slots to clear */
static int n_used;

static void wait_put(uintptr_t key, int task)
{
	if (!key)
		return;
	for (uint32_t h = ptr_hash(key), i = 0; i < 2 * SLOTS; i++) {
		uint32_t at = (h + i) & (2 * SLOTS - 1);
		struct wslot *w = &waits_on[at];
		if (!w->key) {
			if (n_used == 2 * ASYNCIO_MAX_TASKS)
				return;
			w->key = key;
			w->task = task;
			used[n_used++] = at;
			return;
		}
		if (w->key == key)
			return;
	}
}

static int wait_get(uintptr_t key)
{
	for (uint32_t h = ptr_hash(key), i = 0; key && i < 2 * SLOTS; i++) {
		struct wslot *w = &waits_on[(h + i) & (2 * SLOTS - 1)];
		if (!w->key)
			return -1;
		if (w->key == key)
			return w->task;
	}
	return -1;
}

/* The innermost frame of task t's await chain, or 0. */
static uintptr_t innermost(uintptr_t t, int kind)
{
	uintptr_t c = field(t, kind, ASYNCIO_PY_CORO), last = 0;
	for (int n = 0; n < MAX_CHAIN && is_coroutine(c); n++) {
		uintptr_t f = suspended_frame(c);
		if (!f)
			break;
		last = f;
		uintptr_t next = awaited(f);
		if (next == c)
			break;
		c = next;
	}
	return last;
}

static void clear_waits(void)
{
	for (int i = 0; i < n_used; i++)
		waits_on[used[i]].key = 0;
	n_used = 0;
}

/* Task j waits on obj, which a done-callback of task i holds. */
static void link_candidate(uintptr_t obj, int i)
{
	int j = wait_get(obj);
	if (j >= 0 && j != i) {
		tasks[j].waits = 1;
		if (tasks[i].parent < 0)
			tasks[i].parent = j;
	}
}

/* The futures done-callback cb of task i refers to: a bound method's
 * self, a closure's cells (gather's and shield's outer future), a
 * partial's arguments (wait_for's waiter, 3.7-3.11). */
static void link_through(uintptr_t cb, int i)
{
	const struct asyncio_abi *x = &asyncio_abi;
	const struct pyabi *a = sampler.abi;
	uintptr_t ty = cb ? type_of(cb) : 0;
	uintptr_t items = 0;
	if (!ty)
		return;
	if (ty == x->method_type) {
		link_candidate(RD_PTR(cb + (uintptr_t)a->method_self), i);
		return;
	}
	if (ty == x->function_type)
		items = RD_PTR(cb + (uintptr_t)a->func_closure);
	else if (ty == x->partial_type)
		items = RD_PTR(cb + (uintptr_t)a->partial_args);
	if (!items || type_of(items) != x->tuple_type)
		return;
	int64_t n = RD_I64(items + (uintptr_t)a->var_size);
	for (int64_t k = 0; k < n && k < 32; k++) {
		uintptr_t it = RD_PTR(items + x->tuple_items + 8 * (uintptr_t)k);
		if (it && ty == x->function_type)
			it = type_of(it) == x->cell_type
				     ? RD_PTR(it + (uintptr_t)a->cell_ref)
				     : 0;
		link_candidate(it, i);
	}
}

/* SETS, and LISTS' pure-Python tasks: who waits for whom. A task waits
 * for task i when its fut_waiter is i, or is (or its innermost frame's
 * self is) an object one of i's done-callbacks holds. (LISTS: a C task's
 * waiter and callbacks are not known, its awaited_by is.) */
static void link_sets(void)
{
	const struct asyncio_abi *x = &asyncio_abi;
	for (int i = 0; i < n_tasks; i++) {
		uintptr_t t = tasks[i].obj;
		uintptr_t w = field(t, tasks[i].kind, ASYNCIO_PY_WAITER);
		int j = w ? find(w) : -1;
		if (j >= 0 && j != i) {
			tasks[i].waits = 1;
			if (tasks[j].parent < 0)
				tasks[j].parent = i;
		}
		wait_put(w, i);
		uintptr_t f = innermost(t, tasks[i].kind);
		if (f)
			wait_put(RD_PTR(f + (uintptr_t)sampler.abi->f_localsplus) &
					 ~(uintptr_t)sampler.abi->code_ref_tag_mask,
				 i);
	}
	for (int i = 0; i < n_tasks; i++) {
		uintptr_t t = tasks[i].obj;
		if (tasks[i].kind == TASK_C && x->kind == ASYNCIO_SETS)
			link_through(
				RD_PTR(t + (uintptr_t)sampler.abi->task_callback0), i);
		/* fut_callbacks, _callbacks: a list of (cb, ctx) */
		uintptr_t cbs = field(t, tasks[i].kind, ASYNCIO_PY_CALLBACKS);

		if (!cbs || type_of(cbs) != x->list_type)
			continue;
		int64_t n = RD_I64(cbs + (uintptr_t)sampler.abi->var_size);
		uintptr_t item = RD_PTR(cbs + (uintptr_t)sampler.abi->list_items);
		for (int64_t k = 0; item && k < n && k < 64; k++) {
			uintptr_t pair = RD_PTR(item + 8 * (uintptr_t)k);
			if (pair && type_of(pair) == x->tuple_type)
				link_through(RD_PTR(pair + x->tuple_items), i);
		}
	}
}

/* SETS: the loop running on thread state ts (the self of its _run_once
 * frame), and the frames above that frame, innermost first. */
#define MAX_ABOVE 512
static uintptr_t above[MAX_ABOVE];
static int n_above;

static int code_named(uintptr_t code, const char *want, size_t len);
#define NAMED(code, lit) code_named(code, lit, sizeof lit - 1)

static uintptr_t loop_of(uintptr_t ts)
{
	const struct pyabi *a = sampler.abi;
	uintptr_t f = frames_first_sigsafe(ts);
	n_above = 0;
	for (int i = 0; f && i < 4 * MAX_ABOVE; i++) {
		uintptr_t code = RD_PTR(f + a->f_code) &
				 ~(uintptr_t)a->code_ref_tag_mask;
		if (code && RD_PTR(code + a->ob_type) == sampler.code_type &&
		    NAMED(code, "_run_once")) /* 3.14+: a tagged reference */
			return RD_PTR(f + a->f_localsplus) &
			       ~(uintptr_t)a->code_ref_tag_mask;
		if (n_above < MAX_ABOVE)
			above[n_above++] = f;
		uintptr_t next = RD_PTR(f + a->f_back);
		if (next == f)
			break;
		f = next;
	}
	return 0;
}

/* SETS: the task whose coroutine's frame is innermost among those above
 * the loop's frame: the one running (its index, or -1). */
static int running_of(void)
{
	const struct pyabi *a = sampler.abi;
	int best = MAX_ABOVE;
	int run = -1;
	for (int i = 0; i < n_tasks; i++) {
		uintptr_t c = field(tasks[i].obj, tasks[i].kind,
				    ASYNCIO_PY_CORO);
		if (!c)
			continue;
		uintptr_t f = a->frame_kind == PYABI_FRAME_OBJECT
				      ? RD_PTR(c + a->gen_frame)
				      : c + (uintptr_t)a->gen_frame;
		for (int k = 0; f && k < n_above && k < best; k++)
			if (above[k] == f) {
				best = k;
				run = i;
			}
	}
	return run;
}

static int collect_sets(uintptr_t ts, int selecting, struct asyncio_view *v)
{
	const struct asyncio_abi *x = &asyncio_abi;
	thread_loop = loop_of(ts);
	if (!thread_loop)
		return ASYNCIO_NOT_LOOP;
	set_each(x->weak_tasks, add_weak, 0);
	if (x->eager_tasks)
		set_each(x->eager_tasks, add_strong, 0);
	int running = running_of();
	if (running >= 0) {
		v->name_len = name_of(tasks[running].obj, tasks[running].kind,
				      v->name);
		return ASYNCIO_RUNNING;
	}
	if (!selecting)
		return ASYNCIO_NOT_LOOP;
	link_sets();
	return ASYNCIO_WAITING;
}

/* ---- the view --------------------------------------------------------- */

struct view_args {
	uintptr_t ts;
	int selecting;
	struct asyncio_view *v;
};

/* LISTS: the pure-Python tasks of thread_loop, from asyncio's registry
 * (3.14+ keep none of them in the thread state: a running one is found as
 * SETS find theirs, by its coroutine's frame on the thread's stack). The
 * running one's index, or -1. */
static int add_py_tasks(uintptr_t ts)
{
	const struct asyncio_abi *x = &asyncio_abi;
	if (!py_task_type)
		return -1;
	set_each(x->weak_tasks, add_weak, 0);
	set_each(x->eager_tasks, add_strong, 0);
	if (!n_tasks)
		return -1;
	loop_of(ts); /* the frames above the loop's */
	return running_of();
}

static int collect_lists(uintptr_t ts, int selecting, struct asyncio_view *v)
{
	const struct asyncio_abi *x = &asyncio_abi;
	thread_loop = RD_PTR(ts + x->ts_running_loop);
	if (!thread_loop && py_task_type) /* asyncio without _asyncio */
		thread_loop = loop_of(ts);
	if (!thread_loop)
		return ASYNCIO_NOT_LOOP;
	if (!py_task_type) /* asyncio.c: time to look for the registry */
		__atomic_store_n(&asyncio_abi.loop_seen, 1, __ATOMIC_RELAXED);
	uintptr_t running = RD_PTR(ts + x->ts_running_task);
	if (running) { /* (a task may wait in a selector of its own) */
		v->name_len = name_of(running, TASK_C, v->name);
		return ASYNCIO_RUNNING;
	}
	int py_running = add_py_tasks(ts);
	if (py_running >= 0) {
		v->name_len = name_of(tasks[py_running].obj, TASK_PY, v->name);
		return ASYNCIO_RUNNING;
	}
	if (!selecting)
		return ASYNCIO_NOT_LOOP; /* the loop's own work, no task's */
	int n_py = n_tasks;
	add_list(ts + x->ts_tasks_head);
	uintptr_t interp = RD_PTR(ts + (uintptr_t)sampler.abi->ts_interp);
	if (interp)
		add_list(interp + x->interp_tasks_head);
	for (int i = n_py; i < n_tasks; i++)
		link_awaited_by(i);
	if (n_py)
		link_sets();
	return ASYNCIO_WAITING;
}

static void view_region(void *arg)
{
	struct view_args *w = arg;
	struct asyncio_view *v = w->v;
	v->state = ASYNCIO_NOT_LOOP;
	clear_table();
	/* pairs with the release store of asyncio.c (look_with_gil) */
	py_task_type = __atomic_load_n(&asyncio_abi.py_task_type,
				       __ATOMIC_ACQUIRE);
	int st = ASYNCIO_NOT_LOOP;
	if (asyncio_abi.kind == ASYNCIO_LISTS)
		st = collect_lists(w->ts, w->selecting, v);
	else if (asyncio_abi.kind == ASYNCIO_SETS)
		st = collect_sets(w->ts, w->selecting, v);
	if (st == ASYNCIO_WAITING) {
		for (int i = 0; i < n_tasks; i++) {
			uintptr_t c = field(tasks[i].obj, tasks[i].kind,
					    ASYNCIO_PY_CORO);
			if (!tasks[i].waits && is_coroutine(c) &&
			    suspended_frame(c))
				leaves[n_leaves++] = i;
		}
		if (!n_leaves)
			st = ASYNCIO_NOT_LOOP;
	}
	v->n_leaves = n_leaves;
	v->state = st;
}

int asyncio_view_sigsafe(uintptr_t ts, int selecting, struct asyncio_view *v)
{
	v->state = ASYNCIO_NOT_LOOP;
	v->name_len = 0;
	v->n_leaves = 0;
	if (!__atomic_load_n(&asyncio_abi.kind, __ATOMIC_ACQUIRE) || !ts)
		return ASYNCIO_NOT_LOOP;
	struct view_args w = { ts, selecting, v };
	if (guard_run_sigsafe(view_region, &w) < 0) {
		clear_table();
		v->state = ASYNCIO_NOT_LOOP;
		v->name_len = 0;
	}
	if (v->state == ASYNCIO_WAITING)
		turn++;
	return v->state;
}

struct leaf_args {
	int i;
	struct raw_frame *out;
	int max, n;
	char *name;
	size_t *name_len;
	uintptr_t *ctx;
};

static void leaf_region(void *arg)
{
	struct leaf_args *l = arg;
	int t = leaves[(turn + (unsigned)l->i) % (unsigned)n_leaves];
	*l->name_len = name_of(tasks[t].obj, tasks[t].kind, l->name);
	*l->ctx = field(tasks[t].obj, tasks[t].kind, ASYNCIO_PY_CONTEXT);
	for (int hop = 0; t >= 0 && hop < MAX_HOPS && l->n < l->max; hop++) {
		int room = l->max - l->n;
		int c = chain_of(tasks[t].obj, tasks[t].kind,
				 room < MAX_CHAIN ? room : MAX_CHAIN);
		/* chain_tmp is outermost first; the record is leaf first */
		for (int k = c - 1; k >= 0; k--)
			l->out[l->n++] = chain_tmp[k];
		t = tasks[t].parent;
	}
}

int asyncio_leaf_sigsafe(int i, void *out, int max, char *name,
			 size_t *name_len, uintptr_t *ctx)
{
	struct leaf_args l = { i, out, max, 0, name, name_len, ctx };
	*name_len = 0;
	*ctx = 0;
	if (i < 0 || i >= n_leaves)
		return -1;
	if (guard_run_sigsafe(leaf_region, &l) < 0)
		return -1;
	return l.n;
}

/* ---- the loop's frame ------------------------------------------------- */

static int code_named(uintptr_t code, const char *want, size_t len)
{
	uintptr_t s = RD_PTR(code + sampler.abi->co_name);
	char buf[ASYNCIO_NAME_MAX];
	size_t n = s ? str_text(s, buf) : 0;
	if (n != len)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (buf[i] != want[i])
			return 0;
	return 1;
}

struct loop_args {
	const struct raw_frame *f;
	int n, at, selecting;
};

static void loop_region(void *arg)
{
	struct loop_args *l = arg;
	static uintptr_t known; /* the code last found to be _run_once */
	for (int i = 0; i < l->n; i++) {
		uintptr_t code = raw_code(&l->f[i]);
		if (code == known || NAMED(code, "_run_once")) {
			known = code;
			l->at = i;
			l->selecting = i == 1 && NAMED(raw_code(&l->f[0]), "select");
			return;
		}
	}
}

int asyncio_loop_frame_sigsafe(const void *frames, int n, int *selecting)
{
	struct loop_args l = { frames, n, -1, 0 };
	*selecting = 0;
	if (guard_run_sigsafe(loop_region, &l) < 0)
		return -1;
	*selecting = l.selecting;
	return l.at;
}
