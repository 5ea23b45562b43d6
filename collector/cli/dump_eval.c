/*
 * dump_eval.c - where the eval loop is in the interpreter's file, for
 * dump_native.c's merge (`pyprof dump PID --native`).
 *
 * The eval loop's extent in the file's own addresses: the function
 * _PyEval_EvalFrameDefault, and, in a file without .symtab (Debian's
 * static pythonX.Y: GCC's hot/cold split moves most of the function out of
 * it, unnamed), each out-of-line part, found as the library's native.c
 * finds it in memory: a near jump (0F 8x rel32, E9 rel32) from the
 * function's extent to outside it that lands exactly on the start of an
 * FDE of .eh_frame_hdr which is not an exported function's start (a tail
 * call); the part ends at the next FDE. (With .symtab the parts have names,
 * "_PyEval_EvalFrameDefault.cold", matched by name.) Read with pread from
 * the file, every offset checked.
 *
 * Single-threaded, in the pyprof process.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/attach.h"
#include "pyprof/x86jump.h"


static void *read_at(int fd, uint64_t off, uint64_t len, uint64_t fsize)
{
	void *p;

	if (off > fsize || len > fsize - off || len > (256u << 20))
		return NULL;
	p = malloc(len ? len : 1);
	if (p && pread(fd, p, len, (off_t)off) != (ssize_t)len) {
		free(p);
		p = NULL;
	}
	return p;
}

/* The file offset of vaddr through the PT_LOAD headers, or -1. */
static int64_t vaddr_off(const Elf64_Phdr *ph, int n, uint64_t va)
{
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr &&
		    va < ph[i].p_vaddr + ph[i].p_filesz)
			return (int64_t)(va - ph[i].p_vaddr + ph[i].p_offset);
	return -1;
}

static void eval_scan(struct dump_eval *ev, int fd, uint64_t fsize,
		      const Elf64_Phdr *ph, int nph, uint64_t lo, uint64_t hi,
		      const Elf64_Sym *dsym, uint64_t n_dsym)
{
	const Elf64_Phdr *eh = NULL;
	uint8_t *hdr = NULL, *code = NULL;
	int64_t code_off;
	uint32_t count;

	for (int i = 0; i < nph; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME)
			eh = &ph[i];
	code_off = vaddr_off(ph, nph, lo);
	if (!eh || code_off < 0 || hi - lo < 6 ||
	    !(hdr = read_at(fd, eh->p_offset, eh->p_filesz, fsize)) ||
	    eh->p_filesz < 12 || hdr[0] != 1 || hdr[1] != 0x1b ||
	    hdr[2] != 0x03 || hdr[3] != 0x3b)
		goto out;
	memcpy(&count, hdr + 8, 4);
	if ((uint64_t)count * 8 > eh->p_filesz - 12)
		goto out;
	code = read_at(fd, (uint64_t)code_off, hi - lo, fsize);
	for (uint64_t i = 0; code && i + 6 <= hi - lo && ev->n < DUMP_EVAL_MAX;
	     i++) {
		uint64_t target, end;
		uint32_t a = 0, b = count;
		int32_t loc;
		int exported = 0;

		if (!x86_rel32_jump(code, i, hi - lo, lo, &target))
			continue;
		if (target >= lo && target < hi)
			continue;
		while (a < b) { /* the first FDE starting at or after target */
			uint32_t m = a + (b - a) / 2;

			memcpy(&loc, hdr + 12 + (uint64_t)m * 8, 4);
			if (eh->p_vaddr + (uint64_t)(int64_t)loc < target)
				a = m + 1;
			else
				b = m;
		}
		if (a + 1 >= count)
			continue;
		memcpy(&loc, hdr + 12 + (uint64_t)a * 8, 4);
		if (eh->p_vaddr + (uint64_t)(int64_t)loc != target)
			continue;
		memcpy(&loc, hdr + 12 + (uint64_t)(a + 1) * 8, 4);
		end = eh->p_vaddr + (uint64_t)(int64_t)loc;
		for (uint64_t k = 0; k < n_dsym && !exported; k++)
			exported = dsym[k].st_value == target &&
				   dsym[k].st_shndx != SHN_UNDEF;
		for (int k = 0; k < ev->n && !exported; k++)
			exported = ev->lo[k] == target; /* seen */
		if (exported)
			continue;
		ev->lo[ev->n] = target;
		ev->hi[ev->n] = end;
		ev->n++;
	}
out:
	free(code);
	free(hdr);
}

/* Fills ev for the file at path (ev->n 0: no eval loop in it). */
void dump_eval_find(struct dump_eval *ev, const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Phdr *ph = NULL;
	Elf64_Sym *dsym = NULL;
	uint64_t n_dsym = 0, fsize;
	int has_symtab = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ev->n = 0;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof eh ||
	    pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof *sh || eh.e_phentsize != sizeof *ph)
		goto out;
	fsize = (uint64_t)st.st_size;
	sh = read_at(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof *sh, fsize);
	ph = read_at(fd, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof *ph, fsize);
	if (!sh || !ph)
		goto out;
	for (int i = 0; i < eh.e_shnum; i++)
		has_symtab |= sh[i].sh_type == SHT_SYMTAB;
	for (int i = 0; i < eh.e_shnum; i++) {
		Elf64_Sym *sym;
		char *str;
		uint64_t n;

		if ((sh[i].sh_type != SHT_DYNSYM &&
		     sh[i].sh_type != SHT_SYMTAB) ||
		    sh[i].sh_link >= eh.e_shnum)
			continue;
		n = sh[i].sh_size / sizeof *sym;
		sym = read_at(fd, sh[i].sh_offset, n * sizeof *sym, fsize);
		str = read_at(fd, sh[sh[i].sh_link].sh_offset,
			      sh[sh[i].sh_link].sh_size, fsize);
		for (uint64_t k = 0; sym && str && k < n && ev->n < DUMP_EVAL_MAX;
		     k++) {
			uint32_t nm = sym[k].st_name;
			const char *name = str + nm;

			if (nm >= sh[sh[i].sh_link].sh_size ||
			    !memchr(name, 0, sh[sh[i].sh_link].sh_size - nm) ||
			    ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
			    strcmp(name, "_PyEval_EvalFrameDefault") ||
			    !sym[k].st_size)
				continue;
			ev->lo[ev->n] = sym[k].st_value;
			ev->hi[ev->n] = sym[k].st_value + sym[k].st_size;
			ev->n++;
			break;
		}
		free(str);
		if (sh[i].sh_type == SHT_DYNSYM && !dsym) {
			dsym = sym;
			n_dsym = sym ? n : 0;
		} else {
			free(sym);
		}
	}
	if (ev->n && !has_symtab)
		eval_scan(ev, fd, fsize, ph, eh.e_phnum, ev->lo[0], ev->hi[0],
			  dsym, n_dsym);
out:
	free(dsym);
	free(ph);
	free(sh);
	if (fd >= 0)
		close(fd);
}

int dump_eval_contains(const struct dump_eval *ev, uint64_t vaddr)
{
	for (int i = 0; i < ev->n; i++)
		if (vaddr >= ev->lo[i] && vaddr < ev->hi[i])
			return 1;
	return 0;
}
