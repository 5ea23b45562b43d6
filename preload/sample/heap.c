/*
 * heap.c - setting heap profiling up (see heap.h): the sampled-address
 * table, CPython's allocator domains, fork and exit.
 *
 * Which domains. RAW is malloc() itself in every CPython here (unless the
 * program changes it), and malloc is interposed, so only the MEM and OBJ
 * domains (pymalloc: objects and buffers of up to 512 bytes carved from
 * its own arenas, which malloc never sees per object) are wrapped. Their
 * hooks chain to the allocators that were there and count blocks of up
 * to 512 bytes; pymalloc hands bigger ones to malloc, which counts them
 * (sig_heap.c says why this split costs less than a guard).
 *
 * When. The constructor runs before Py_Initialize: the hooks go in then,
 * so start-up allocations (imports) are seen. CPython 3.6's Py_Main
 * installs the allocators again (PYTHONMALLOC handling), and 3.7+ may do
 * so when PYTHONMALLOC is set: the agent checks once the interpreter is
 * initialized and puts ours back on top of whatever is there.
 *
 * 2.7 has no allocator API: only the libc hooks work there, which see
 * pymalloc's arenas (256 KiB each, when it takes a new one) and blocks
 * over 256 bytes that pymalloc hands to malloc, plus everything C code
 * allocates; small objects are not seen one by one (docs/heap.md says so).
 *
 * Constructor, agent thread and fork handlers only.
 */
#include "heap.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "base/guard.h"
#include "base/log.h"
#include "base/sampler.h"
#include "signal/sig_heap.h"

/* CPython's PyMemAllocatorDomain */
enum { PY_DOMAIN_RAW = 0, PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 };

static void (*py_get)(int domain, struct py_allocator *a);
static void (*py_set)(int domain, struct py_allocator *a);
/* The RAW domain's malloc function before anything changed it (the
 * constructor runs before Py_Main): CPython's wrapper of malloc. */
static void *raw_malloc_fn;

/* Puts our hooks for domain d on top of what is installed now, unless
 * they are there already. Returns 1 if it installed them. */
static int hook_domain(int d)
{
	const struct py_allocator *ours = heap_py_hook_sigsafe(d);
	struct py_allocator cur, mine, raw;

	py_get(d, &cur);
	if (cur.malloc == ours->malloc)
		return 0;
	/* A domain whose small blocks come from malloc is counted by our
	 * malloc already; hooking it too would count them twice. That is
	 * PYTHONMALLOC=malloc (the domain is the RAW allocator), and
	 * CPython's debug hooks over malloc (malloc_debug; 3.6's "debug"):
	 * their ctx is a debug_alloc_api_t, { char api_id; PyMemAllocatorEx
	 * alloc; } in every version here, whose alloc is what they wrap. A
	 * foreign allocator that wraps malloc would still be counted twice
	 * for blocks up to 512 bytes (docs/heap.md). */
	py_get(PY_DOMAIN_RAW, &raw);
	if (cur.malloc == raw.malloc || (void *)cur.malloc == raw_malloc_fn)
		return 0;
	if (cur.ctx) {
		struct py_allocator inner;
		if (guard_copy(&inner, (const char *)cur.ctx + 8,
			       sizeof inner) == 0 &&
		    (void *)inner.malloc == raw_malloc_fn)
			return 0;
	}
	*heap_py_orig_sigsafe(d) = cur;
	mine = *ours;
	mine.ctx = cur.ctx; /* see sig_heap.c: only pointers change */
	py_set(d, &mine);
	return 1;
}

/* Wraps the MEM and OBJ domains (not yet done, or put back after
 * start-up replaced them); the number of domains hooked now. */
static int hook_domains(void)
{
	if (!py_get || !py_set)
		return 0;
	heap_enter();
	int n = hook_domain(PY_DOMAIN_MEM) + hook_domain(PY_DOMAIN_OBJ);
	heap_leave();
	return n;
}

static int py_hooked; /* the domains were wrapped once (agent, ctor) */

int heap_init(uint64_t rate, int start, int major)
{
	if (major >= 3) {
		py_get = (void (*)(int, struct py_allocator *))dlsym(
			RTLD_DEFAULT, "PyMem_GetAllocator");
		py_set = (void (*)(int, struct py_allocator *))dlsym(
			RTLD_DEFAULT, "PyMem_SetAllocator");
	}
	if (py_get && py_set) {
		struct py_allocator raw;
		py_get(PY_DOMAIN_RAW, &raw);
		raw_malloc_fn = (void *)raw.malloc;
	}
	/* control.h: a command may switch heap sampling on later */
	heap_sampling_supported = 1;
	if (!rate)
		return 0;
	/* Asked for from the start: the domains are wrapped now, before
	 * Py_Initialize, and frees are followed from now on; sampling
	 * itself starts with the rest of sampling (control.h). */
	hook_domains();
	py_hooked = 1;
	__atomic_store_n(&heap_on, 1, __ATOMIC_RELEASE);
	/* Sampling from the start (PYPROF_START=on): allocations are sampled
	 * from now, not from when the agent first sees the interpreter
	 * initialized (up to a tick later; a short program allocates much of
	 * what it holds by then). control.h's sampling_start and _stop take
	 * over from there. */
	if (start) {
		__atomic_store_n(&heap_sampling_rate, rate, __ATOMIC_RELAXED);
		__atomic_store_n(&heap_sampling_on, 1, __ATOMIC_RELEASE);
	}
	plog_info("heap profiling: one sample per %llu bytes on average%s",
		  (unsigned long long)rate,
		  py_get ? "" : " (malloc only: Python 2 has no allocator API)");
	return 0;
}

void heap_python_started(void)
{
	__atomic_store_n(&heap_python_seen, 1, __ATOMIC_RELEASE);
	if (!py_hooked)
		return;
	int n = hook_domains();
	if (n)
		plog_info("heap profiling: start-up replaced the Python "
			  "allocators; hooks put back on %d domain(s)", n);
}

void heap_sampling_started(void)
{
	if (!py_hooked) {
		/* first switched on by a command, the interpreter running:
		 * sig_heap.c says why wrapping the domains now is safe */
		hook_domains();
		py_hooked = 1;
	}
	__atomic_store_n(&heap_on, 1, __ATOMIC_RELEASE);
}

void heap_after_fork_child(int follow)
{
	if (!heap_on)
		return;
	/* the pages come back as zeros: an empty table */
	void *a, *b;
	size_t na, nb;
	heap_table_region_sigsafe(&a, &na, &b, &nb);
	madvise(a, na, MADV_DONTNEED);
	madvise(b, nb, MADV_DONTNEED);
	memset(&heap_stats, 0, sizeof heap_stats);
	/* followed: control_after_fork_child decides (the parent's own
	 * state carries over, a command's does not) */
	if (!follow) {
		__atomic_store_n(&heap_sampling_on, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&heap_on, 0, __ATOMIC_RELEASE);
	}
}

void heap_stop(void)
{
	__atomic_store_n(&heap_sampling_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&heap_on, 0, __ATOMIC_RELEASE);
}
