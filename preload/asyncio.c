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
 */
#include "asyncio.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sampler.h"

#define MAX_CHECKED 32

/* struct _Py_AsyncioModuleDebugOffsets (3.14, 3.15): 13 uint64_t */
enum {
	D_TASK_SIZE, D_TASK_NAME, D_TASK_AWAITED_BY, D_TASK_IS_TASK,
	D_TASK_AWAITED_BY_IS_SET, D_TASK_CORO, D_TASK_NODE,
	D_INTERP_SIZE, D_INTERP_TASKS_HEAD,
	D_TS_SIZE, D_TS_RUNNING_LOOP, D_TS_RUNNING_TASK, D_TS_TASKS_HEAD,
	D_N
};

static int wanted;
static unsigned long long loads_seen = ~0ull; /* dlpi_adds last scanned */
static uintptr_t checked[MAX_CHECKED]; /* objects looked at, by base */
static int n_checked;

void asyncio_init(int on)
{
	const struct pyabi *a = sampler.abi;
	wanted = on && a && a->major == 3 && a->minor >= 14 &&
		 a->gen_frame != PYABI_NONE;
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
	x->coro_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCoro_Type");
	x->gen_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyGen_Type");
	x->unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	x->long_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyLong_Type");
	x->set_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PySet_Type");
	if (!x->coro_type || !x->gen_type || !x->unicode_type) {
		wanted = 0;
		return;
	}
	plog_debug("asyncio: tasks from the interpreter's lists");
	__atomic_store_n(&x->kind, ASYNCIO_LISTS, __ATOMIC_RELEASE);
}

/* Every tick until found; a scan only when an object was loaded since
 * the last one (the _asyncio extension is loaded by `import asyncio`). */
void asyncio_poll(void)
{
	unsigned long long loads = 0;
	if (!wanted || __atomic_load_n(&asyncio_abi.kind, __ATOMIC_ACQUIRE))
		return;
	dl_iterate_phdr(count_loads, &loads);
	if (loads == loads_seen)
		return;
	loads_seen = loads;
	find_lists();
}
