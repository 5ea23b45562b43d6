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
 * initialized and puts ours back on top of whatever is there. Loaded
 * late (`pyprof attach`), the domains are wrapped when heap sampling is
 * first switched on, RAW among them (hook_domain says why).
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
enum { PY_DOMAIN_RAW = 0,
       PY_DOMAIN_MEM = 1,
       PY_DOMAIN_OBJ = 2 };

static void (*py_get)(int domain, struct py_allocator *a);
static void (*py_set)(int domain, struct py_allocator *a);
/* The RAW domain's malloc function before anything changed it (the
 * constructor runs before Py_Main): CPython's wrapper of malloc. */
static void *raw_malloc_fn;

/* The library came late (heap_init's late): its malloc is not the
 * program's (a library dlopen'd into a running process interposes
 * nothing: every call to malloc was bound to glibc's at start-up). */
static int late_load;

/* Whether domain d's blocks come from malloc, not pymalloc: the RAW
 * allocator itself (PYTHONMALLOC=malloc), or CPython's debug hooks over
 * malloc (malloc_debug; 3.6's "debug"): their ctx is a debug_alloc_api_t,
 * { char api_id; PyMemAllocatorEx alloc; } in every version here, whose
 * alloc is what they wrap. */
static int domain_is_malloc(const struct py_allocator *cur)
{
	struct py_allocator raw, inner;

	py_get(PY_DOMAIN_RAW, &raw);
	if (cur->malloc == raw.malloc || (void *)cur->malloc == raw_malloc_fn)
		return 1;
	return cur->ctx &&
	       guard_copy(&inner, (const char *)cur->ctx + 8, sizeof inner) ==
		       0 &&
	       (void *)inner.malloc == raw_malloc_fn;
}

/* Puts our hooks for domain d on top of what is installed now, unless
 * they are there already. Returns 1 if it installed them. */
static int hook_domain(int d)
{
	struct py_allocator cur, mine;
	int whole;

	py_get(d, &cur);
	if (cur.malloc == heap_py_hook_sigsafe(d, 0)->malloc ||
	    cur.malloc == heap_py_hook_sigsafe(d, 1)->malloc)
		return 0;
	/*
	 * Preloaded, the MEM and OBJ hooks count pymalloc's blocks (up to
	 * 512 bytes) and our malloc the rest. A domain whose small blocks
	 * come from malloc is counted there already: hooking it too would
	 * count them twice (a foreign allocator that wraps malloc would
	 * still be, for blocks up to 512 bytes: docs/heap.md).
	 *
	 * Loaded late, our malloc sees nothing: the RAW domain is wrapped
	 * whole (pymalloc takes its blocks over 512 bytes from it, through
	 * PyMem_RawMalloc, and so does the interpreter for its own), and so
	 * is a MEM or OBJ domain that is malloc underneath (its functions
	 * call malloc directly, not through RAW). C code calling malloc
	 * itself is not seen (docs/heap.md).
	 */
	if (d == PY_DOMAIN_RAW)
		whole = 1;
	else if (domain_is_malloc(&cur))
		whole = 1;
	else
		whole = 0;
	if (whole && !late_load)
		return 0;
	*heap_py_orig_sigsafe(d) = cur;
	mine = *heap_py_hook_sigsafe(d, whole);
	mine.ctx = cur.ctx; /* see sig_heap.c: only pointers change */
	py_set(d, &mine);
	return 1;
}

/* Wraps the MEM and OBJ domains, and RAW when loaded late (not yet done,
 * or put back after start-up replaced them); the number of domains hooked
 * now. RAW last: the other two are compared with it as it was. */
static int hook_domains(void)
{
	if (!py_get || !py_set)
		return 0;
	heap_enter();
	int n = hook_domain(PY_DOMAIN_MEM) + hook_domain(PY_DOMAIN_OBJ);
	if (late_load)
		n += hook_domain(PY_DOMAIN_RAW);
	heap_leave();
	return n;
}

static int py_hooked; /* the domains were wrapped once (agent, ctor) */

int heap_init(uint64_t rate, int start, int mem_allocators, int late)
{
	late_load = late;
	if (mem_allocators) {
		py_get = (void (*)(int, struct py_allocator *))dlsym(
			RTLD_DEFAULT, "PyMem_GetAllocator");
		py_set = (void (*)(int, struct py_allocator *))dlsym(
			RTLD_DEFAULT, "PyMem_SetAllocator");
	}
	if (py_get && py_set) {
		struct py_allocator raw, inner;
		py_get(PY_DOMAIN_RAW, &raw);
		raw_malloc_fn = (void *)raw.malloc;
		/* late, RAW may be the debug hooks (-X dev) already: what
		 * they wrap is the wrapper of malloc (domain_is_malloc) */
		if (late && raw.ctx &&
		    guard_copy(&inner, (const char *)raw.ctx + 8,
			       sizeof inner) == 0)
			raw_malloc_fn = (void *)inner.malloc;
	}
	/* control.h: a command may switch heap sampling on later; loaded
	 * late, only through the Python allocators (a Python 3 API) */
	heap_sampling_supported = !late || (py_get && py_set);
	if (!rate)
		return 0;
	/* Asked for from the start: the domains are wrapped now, before
	 * Py_Initialize (or at once, loaded late into a running one: the
	 * attach with --collector), and frees are followed from now on;
	 * sampling
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
			  "allocators; hooks put back on %d domain(s)",
			  n);
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
