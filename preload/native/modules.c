/*
 * modules.c - see modules.h. Agent thread only.
 *
 * A /proc/self/maps line and what becomes of it, for a library mapped at
 * 0x7f3a1c000000 whose text segment starts 0x1000 into the file:
 *
 *     7f3a1c001000-7f3a1c0a3000 r-xp 00001000 08:01 1234 /usr/lib/libz.so.1.2.13
 *
 * is the segment {lo 0x7f3a1c001000, hi 0x7f3a1c0a3000, offset 0x1000}
 * (from the loader's program headers, not from that file), and a PC in it
 * is sent as ADDRESS (mapping, PC); the collector turns PC - lo + offset
 * into the file's own address with the file's program headers.
 */
#include "modules.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/guard.h"
#include "objects.h"
#include "base/log.h"

#define NOTE_MAX 4096		   /* bytes of PT_NOTE read per segment */
#define FORCED_GAP_NS 100000000ull /* forced refreshes: 10 per second */

struct seg {
	uint64_t lo, hi, offset;
	uint32_t mod;	  /* index into mods */
	uint32_t mapping; /* interned mapping id, 0 until first used */
};

struct mod {
	char *path;
	uint32_t path_sid; /* 0 until first used */
	uint32_t build_id_len;
	uint8_t build_id[64];
};

struct modules {
	struct seg *segs; /* sorted by lo, not overlapping */
	int n_segs, cap_segs;
	struct mod *mods;
	int n_mods, cap_mods;
	struct objects_gen gen; /* the loader's, when the table was built */
	int valid;
	uint64_t last_forced_ns;
	struct imap cache; /* (pc, exact) -> location id */
	char exe[4096];
};

struct modules *modules_new(void)
{
	struct modules *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	ssize_t n = readlink("/proc/self/exe", m->exe, sizeof m->exe - 1);
	m->exe[n > 0 ? n : 0] = 0;
	return m;
}

static void clear(struct modules *m)
{
	for (int i = 0; i < m->n_mods; i++)
		free(m->mods[i].path);
	m->n_mods = m->n_segs = 0;
	imap_free(&m->cache);
}

void modules_free(struct modules *m)
{
	if (!m)
		return;
	clear(m);
	free(m->segs);
	free(m->mods);
	free(m);
}

int modules_count(const struct modules *m)
{
	return m->n_segs;
}

/* The GNU build id from the object's PT_NOTE segments in memory. */
static void read_build_id(struct mod *md, const struct dl_phdr_info *info)
{
	uint8_t buf[NOTE_MAX];
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		size_t len = ph->p_memsz < sizeof buf ? ph->p_memsz : sizeof buf;
		if (guard_copy(buf, (const void *)(info->dlpi_addr + ph->p_vaddr),
			       len) < 0)
			continue;
		size_t off = 0;
		while (off + sizeof(ElfW(Nhdr)) <= len) {
			ElfW(Nhdr) nh;
			memcpy(&nh, buf + off, sizeof nh);
			size_t name_at = off + sizeof nh;
			size_t desc_at = name_at + ((nh.n_namesz + 3u) & ~3u);
			size_t next = desc_at + ((nh.n_descsz + 3u) & ~3u);
			if (next > len || next <= off)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(buf + name_at, "GNU", 4) &&
			    nh.n_descsz > 0 &&
			    nh.n_descsz <= sizeof md->build_id) {
				memcpy(md->build_id, buf + desc_at, nh.n_descsz);
				md->build_id_len = nh.n_descsz;
				return;
			}
			off = next;
		}
	}
}

struct scan {
	struct modules *m;
	int oom;
};

static int add_mod(struct modules *m, struct dl_phdr_info *info)
{
	if (m->n_mods == m->cap_mods) {
		int nc = m->cap_mods ? 2 * m->cap_mods : 64;
		void *p = realloc(m->mods, nc * sizeof *m->mods);
		if (!p)
			return -ENOMEM;
		m->mods = p;
		m->cap_mods = nc;
	}
	struct mod *md = &m->mods[m->n_mods];
	memset(md, 0, sizeof *md);
	const char *name = info->dlpi_name;
	if (!name || !name[0])
		name = m->exe; /* the main program */
	else if (!strncmp(name, "linux-vdso", 10) ||
		 !strncmp(name, "linux-gate", 10))
		name = "[vdso]";
	md->path = strdup(name);
	if (!md->path)
		return -ENOMEM;
	read_build_id(md, info);
	m->n_mods++;
	return 0;
}

static int collect(const struct object_seg *s, void *arg)
{
	struct scan *sc = arg;
	struct modules *m = sc->m;
	if (s->index == 0 && add_mod(m, s->obj) < 0) {
		sc->oom = 1;
		return OBJECTS_STOP;
	}
	if (m->n_segs == m->cap_segs) {
		int nc = m->cap_segs ? 2 * m->cap_segs : 128;
		void *p = realloc(m->segs, nc * sizeof *m->segs);
		if (!p) {
			sc->oom = 1;
			return OBJECTS_STOP;
		}
		m->segs = p;
		m->cap_segs = nc;
	}
	m->segs[m->n_segs++] = (struct seg){
		s->lo, s->hi, s->offset, (uint32_t)(m->n_mods - 1), 0
	};
	return OBJECTS_NEXT_SEG;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void rebuild(struct modules *m)
{
	struct scan sc = { m, 0 };
	clear(m);
	objects_scan(collect, &sc);
	qsort(m->segs, (size_t)m->n_segs, sizeof *m->segs, seg_cmp);
	m->valid = !sc.oom;
	plog_debug("native: %d objects, %d executable segments", m->n_mods,
		   m->n_segs);
}

void modules_refresh(struct modules *m)
{
	struct objects_gen now;
	int rc = objects_gen(&now);
	if (m->valid && objects_gen_current(&m->gen, &now, rc))
		return;
	rebuild(m);
	m->gen = now;
}

static struct seg *find(struct modules *m, uint64_t pc)
{
	int lo = 0, hi = m->n_segs;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (pc < m->segs[mid].lo)
			hi = mid;
		else if (pc >= m->segs[mid].hi)
			lo = mid + 1;
		else
			return &m->segs[mid];
	}
	return NULL;
}

uint32_t modules_location(struct modules *m, struct intern *in, uint64_t pc,
			  int exact)
{
	uint64_t addr = exact ? pc : pc - 1;
	uint32_t loc = imap_get(&m->cache, addr, (uint64_t)exact);
	if (loc)
		return loc;
	struct seg *s = find(m, addr);
	if (!s) {
		uint64_t now = mono_ns();
		if (now - m->last_forced_ns >= FORCED_GAP_NS) {
			m->last_forced_ns = now;
			rebuild(m); /* loaded since the last tick? */
			s = find(m, addr);
		}
	}
	uint32_t mapping = 0;
	if (s) {
		if (!s->mapping) {
			struct mod *md = &m->mods[s->mod];
			if (!md->path_sid)
				md->path_sid = intern_str(in, md->path,
							  strlen(md->path));
			if (md->path_sid)
				s->mapping = intern_mapping(
					in, s->lo, s->hi, s->offset,
					md->path_sid, md->build_id,
					md->build_id_len);
		}
		mapping = s->mapping;
		if (!mapping)
			return 0;
	}
	loc = intern_addr(in, mapping, addr);
	if (loc)
		imap_put(&m->cache, addr, (uint64_t)exact, loc);
	return loc;
}
