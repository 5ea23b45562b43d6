/*
 * interp_text.c - see interp_text.h. The table is written once by the
 * constructor, before any timer exists, and only read afterwards (in
 * signal context too).
 */
#include "native/interp_text.h"

#include <errno.h>
#include <link.h>
#include <string.h>

#define MAPS_MAX 16

static struct {
	uintptr_t lo, hi;
} ranges[MAPS_MAX];
static int n_ranges;

struct scan {
	uintptr_t sym;      /* an address inside libpython's code     */
	uintptr_t py_bias;  /* load bias of the object that holds it  */
	int found;
};

/* Pass 1: which object holds the symbol. */
static int find_owner(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scan *s = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && s->sym >= lo &&
		    s->sym < lo + ph->p_memsz) {
			s->py_bias = info->dlpi_addr;
			s->found = 1;
			return 1;
		}
	}
	return 0;
}

/* Pass 2: the executable segments of that object and of the main
 * program (the first object listed, with an empty name). */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const struct scan *s = arg;
	static int seen_first;
	int is_main = !seen_first;
	seen_first = 1;
	if (!is_main && info->dlpi_addr != s->py_bias)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && n_ranges < MAPS_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		ranges[n_ranges].lo = info->dlpi_addr + ph->p_vaddr;
		ranges[n_ranges].hi = ranges[n_ranges].lo + ph->p_memsz;
		n_ranges++;
	}
	return 0;
}

int interp_text_init(const void *py_symbol)
{
	struct scan s = {(uintptr_t)py_symbol, 0, 0};
	n_ranges = 0;
	dl_iterate_phdr(find_owner, &s);
	if (!s.found)
		return -ENOENT;
	dl_iterate_phdr(collect, &s);
	return n_ranges ? 0 : -ENOENT;
}

int interp_text_contains_sigsafe(uintptr_t pc)
{
	if (!n_ranges)
		return -1;
	for (int i = 0; i < n_ranges; i++)
		if (pc >= ranges[i].lo && pc < ranges[i].hi)
			return 1;
	return 0;
}
