/*
 * interpose/latebind.c - block and mutex profiles in a process the library
 * entered late (`pyprof attach`, PEP 768: dlopen into a running
 * interpreter).
 *
 * A dlopen'd library interposes nothing: the lookup scope puts the
 * program and libc before it. CPython calls sem_wait, sem_clockwait,
 * sem_post, pthread_cond_timedwait and pthread_cond_signal through its
 * PLT, that is through a slot of its GOT that the dynamic linker filled
 * with libc's address (at the first call, or at start with BIND_NOW).
 * Writing our wrapper's address into those slots gives the wrappers of
 * interpose/waits.c every call made after, as a preloaded library gets
 * them: off, each is one load and branch more than libc; on, timed.
 *
 * Which slots: those of the program and of a libpython (where CPython's
 * locks and GIL live), of relocation type JUMP_SLOT (a call through the
 * PLT) or GLOB_DAT (a call through the GOT, -fno-plt), whose symbol is an
 * import of one of the six names, and whose value is libc's definition
 * the wrapper calls on, or, not bound yet, an address inside the object
 * itself (its PLT), where the slot's version must be the one the wrapper
 * calls (the condition variables' GLIBC_2.3.2). A slot bound to anything
 * else (another interposer) is left alone. A slot in the read-only part
 * after relocation (RELRO) is made writable for the store and read-only
 * again. Each store is one aligned pointer: a thread calling through the
 * slot meanwhile gets libc or the wrapper, both right.
 *
 * Not covered: a slot that the dynamic linker binds for the first time
 * at the very moment we write it may keep libc's address (its store
 * comes after ours); objects loaded after the attach. The wrappers stay:
 * the library is never unloaded.
 *
 * Contexts: once, after the first late start, on agent/attach.c's start
 * thread (the script's thread with native stacks), while the program's
 * threads run; never in signal context (Makefile: SIGSAFE_NOT).
 */
#include "latebind.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"

#define LATEBIND_FNS 8

struct latebind_ctx {
	struct latebind_fn fns[LATEBIND_FNS];
	int n_fns;
	int n_done;   /* slots rewritten          */
	int n_other;  /* slots bound elsewhere    */
	int n_object; /* objects looked at        */
};

/* The dynamic section's pointers: relocated in place by the dynamic
 * linker on most targets, not on all; either way an address. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

/* Non-zero if addr lies in one of the object's loaded segments. */
static int in_object(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= lo &&
		    addr < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* The RELRO range of the object, [*lo, *hi), or 0 if it has none. */
static int relro_of(const struct dl_phdr_info *info, uintptr_t *lo,
		    uintptr_t *hi)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO) {
			*lo = info->dlpi_addr + ph->p_vaddr;
			*hi = *lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

struct dyn_tables {
	const ElfW(Sym) * symtab;
	const char *strtab;
	const ElfW(Half) * versym;
	const ElfW(Verneed) * verneed;
	const ElfW(Rela) * rel[2]; /* PLT relocations, the others */
	size_t rel_len[2];	   /* bytes                       */
};

static int read_dynamic(const struct dl_phdr_info *info, struct dyn_tables *t)
{
	const ElfW(Dyn) *dyn = NULL;
	int rela_plt = 0;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
						  info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return -1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			t->symtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			t->strtab = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_VERSYM:
			t->versym = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_VERNEED:
			t->verneed = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_JMPREL:
			t->rel[0] = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			t->rel_len[0] = dyn->d_un.d_val;
			break;
		case DT_PLTREL:
			rela_plt = dyn->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			t->rel[1] = (const void *)dyn_addr(info, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			t->rel_len[1] = dyn->d_un.d_val;
			break;
		}
	}
	if (!rela_plt)
		t->rel[0] = NULL, t->rel_len[0] = 0;
	return t->symtab && t->strtab ? 0 : -1;
}

/* The version symbol sym asks for ("GLIBC_2.3.2"), or NULL. */
static const char *version_of(const struct dyn_tables *t, size_t sym)
{
	const ElfW(Verneed) *vn = t->verneed;
	ElfW(Half) want;

	if (!t->versym || !vn)
		return NULL;
	want = t->versym[sym] & 0x7fff;
	for (;;) {
		const ElfW(Vernaux) *va =
			(const void *)((const char *)vn + vn->vn_aux);
		for (unsigned i = 0; i < vn->vn_cnt; i++) {
			if (va->vna_other == want)
				return t->strtab + va->vna_name;
			va = (const void *)((const char *)va + va->vna_next);
		}
		if (!vn->vn_next)
			return NULL;
		vn = (const void *)((const char *)vn + vn->vn_next);
	}
}

/* Stores shim in *slot, through a writable mapping if it is on a page
 * the dynamic linker made read-only: those of RELRO from its start's
 * page to its end rounded down (the last, partial page stays writable,
 * and other data on it is written: it must not become read-only). */
static int store_slot(const struct dl_phdr_info *info, void **slot,
		      void *shim)
{
	uintptr_t lo, hi, a = (uintptr_t)slot;
	uintptr_t mask = ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
	long page = sysconf(_SC_PAGESIZE);

	if (relro_of(info, &lo, &hi) && a >= (lo & mask) && a < (hi & mask)) {
		void *p = (void *)(a & mask);
		if (mprotect(p, (size_t)page, PROT_READ | PROT_WRITE) < 0)
			return -1;
		__atomic_store_n(slot, shim, __ATOMIC_RELEASE);
		mprotect(p, (size_t)page, PROT_READ);
		return 0;
	}
	__atomic_store_n(slot, shim, __ATOMIC_RELEASE);
	return 0;
}

static void patch_rel(const struct dl_phdr_info *info,
		      const struct dyn_tables *t, const ElfW(Rela) * rel,
		      size_t len, struct latebind_ctx *c)
{
	for (size_t k = 0; k < len / sizeof(*rel); k++) {
		unsigned type = ELF64_R_TYPE(rel[k].r_info);
		size_t sym = ELF64_R_SYM(rel[k].r_info);
		const ElfW(Sym) *s = &t->symtab[sym];
		const char *name;
		void **slot;
		void *cur;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !sym || s->st_shndx != SHN_UNDEF)
			continue;
		name = t->strtab + s->st_name;
		for (int f = 0; f < c->n_fns; f++) {
			const struct latebind_fn *fn = &c->fns[f];
			const char *v;
			if (strcmp(name, fn->name))
				continue;
			slot = (void **)(info->dlpi_addr + rel[k].r_offset);
			cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
			if (cur == fn->shim)
				break; /* an earlier attach's */
			if (cur != fn->libc &&
			    !(in_object(info, (uintptr_t)cur) &&
			      (!fn->version ||
			       ((v = version_of(t, sym)) &&
				!strcmp(v, fn->version))))) {
				c->n_other++;
				break;
			}
			if (store_slot(info, slot, fn->shim) == 0)
				c->n_done++;
			break;
		}
	}
}

/* The program (the first object, named "") and any libpython. */
static int wanted(const struct dl_phdr_info *info, int first)
{
	const char *base = strrchr(info->dlpi_name, '/');

	if (first)
		return 1;
	base = base ? base + 1 : info->dlpi_name;
	return strncmp(base, "libpython", 9) == 0;
}

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct latebind_ctx *c = arg;
	struct dyn_tables t;
	int first = c->n_object++ == 0;

	(void)size;
	if (!wanted(info, first) || read_dynamic(info, &t) < 0)
		return 0;
	for (int i = 0; i < 2; i++)
		if (t.rel[i])
			patch_rel(info, &t, t.rel[i], t.rel_len[i], c);
	return 0;
}

int latebind_waits(void)
{
	struct latebind_ctx c = { 0 };

	c.n_fns = waits_latebind_fns(c.fns, LATEBIND_FNS);
	dl_iterate_phdr(each_object, &c);
	plog_info("waits: %d of the program's calls to libc's locks now reach "
		  "pyprof (%d bound elsewhere, left alone)",
		  c.n_done, c.n_other);
	return c.n_done;
}
