/*
 * asyncio.c - where the interpreter keeps asyncio's tasks (asyncio.h).
 *
 * Runs on the wall sampler thread, between ticks (asyncio_poll), until it
 * has found them: a look at the loader's count of loaded objects, and a
 * scan when it changed. Nothing here runs in a guarded region or a signal
 * handler.
 *
 * 3.14+: CPython describes its C tasks for debuggers in a section of its
 * own, ".AsyncioDebug", in the object that holds the _asyncio module (the
 * extension module, or libpython or the program when it is built in): the
 * offsets of a task's name, coroutine, awaited_by and list node, and of
 * the thread state's and interpreter state's task lists, running loop
 * and running task. The section is read from the object file's section
 * headers (they are not mapped) and its contents from memory.
 *
 * 3.7-3.13: the C Task's layout is fixed per version (the table below,
 * measured on each interpreter: the offset of a task's coroutine, the
 * fields around it follow the same order in every version); where the
 * tasks are is learned from the asyncio module itself, once, with the
 * GIL held and through the C API, on the names thread (threadnames.c,
 * which takes the GIL for thread names: the wall sampler must not wait
 * for it): asyncio.tasks' registry (_all_tasks up to 3.11; _scheduled_tasks and
 * _eager_tasks from 3.12), the C Task type, and functools.partial's type.
 * It looks once the _asyncio extension is loaded (it comes with `import
 * asyncio`), then again after 10 ms, 20 ms, ... up to once a second until
 * asyncio.tasks is there and complete; a process that never imports
 * asyncio never takes the GIL for this (one where _asyncio is built into
 * the interpreter looks once a second until it does). The registry's
 * objects are kept alive by the references taken here (they live as long
 * as the module anyway).
 *
 * Pure-Python tasks (asyncio.tasks._PyTask): the same look takes their
 * class and the interned names of their fields; 3.7-3.13 keep them in the
 * registry above (3.14+ too, beside the C tasks' lists: there the look is
 * asked for once a thread state shows a running loop). A process without
 * the _asyncio extension is noticed by the wall thread's look at frames
 * (a loop's _run_once, one tick in 16); its registry, read as SETS, has
 * pure-Python tasks only, whatever the version.
 */
#include "asyncio.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/sampler.h"
#include "threadnames.h"
#include "signal/sig_asyncio.h"

#define MAX_CHECKED 32

/* struct _Py_AsyncioModuleDebugOffsets (3.14, 3.15): 13 uint64_t */
enum {
	D_TASK_SIZE,
	D_TASK_NAME,
	D_TASK_AWAITED_BY,
	D_TASK_IS_TASK,
	D_TASK_AWAITED_BY_IS_SET,
	D_TASK_CORO,
	D_TASK_NODE,
	D_INTERP_SIZE,
	D_INTERP_TASKS_HEAD,
	D_TS_SIZE,
	D_TS_RUNNING_LOOP,
	D_TS_RUNNING_TASK,
	D_TS_TASKS_HEAD,
	D_N
};

typedef void PyObject;

static struct {
	PyObject *(*modules)(void);
	PyObject *(*dict_get)(PyObject *, const char *);
	PyObject *(*getattr)(PyObject *, const char *);
	void (*fetch)(PyObject **, PyObject **, PyObject **);
	void (*restore)(PyObject *, PyObject *, PyObject *);
	void (*clear)(void);
	int (*finalizing)(void);
	PyObject *(*intern)(const char *);
} api;

static int wanted;
static int c_tasks;			      /* names thread: the _asyncio extension is there */
static int with_gil;			      /* the registry may be looked up (names thread) */
static uint64_t next_look;		      /* SETS: not before (CLOCK_MONOTONIC) */
static uint64_t look_gap = 10000000ull;	      /* then doubled, up to a second */
static unsigned long long loads_seen = ~0ull; /* dlpi_adds last scanned */
static uintptr_t checked[MAX_CHECKED];	      /* objects looked at, by base */
static int n_checked;

static int look_wanted(void);
static void look_with_gil(void);
static void find_lists(void);
static int count_loads(struct dl_phdr_info *info, size_t size, void *arg);

#define SYM(field, name) \
	(api.field = (__typeof__(api.field))dlsym(RTLD_DEFAULT, name))

void asyncio_init(int on)
{
	const struct pyabi *a = sampler.abi;
	/* 3.7+: the rows before say no coroutine or closure layout */
	wanted = on && a && a->gen_frame != PYABI_NONE &&
		 a->func_closure != PYABI_NONE;
	if (!wanted)
		return;
	int ok = SYM(modules, "PyImport_GetModuleDict") &&
		 SYM(dict_get, "PyDict_GetItemString") &&
		 SYM(getattr, "PyObject_GetAttrString") &&
		 SYM(fetch, "PyErr_Fetch") && SYM(restore, "PyErr_Restore") &&
		 SYM(clear, "PyErr_Clear") &&
		 SYM(intern, "PyUnicode_InternFromString");
	if (!SYM(finalizing, "Py_IsFinalizing"))
		ok = ok && SYM(finalizing, "_Py_IsFinalizing");
	/* 3.14+ reads its C tasks without the GIL; the registry of the
	 * pure-Python ones is looked up as 3.7-3.13's is, if it can be */
	if (a->asyncio_task_lists) {
		with_gil = ok;
		if (ok)
			threadnames_gil_hook(look_wanted, look_with_gil);
		/* The section in the objects loaded so far (the interpreter,
		 * with _asyncio built in where it is), read from their files
		 * now, before the program runs: an open on the wall thread
		 * took the lowest free number for a moment during the
		 * program's start-up, where a program listing its
		 * descriptors saw it (test_subprocess's test_pass_fds on
		 * 3.15). An _asyncio loaded later is read when it loads. */
		unsigned long long loads = 0;
		dl_iterate_phdr(count_loads, &loads);
		loads_seen = loads;
		find_lists();
		return;
	}
	wanted = ok && a->task_coro > 0 && a->task_fut_waiter > 0 &&
		 a->task_loop > 0 && a->task_context > 0;
	with_gil = wanted;
	if (wanted)
		threadnames_gil_hook(look_wanted, look_with_gil);
}

/* The address and size of section `want` in ELF file path (as linked:
 * add the load bias). 0, or -1. */
static int elf_section(const char *path, const char *want, uint64_t *addr,
		       uint64_t *size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, names;
	int rc = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof sh || eh.e_shstrndx >= eh.e_shnum ||
	    pread(fd, &names, sizeof names,
		  (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof sh)) !=
		    (ssize_t)sizeof names)
		goto out;
	size_t wl = strlen(want) + 1;
	for (unsigned i = 0; i < eh.e_shnum && rc < 0; i++) {
		char name[32];
		if (pread(fd, &sh, sizeof sh, (off_t)(eh.e_shoff + i * sizeof sh)) !=
			    (ssize_t)sizeof sh ||
		    sh.sh_name >= names.sh_size || wl > sizeof name ||
		    pread(fd, name, wl, (off_t)(names.sh_offset + sh.sh_name)) !=
			    (ssize_t)wl)
			continue;
		if (!memcmp(name, want, wl) && sh.sh_addr) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			rc = 0;
		}
	}
out:
	close(fd);
	return rc;
}

/* Takes the offsets if they make sense; 0, or -1. */
static int take_lists(const uint64_t *d)
{
	struct asyncio_abi *x = &asyncio_abi;
	if (d[D_TASK_SIZE] < 64 || d[D_TASK_SIZE] > 4096 ||
	    d[D_TS_SIZE] > (1u << 20) || d[D_INTERP_SIZE] > (1u << 24))
		return -1;
	for (int i = D_TASK_NAME; i <= D_TASK_NODE; i++)
		if (d[i] + 8 > d[D_TASK_SIZE])
			return -1;
	for (int i = D_TS_RUNNING_LOOP; i <= D_TS_TASKS_HEAD; i++)
		if (d[i] + 8 > d[D_TS_SIZE])
			return -1;
	if (d[D_INTERP_TASKS_HEAD] + 16 > d[D_INTERP_SIZE])
		return -1;
	x->task_loop = 16; /* fut_loop, the first field after the header */
	x->task_name = d[D_TASK_NAME];
	x->task_coro = d[D_TASK_CORO];
	/* the context sits between the name and the list node (3.14, 3.15);
	 * if a later layout moves it, tasks go without their labels */
	x->task_context = d[D_TASK_NODE] == d[D_TASK_NAME] + 16
				  ? d[D_TASK_NAME] + 8
				  : 0;
	/* the waiter sits before the coroutine, as in 3.7-3.13's layout;
	 * read only for a C task waited for by pure-Python ones */
	x->task_fut_waiter = d[D_TASK_NAME] == d[D_TASK_CORO] + 8 &&
					     d[D_TASK_CORO] >= 24
				     ? d[D_TASK_CORO] - 8
				     : 0;
	x->task_awaited_by = d[D_TASK_AWAITED_BY];
	x->task_awaited_by_is_set = d[D_TASK_AWAITED_BY_IS_SET];
	x->task_is_task = d[D_TASK_IS_TASK];
	x->task_node = d[D_TASK_NODE];
	x->ts_running_loop = d[D_TS_RUNNING_LOOP];
	x->ts_running_task = d[D_TS_RUNNING_TASK];
	x->ts_tasks_head = d[D_TS_TASKS_HEAD];
	x->interp_tasks_head = d[D_INTERP_TASKS_HEAD];
	return 0;
}

static int seen_before(uintptr_t base)
{
	for (int i = 0; i < n_checked; i++)
		if (checked[i] == base)
			return 1;
	if (n_checked < MAX_CHECKED)
		checked[n_checked++] = base;
	return 0;
}

/* dl_iterate_phdr: how many objects were ever loaded. */
static int count_loads(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* dl_iterate_phdr: whether the _asyncio extension is loaded. */
static int is_asyncio(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	return info->dlpi_name && strstr(info->dlpi_name, "/_asyncio.") != NULL;
}

/* dl_iterate_phdr: the objects that may hold the section, each once. */
static int look_at(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uint64_t *d = arg;
	const char *name = info->dlpi_name;
	int main_program = !name || !*name;
	if (!main_program && !strstr(name, "/_asyncio.") &&
	    !strstr(name, "libpython"))
		return 0;
	if (seen_before((uintptr_t)info->dlpi_addr))
		return 0;
	uint64_t addr, len;
	if (elf_section(main_program ? "/proc/self/exe" : name,
			".AsyncioDebug", &addr, &len) < 0 ||
	    len < D_N * sizeof(uint64_t))
		return 0;
	memcpy(d, (const void *)(uintptr_t)(info->dlpi_addr + addr),
	       D_N * sizeof(uint64_t));
	return 1;
}

static uintptr_t types(const char *name)
{
	return (uintptr_t)dlsym(RTLD_DEFAULT, name);
}

static void take_types(void)
{
	struct asyncio_abi *x = &asyncio_abi;
	x->coro_type = types("PyCoro_Type");
	x->gen_type = types("PyGen_Type");
	x->unicode_type = sampler.str_type; /* &PyUnicode_Type on 3.x */
	x->long_type = types("PyLong_Type");
	x->set_type = types("PySet_Type");
	x->weakref_type = types("_PyWeakref_RefType");
	x->function_type = types("PyFunction_Type");
	x->method_type = types("PyMethod_Type");
	x->cell_type = types("PyCell_Type");
	x->tuple_type = types("PyTuple_Type");
	x->list_type = types("PyList_Type");
	/* 3.14 keeps a tuple's hash before its items */
	x->tuple_items = (uint64_t)sampler.abi->tuple_items;
}

static void find_lists(void)
{
	uint64_t d[D_N];
	if (!dl_iterate_phdr(look_at, d))
		return;
	if (take_lists(d) < 0) {
		plog_info("asyncio: the interpreter's task offsets make no "
			  "sense; no asyncio view");
		wanted = 0;
		return;
	}
	struct asyncio_abi *x = &asyncio_abi;
	take_types();
	if (!x->coro_type || !x->gen_type || !x->unicode_type) {
		wanted = 0;
		return;
	}
	plog_debug("asyncio: tasks from the interpreter's lists");
	__atomic_store_n(&x->kind, ASYNCIO_LISTS, __ATOMIC_RELEASE);
}


/* GIL held: the pure-Python task class (returned, or 0) and its fields'
 * names (interned strings, which CPython keeps for the process's life). */
static uintptr_t take_py_tasks(PyObject *tasks)
{
	static const char *const names[ASYNCIO_PY_N] = {
		[ASYNCIO_PY_LOOP] = "_loop",
		[ASYNCIO_PY_NAME] = "_name",
		[ASYNCIO_PY_CORO] = "_coro",
		[ASYNCIO_PY_CONTEXT] = "_context",
		[ASYNCIO_PY_WAITER] = "_fut_waiter",
		[ASYNCIO_PY_CALLBACKS] = "_callbacks",
	};
	struct asyncio_abi *x = &asyncio_abi;
	if (pydict_layout_init(&x->dict, sampler.abi) < 0)
		return 0;
	x->dict.dict_type = types("PyDict_Type");
	x->dict.str_type = sampler.str_type;
	for (int i = 0; i < ASYNCIO_PY_N; i++) {
		/* an address to compare first; the text is the fallback */
		x->py_keys[i].interned = (uintptr_t)api.intern(names[i]);
		x->py_keys[i].text = names[i];
		x->py_keys[i].len = strlen(names[i]);
	}
	if (!x->dict.dict_type || !x->dict.str_type)
		return 0;
	return (uintptr_t)api.getattr(tasks, "_PyTask");
}

/* GIL held: asyncio's registry, or 0 when asyncio.tasks is not (yet)
 * complete (the names its last lines bind are not there). The error
 * indicator is the caller's. The C task's offsets are SETS' (3.7-3.13). */
static int take_registry(uintptr_t *py_type)
{
	struct asyncio_abi *x = &asyncio_abi;
	int eager_reg = sampler.abi->asyncio_eager_tasks;
	PyObject *mods = api.modules();
	PyObject *tasks = mods ? api.dict_get(mods, "asyncio.tasks") : NULL;
	PyObject *c_mod = mods ? api.dict_get(mods, "_asyncio") : NULL;
	PyObject *functools = mods ? api.dict_get(mods, "functools") : NULL;
	if (!tasks)
		return 0;
	PyObject *task_type = c_mod ? api.getattr(c_mod, "Task") : NULL;
	api.clear();
	/* bound at the end of asyncio.tasks, after its registry is final */
	PyObject *done = api.getattr(tasks, task_type ? "_c_register_task"
						      : "_py_register_task");
	PyObject *reg = api.getattr(tasks, eager_reg ? "_scheduled_tasks"
						     : "_all_tasks");
	PyObject *data = reg ? api.getattr(reg, "data") : NULL;
	PyObject *eager = eager_reg ? api.getattr(tasks, "_eager_tasks") : NULL;
	PyObject *partial = functools ? api.getattr(functools, "partial") : NULL;
	api.clear();
	if (!done || !data || (eager_reg && !eager))
		return 0;
	c_tasks = task_type != NULL;
	if (!sampler.abi->asyncio_task_lists) {
		const struct pyabi *a = sampler.abi;
		x->task_loop = (uint64_t)a->task_loop;
		x->task_fut_waiter = (uint64_t)a->task_fut_waiter;
		x->task_coro = (uint64_t)a->task_coro;
		x->task_name = a->task_name > 0 ? (uint64_t)a->task_name : 0;
		x->task_context = (uint64_t)a->task_context;
		x->task_type = (uintptr_t)task_type;
	}
	x->weak_tasks = (uintptr_t)data;
	x->eager_tasks = (uintptr_t)eager;
	x->partial_type = (uintptr_t)partial;
	*py_type = take_py_tasks(tasks);
	api.clear();
	return 1;
}

/* The wall thread wants a look (atomic); the names thread takes it
 * with the GIL held (threadnames_gil_hook): never the wall thread, which
 * must not wait for the GIL (an import can hold it for half a second).
 * SETS: until the registry is found; LISTS: until the pure-Python
 * tasks' registry is. */
static int want_look;
static int registry_found; /* atomic: written by the names thread */

static int look_wanted(void)
{
	return __atomic_load_n(&want_look, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&registry_found, __ATOMIC_ACQUIRE) &&
	       !api.finalizing();
}

/* Names thread, GIL held. */
static void look_with_gil(void)
{
	struct asyncio_abi *x = &asyncio_abi;
	PyObject *et, *ev, *tb;
	uintptr_t py_type = 0;
	int lists = sampler.abi->asyncio_task_lists;
	api.fetch(&et, &ev, &tb);
	int found = take_registry(&py_type);
	api.restore(et, ev, tb);
	__atomic_store_n(&want_look, 0, __ATOMIC_RELEASE);
	if (!found)
		return;
	__atomic_store_n(&registry_found, 1, __ATOMIC_RELEASE);
	if (!x->coro_type) /* (LISTS took them already) */
		take_types();
	if (!x->coro_type || !x->gen_type || !x->unicode_type ||
	    !x->set_type || !x->weakref_type) {
		wanted = lists; /* LISTS go on without pure-Python tasks */
		return;
	}
	/* pairs with the acquire loads of sig_asyncio.c */
	__atomic_store_n(&x->py_task_type, py_type, __ATOMIC_RELEASE);
	if (lists && (c_tasks || __atomic_load_n(&x->kind, __ATOMIC_ACQUIRE))) {
		plog_debug("asyncio: pure-Python tasks from asyncio's registry");
		return;
	}
	/* 3.14+ without the _asyncio extension: no lists, pure-Python
	 * tasks only, read as 3.7-3.13 read theirs */
	plog_debug("asyncio: tasks from asyncio's registry");
	__atomic_store_n(&x->kind, ASYNCIO_SETS, __ATOMIC_RELEASE);
}

/* Wall thread: asks the names thread for a look, at growing intervals. */
static void find_sets(void)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	if (now < next_look || __atomic_load_n(&want_look, __ATOMIC_ACQUIRE))
		return;
	next_look = now + look_gap;
	if (look_gap < 1000000000ull)
		look_gap *= 2;
	__atomic_store_n(&want_look, 1, __ATOMIC_RELEASE);
	threadnames_request();
}

/* Whether the wall thread may look at frames for an event loop: no
 * _asyncio extension (3.14+: no lists) seen yet, so that a program whose
 * asyncio is pure Python is found by its loop's frames (loop_seen). */
static int hint_wanted; /* atomic */

int asyncio_hint_wanted(void)
{
	return __atomic_load_n(&hint_wanted, __ATOMIC_RELAXED);
}

/* Every tick until found: a look at the loader's count of loaded objects,
 * and a search when it changed (the _asyncio extension is loaded by
 * `import asyncio`); SETS then looks again at most once a second until
 * asyncio.tasks is complete. 3.14+ then does the same for the registry
 * of pure-Python tasks. */
void asyncio_poll(void)
{
	unsigned long long loads = 0;
	static int looking; /* a load was seen, the registry not yet */
	int kind = __atomic_load_n(&asyncio_abi.kind, __ATOMIC_ACQUIRE);
	int lists = sampler.abi && sampler.abi->asyncio_task_lists;
	int found = __atomic_load_n(&registry_found, __ATOMIC_ACQUIRE);
	if (!wanted || kind == ASYNCIO_SETS || (found && kind))
		return;
	if (kind == ASYNCIO_LISTS) {
		/* its pure-Python tasks' registry, once a loop runs (a
		 * program that never starts one is never asked): one in the
		 * thread state, or (no _asyncio) one in the frames */
		int seen = __atomic_load_n(&asyncio_abi.loop_seen,
					   __ATOMIC_RELAXED);
		__atomic_store_n(&hint_wanted, with_gil && !seen,
				 __ATOMIC_RELAXED);
		if (with_gil && seen)
			find_sets();
		return;
	}
	dl_iterate_phdr(count_loads, &loads);
	if (loads != loads_seen) {
		loads_seen = loads;
		if (lists)
			find_lists();
		else if (!looking)
			looking = dlsym(RTLD_DEFAULT, "PyInit__asyncio") ||
				  dl_iterate_phdr(is_asyncio, NULL);
	}
	/* no extension (3.14+: no lists), but an event loop runs */
	if (!looking)
		looking = __atomic_load_n(&asyncio_abi.loop_seen,
					  __ATOMIC_RELAXED);
	__atomic_store_n(&hint_wanted, !looking, __ATOMIC_RELAXED);
	if (looking && with_gil && !found &&
	    !__atomic_load_n(&asyncio_abi.kind, __ATOMIC_ACQUIRE))
		find_sets();
}
