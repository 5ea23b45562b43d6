/*
 * objects.c - see objects.h. Agent thread and constructor only.
 */
#include "objects.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static int read_gen(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objects_gen *g = arg;
	if (size < offsetof(struct dl_phdr_info, dlpi_subs) +
			   sizeof info->dlpi_subs)
		return -1;
	g->adds = info->dlpi_adds;
	g->subs = info->dlpi_subs;
	return 1; /* the counters are the same in every entry */
}

int objects_gen(struct objects_gen *g)
{
	*g = (struct objects_gen){ 0, 0 };
	return dl_iterate_phdr(read_gen, g) == 1 ? 0 : -ENOTSUP;
}

int objects_gen_current(const struct objects_gen *built,
			const struct objects_gen *now, int now_rc)
{
	return now_rc == 0 && built->adds == now->adds &&
	       built->subs == now->subs;
}

struct scan {
	int (*fn)(const struct object_seg *s, void *arg);
	void *arg;
};

static int each_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct scan *sc = arg;
	int index = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    !ph->p_memsz)
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		struct object_seg s = { info, index++, lo, lo + ph->p_memsz,
					ph->p_offset };
		int rc = sc->fn(&s, sc->arg);
		if (rc == OBJECTS_NEXT_OBJECT)
			return 0;
		if (rc == OBJECTS_STOP)
			return 1;
	}
	return 0;
}

void objects_scan(int (*fn)(const struct object_seg *s, void *arg),
		  void *arg)
{
	struct scan sc = { fn, arg };
	dl_iterate_phdr(each_object, &sc);
}

struct owner_query {
	uint64_t addr;
	struct dl_phdr_info *info;
};

static int holds_addr(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct owner_query *q = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && q->addr >= lo &&
		    q->addr < lo + ph->p_memsz) {
			memcpy(q->info, info,
			       size < sizeof *info ? size : sizeof *info);
			return 1;
		}
	}
	return 0;
}

int objects_owner(uint64_t addr, struct dl_phdr_info *info)
{
	struct owner_query q = { addr, info };
	memset(info, 0, sizeof *info);
	return dl_iterate_phdr(holds_addr, &q) == 1 ? 0 : -ENOENT;
}
