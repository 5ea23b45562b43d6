/*
 * native.c - see native.h. native_init runs in the constructor, before any
 * other thread of ours exists; its tables are read-only afterwards (the
 * agent classifies PCs against them without locking).
 */
#include "native.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "base/config.h"
#include "base/log.h"
#include "interp_text.h"
#include "objects.h"
#include "base/sampler.h"
#include "pyprof/x86jump.h"

#define NATIVE_RANGES 8
#define SYMTAB_MAX_BYTES (256u << 20) /* .symtab + .strtab read at most */

struct range {
	uint64_t lo, hi;
};

static struct range eval_r[NATIVE_RANGES], self_r[NATIVE_RANGES];
static int n_eval, n_self;

static void add_range(struct range *r, int *n, uint64_t lo, uint64_t hi)
{
	if (*n < NATIVE_RANGES && lo < hi)
		r[(*n)++] = (struct range){ lo, hi };
}

static int in_ranges(const struct range *r, int n, uint64_t pc)
{
	for (int i = 0; i < n; i++)
		if (pc >= r[i].lo && pc < r[i].hi)
			return 1;
	return 0;
}

/* ---- the object that holds an address ---------------------------------- */

struct owner {
	uint64_t addr;	 /* in */
	uint64_t bias;	 /* out: load bias */
	char path[4096]; /* out: its file ("" if unknown) */
	const ElfW(Phdr) * phdr;
	int phnum;
	int found;
};

/* Fills o (o->addr set) from the loaded object that holds o->addr. */
static void find_owner(struct owner *o)
{
	struct dl_phdr_info info;
	if (objects_owner(o->addr, &info) < 0)
		return;
	o->bias = info.dlpi_addr;
	o->phdr = info.dlpi_phdr;
	o->phnum = info.dlpi_phnum;
	o->found = 1;
	const char *name = info.dlpi_name;
	if (!name || !name[0]) { /* the main program */
		ssize_t n = readlink("/proc/self/exe", o->path,
				     sizeof o->path - 1);
		o->path[n > 0 ? n : 0] = 0;
	} else {
		strncpy(o->path, name, sizeof o->path - 1);
	}
}

/* ---- out-of-line parts of a function, from the file's .symtab ---------- */

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done,
				  (off_t)(off + done));
		if (r <= 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

/*
 * Adds to the eval ranges every function symbol of the file at path named
 * "<name>.<suffix>" (GCC's .cold, .part.N, .isra.N, .constprop.N),
 * relocated by bias. A file without .symtab adds nothing. ELF64 only.
 */
static void add_split_parts(const char *path, uint64_t bias, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ElfW(Shdr) *sh = NULL;
	char *strs = NULL;
	ElfW(Sym) *syms = NULL;
	ElfW(Ehdr) eh;
	struct stat st;
	size_t name_len = strlen(name);

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    pread_all(fd, &eh, sizeof eh, 0) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 ||
	    eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(ElfW(Shdr)) >
		    (uint64_t)st.st_size)
		goto out;
	sh = malloc((size_t)eh.e_shnum * sizeof *sh);
	if (!sh || pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh,
			     eh.e_shoff) < 0)
		goto out;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum ||
		    sh[i].sh_entsize != sizeof(ElfW(Sym)))
			continue;
		const ElfW(Shdr) *ss = &sh[i], *sst = &sh[ss->sh_link];
		if (ss->sh_size > SYMTAB_MAX_BYTES ||
		    sst->sh_size > SYMTAB_MAX_BYTES || sst->sh_size == 0 ||
		    ss->sh_offset + ss->sh_size > (uint64_t)st.st_size ||
		    sst->sh_offset + sst->sh_size > (uint64_t)st.st_size)
			break;
		syms = malloc(ss->sh_size);
		strs = malloc(sst->sh_size + 1);
		if (!syms || !strs ||
		    pread_all(fd, syms, ss->sh_size, ss->sh_offset) < 0 ||
		    pread_all(fd, strs, sst->sh_size, sst->sh_offset) < 0)
			break;
		strs[sst->sh_size] = 0;
		size_t n = ss->sh_size / sizeof(ElfW(Sym));
		for (size_t k = 0; k < n; k++) {
			const ElfW(Sym) *y = &syms[k];
			if (ELF64_ST_TYPE(y->st_info) != STT_FUNC ||
			    !y->st_value || y->st_name >= sst->sh_size)
				continue;
			const char *s = strs + y->st_name;
			if (strncmp(s, name, name_len) || s[name_len] != '.')
				continue;
			add_range(eval_r, &n_eval, bias + y->st_value,
				  bias + y->st_value + y->st_size);
			plog_debug("native: eval loop part %s at %#lx+%lu", s,
				   (unsigned long)(bias + y->st_value),
				   (unsigned long)y->st_size);
		}
		break;
	}
out:
	free(syms);
	free(strs);
	free(sh);
	if (fd >= 0)
		close(fd);
}

/* ---- out-of-line parts of a function, from its own jumps ----------------- */

/*
 * Without .symtab (a stripped executable, like Debian's static pythonX.Y)
 * the parts GCC moves out of a function (hot/cold partitioning: on Debian
 * sid's 3.14 and 3.15 most of _PyEval_EvalFrameDefault's body is such a
 * part, entered by a conditional jump from its first bytes) have no name.
 * They are found from the code: every near jump (0F 8x rel32, E9 rel32) in
 * the function's own extent [lo, hi) whose target is outside it, is the
 * exact start of an unwind-table entry (an FDE in .eh_frame_hdr, whose
 * sorted table also bounds the part: up to the next FDE) and is not the
 * start of an exported function (a tail call) is taken as a part. A byte
 * pair decoded out of phase would have to hit an FDE start exactly to
 * count. The object's memory is its own mapped code and tables.
 */
static void add_jumped_parts(const struct owner *o, uint64_t lo, uint64_t hi)
{
	const ElfW(Phdr) *eh = NULL;
	for (int i = 0; i < o->phnum; i++)
		if (o->phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &o->phdr[i];
	if (!eh || hi - lo < 6)
		return;
	const uint8_t *hdr = (const uint8_t *)(uintptr_t)(o->bias + eh->p_vaddr);
	/* version 1; table of (sdata4 datarel start, sdata4 datarel fde) */
	if (hdr[0] != 1 || hdr[3] != 0x3b)
		return;
	/* eh_frame_ptr (4 bytes with GCC's pcrel sdata4), then the count */
	if (hdr[1] != 0x1b || hdr[2] != 0x03)
		return;
	uint32_t count;
	memcpy(&count, hdr + 8, 4);
	const uint8_t *tab = hdr + 12;
	const uint8_t *code = (const uint8_t *)(uintptr_t)lo;
	for (uint64_t i = 0; i + 6 <= hi - lo; i++) {
		uint64_t target;
		if (!x86_rel32_jump(code, i, hi - lo, lo, &target))
			continue;
		if (target >= lo && target < hi)
			continue;
		/* binary search for an FDE starting exactly at target */
		uint32_t a = 0, b = count;
		while (a < b) {
			uint32_t m = a + (b - a) / 2;
			int32_t loc;
			memcpy(&loc, tab + (uint64_t)m * 8, 4);
			uint64_t start = (uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)loc;
			if (start < target)
				a = m + 1;
			else
				b = m;
		}
		int32_t loc;
		if (a >= count)
			continue;
		memcpy(&loc, tab + (uint64_t)a * 8, 4);
		if ((uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)loc != target)
			continue;
		Dl_info di;
		if (dladdr((void *)(uintptr_t)target, &di) && di.dli_saddr &&
		    (uint64_t)(uintptr_t)di.dli_saddr == target)
			continue; /* an exported function: a tail call */
		uint64_t end = hi > target ? hi : target + 1;
		if (a + 1 < count) {
			memcpy(&loc, tab + (uint64_t)(a + 1) * 8, 4);
			end = (uint64_t)(uintptr_t)hdr + (uint64_t)(int64_t)loc;
		} else {
			continue; /* the last FDE: no bound */
		}
		if (in_ranges(eval_r, n_eval, target))
			continue;
		add_range(eval_r, &n_eval, target, end);
		plog_debug("native: eval loop part at %#lx+%lu (jumped to from "
			   "its entry)",
			   (unsigned long)target,
			   (unsigned long)(end - target));
	}
}

/* A thread's cfi cache goes with the thread: unpublished first, so that a
 * late signal sees none. */
static pthread_key_t cache_key;
static int cache_key_ok;

static void cache_free(void *p)
{
	cfi_thread_cache = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	munmap(p, CFI_CACHE_SLOTS * sizeof(struct cfi_slot));
}

/* ---- set-up -------------------------------------------------------------- */

static int find_eval(const char *name)
{
	void *sym = dlsym(RTLD_DEFAULT, name);
	Dl_info di;
	const ElfW(Sym) *es = NULL;
	static struct owner o; /* 4 KiB path: not on the stack */

	if (!sym || !dladdr1(sym, &di, (void **)&es, RTLD_DL_SYMENT) || !es ||
	    !es->st_size) {
		plog_always("PYPROF_NATIVE: cannot find the extent of %s; "
			    "native stacks are off",
			    name);
		return -ENOENT;
	}
	add_range(eval_r, &n_eval, (uint64_t)(uintptr_t)sym,
		  (uint64_t)(uintptr_t)sym + es->st_size);
	memset(&o, 0, sizeof o);
	o.addr = (uint64_t)(uintptr_t)sym;
	find_owner(&o);
	if (o.found && o.path[0] == '/')
		add_split_parts(o.path, o.bias, name);
	if (o.found && n_eval == 1) /* no .symtab: find the parts by code */
		add_jumped_parts(&o, (uint64_t)(uintptr_t)sym,
				 (uint64_t)(uintptr_t)sym + es->st_size);
	return 0;
}

static void find_self(void)
{
	static struct owner o;
	memset(&o, 0, sizeof o);
	o.addr = (uint64_t)(uintptr_t)&find_self;
	find_owner(&o);
	for (int i = 0; o.found && i < o.phnum; i++)
		if (o.phdr[i].p_type == PT_LOAD && (o.phdr[i].p_flags & PF_X))
			add_range(self_r, &n_self, o.bias + o.phdr[i].p_vaddr,
				  o.bias + o.phdr[i].p_vaddr +
					  o.phdr[i].p_memsz);
}

/* libunwind's code, for native_in_libunwind_sigsafe (written once, by
 * native_init, before anything can call the wrappers that read it). */
static uint64_t unw_lo, unw_hi;

static void find_libunwind(void *bt)
{
	struct dl_phdr_info info;
	if (objects_owner((uint64_t)(uintptr_t)bt, &info) < 0)
		return;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info.dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info.dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uint64_t a = info.dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (lo < hi) {
		__atomic_store_n(&unw_lo, lo, __ATOMIC_RELAXED);
		__atomic_store_n(&unw_hi, hi, __ATOMIC_RELEASE);
	}
}

int native_in_libunwind_sigsafe(const void *pc)
{
	uint64_t hi = __atomic_load_n(&unw_hi, __ATOMIC_ACQUIRE);
	uint64_t p = (uint64_t)(uintptr_t)pc;
	return hi && p >= __atomic_load_n(&unw_lo, __ATOMIC_RELAXED) &&
	       p < hi;
}

int native_init(int mode, const char *eval_frame)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	void *bt = h ? dlsym(h, "unw_backtrace") : NULL;
	if (!bt) {
		plog_always("PYPROF_NATIVE: cannot load libunwind.so.8 (%s); "
			    "sampling without native stacks (Debian: apt-get "
			    "install libunwind8)",
			    h ? "no unw_backtrace" : dlerror());
		if (h)
			dlclose(h);
		return -ENOENT;
	}
	if (!eval_frame || find_eval(eval_frame) < 0) {
		dlclose(h);
		return -ENOENT;
	}
	find_self();
	find_libunwind(bt); /* before its first call opens its pipe */
	cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0;
	sampler.unw_backtrace = (int (*)(void **, int))bt;
	sampler.native = mode;
	native_prepare_thread();
	plog_info("native stacks on (%s), eval loop in %d range(s)",
		  mode == CONFIG_NATIVE_ALL ? "all frames" : "merged", n_eval);
	return 0;
}

void native_prepare_thread(void)
{
	void *buf[4];
	if (!sampler.native || sampler_native_ready)
		return;
	sampler.unw_backtrace(buf, 4);
	void *c = mmap(NULL, CFI_CACHE_SLOTS * sizeof(struct cfi_slot),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (c != MAP_FAILED) {
		if (cache_key_ok && pthread_setspecific(cache_key, c) != 0) {
			munmap(c, CFI_CACHE_SLOTS * sizeof(struct cfi_slot));
		} else {
			cfi_thread_cache = c;
		}
	}
	sampler_native_ready = 1;
}

void native_fork_prepare(void)
{
	if (!sampler.native)
		return;
	/* pairs with the handler's seq_cst increment, then load */
	__atomic_store_n(&sampler.forking, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 1000 &&
			__atomic_load_n(&sampler.in_libunwind, __ATOMIC_SEQ_CST);
	     i++) {
		struct timespec d = { 0, 50000 };
		nanosleep(&d, NULL);
	}
}

void native_fork_done(void)
{
	if (sampler.native)
		__atomic_store_n(&sampler.forking, 0, __ATOMIC_RELEASE);
}

int native_classify(uint64_t pc, int exact)
{
	if (!exact)
		pc--; /* a return address: the call is just before it */
	if (in_ranges(self_r, n_self, pc))
		return MERGE_SELF;
	if (in_ranges(eval_r, n_eval, pc))
		return MERGE_EVAL;
	return interp_text_contains_sigsafe(pc) == 1 ? MERGE_INTERP : MERGE_OTHER;
}
