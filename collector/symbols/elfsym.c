/*
 * elfsym.c - see elfsym.h.
 *
 * One file, read once: the ELF header, the program headers (PT_LOAD, to
 * turn a file offset into the file's virtual address), the section headers,
 * the build id (SHT_NOTE / PT_NOTE, NT_GNU_BUILD_ID), then one symbol table
 * (.symtab, else .dynsym) and its string table. Function symbols are
 * sorted by address; a lookup is a binary search. Every read is a pread
 * bounded by the file's size and our limits.
 */
#include "symbols/elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "symbols/dwarfline.h"
#include "common/log.h"
#include "common/sorted.h"
#include "pyprof/leb128.h"

#define MAX_LOADS 16
#define MAX_SYMS (8u << 20)
#define NOTE_MAX 65536
#define DEBUG_DIR "/usr/lib/debug/.build-id/"

struct esym {
	uint64_t vaddr, size;
	uint32_t name; /* offset in names */
	uint8_t rank;  /* 0 global, 1 weak, 2 local: lower wins a tie */
};

struct load {
	uint64_t offset, vaddr, filesz;
};

struct range {
	uint64_t lo, hi;
};

struct efile {
	char *path;
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t last_use;
	int ok; /* read, and the build id matches */
	struct load loads[MAX_LOADS];
	int n_loads;
	struct esym *syms;
	size_t n_syms;
	char *names;
	size_t names_len;
	struct dwarfline *lines;
	struct range *funcs; /* FDE ranges, sorted: functions without names */
	size_t n_funcs;
	size_t bytes;
};

struct elfsym {
	struct efile *files[ELFSYM_MAX_FILES];
	int n_files;
	/* what files[] hold, and the bound on it */
	size_t bytes, max_bytes;
	uint64_t clock;
	char name[512]; /* a function known only by its FDE: "file+0x..." */
};

struct elfsym *elfsym_new(void)
{
	struct elfsym *es = calloc(1, sizeof(struct elfsym));
	if (es)
		es->max_bytes = ELFSYM_MAX_BYTES;
	return es;
}

void elfsym_set_max_bytes(struct elfsym *es, size_t max)
{
	es->max_bytes = max;
}

static void efile_free(struct efile *f)
{
	if (!f)
		return;
	free(f->path);
	free(f->syms);
	free(f->names);
	free(f->funcs);
	dwarfline_free(f->lines);
	free(f);
}

void elfsym_free(struct elfsym *es)
{
	if (!es)
		return;
	for (int i = 0; i < es->n_files; i++)
		efile_free(es->files[i]);
	free(es);
}

size_t elfsym_bytes(const struct elfsym *es)
{
	return es->bytes;
}

/* ---- reading one ELF file ------------------------------------------------ */

struct elf {
	int fd;
	uint64_t size;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh; /* e_shnum entries, or NULL */
	unsigned n_sh;
	Elf64_Phdr ph[64];
	unsigned n_ph;
};

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done,
				  (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

/* Does [off, off + len) lie inside the file? */
static int in_file(const struct elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static void elf_close(struct elf *e)
{
	if (e->fd >= 0)
		close(e->fd);
	free(e->sh);
	e->fd = -1;
	e->sh = NULL;
}

/* Opens path and reads its headers. 0 or -errno (not ELF64 LE: -ENOEXEC). */
static int elf_open(struct elf *e, const char *path)
{
	struct stat st;
	memset(e, 0, sizeof(*e));
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (e->fd < 0)
		return -errno;
	if (fstat(e->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > ELFSYM_MAX_FILE_BYTES)
		goto bad;
	e->size = (uint64_t)st.st_size;
	if (pread_full(e->fd, &e->eh, sizeof(e->eh), 0) < 0 ||
	    memcmp(e->eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->eh.e_ident[EI_DATA] != ELFDATA2LSB)
		goto bad;
	if (e->eh.e_phnum && e->eh.e_phentsize == sizeof(Elf64_Phdr)) {
		e->n_ph = e->eh.e_phnum < 64 ? e->eh.e_phnum : 64;
		if (!in_file(e, e->eh.e_phoff,
			     (uint64_t)e->n_ph * sizeof(Elf64_Phdr)) ||
		    pread_full(e->fd, e->ph, e->n_ph * sizeof(Elf64_Phdr),
			       e->eh.e_phoff) < 0)
			goto bad;
	}
	if (e->eh.e_shnum &&
	    e->eh.e_shentsize == sizeof(Elf64_Shdr) &&
	    in_file(e, e->eh.e_shoff,
		    (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr))) {
		e->n_sh = e->eh.e_shnum;
		e->sh = malloc(e->n_sh * sizeof(Elf64_Shdr));
		if (!e->sh || pread_full(e->fd, e->sh,
					 e->n_sh * sizeof(Elf64_Shdr),
					 e->eh.e_shoff) < 0) {
			free(e->sh);
			e->sh = NULL;
			e->n_sh = 0;
		}
	}
	return 0;
bad:
	elf_close(e);
	return -ENOEXEC;
}

/* Reads a section's bytes (NUL-terminated copy), or NULL. */
static void *read_section(const struct elf *e, const Elf64_Shdr *s)
{
	char *buf;
	if (s->sh_type == SHT_NOBITS || s->sh_size > ELFSYM_MAX_TABLE_BYTES ||
	    !in_file(e, s->sh_offset, s->sh_size))
		return NULL;
	buf = malloc(s->sh_size + 1);
	if (!buf)
		return NULL;
	if (pread_full(e->fd, buf, s->sh_size, s->sh_offset) < 0) {
		free(buf);
		return NULL;
	}
	buf[s->sh_size] = 0;
	return buf;
}

/* The section called name, or NULL. */
static const Elf64_Shdr *find_section(const struct elf *e, const char *name)
{
	const Elf64_Shdr *ss;
	char *names;
	const Elf64_Shdr *found = NULL;
	if (!e->sh || e->eh.e_shstrndx >= e->n_sh)
		return NULL;
	ss = &e->sh[e->eh.e_shstrndx];
	names = read_section(e, ss);
	if (!names)
		return NULL;
	for (unsigned i = 0; i < e->n_sh && !found; i++)
		if (e->sh[i].sh_name < ss->sh_size &&
		    strcmp(names + e->sh[i].sh_name, name) == 0)
			found = &e->sh[i];
	free(names);
	return found;
}

/* The NT_GNU_BUILD_ID in a block of notes, copied to id; its length or 0. */
static size_t note_build_id(const uint8_t *p, size_t len, uint8_t *id,
			    size_t cap)
{
	size_t off = 0;
	while (off + sizeof(Elf64_Nhdr) <= len) {
		Elf64_Nhdr nh;
		memcpy(&nh, p + off, sizeof(nh));
		size_t name_at = off + sizeof(nh);
		uint64_t desc_at = name_at + (((uint64_t)nh.n_namesz + 3) & ~3ull);
		uint64_t next = desc_at + (((uint64_t)nh.n_descsz + 3) & ~3ull);
		if (next > len)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + name_at, "GNU", 4) == 0 && nh.n_descsz &&
		    nh.n_descsz <= cap) {
			memcpy(id, p + desc_at, nh.n_descsz);
			return nh.n_descsz;
		}
		off = (size_t)next;
	}
	return 0;
}

/* The build id in the notes at [off, off + size) of the file (buf holds
 * NOTE_MAX bytes), or 0. */
static size_t build_id_at(const struct elf *e, uint8_t *buf, uint64_t off,
			  uint64_t size, uint8_t *id, size_t cap)
{
	if (size > NOTE_MAX || !in_file(e, off, size) ||
	    pread_full(e->fd, buf, size, off) < 0)
		return 0;
	return note_build_id(buf, size, id, cap);
}

/* The build id from the SHT_NOTE sections, else the PT_NOTE segments. */
static size_t elf_build_id(const struct elf *e, uint8_t *id, size_t cap)
{
	uint8_t *buf = malloc(NOTE_MAX);
	size_t n = 0;
	if (!buf)
		return 0;
	for (unsigned i = 0; i < e->n_sh && !n; i++)
		if (e->sh[i].sh_type == SHT_NOTE)
			n = build_id_at(e, buf, e->sh[i].sh_offset,
					e->sh[i].sh_size, id, cap);
	for (unsigned i = 0; i < e->n_ph && !n; i++)
		if (e->ph[i].p_type == PT_NOTE)
			n = build_id_at(e, buf, e->ph[i].p_offset,
					e->ph[i].p_filesz, id, cap);
	free(buf);
	return n;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;
	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))
		return x->size ? -1 : 1; /* a sized symbol first */
	return (int)x->rank - (int)y->rank;
}

/* Loads the function symbols of e's .symtab (else .dynsym) into f. */
static void load_symbols(struct efile *f, const struct elf *e)
{
	const Elf64_Shdr *tab = NULL;
	Elf64_Sym *raw = NULL;
	char *strs = NULL;

	for (unsigned i = 0; i < e->n_sh; i++)
		if (e->sh[i].sh_type == SHT_SYMTAB && e->sh[i].sh_size)
			tab = &e->sh[i];
	for (unsigned i = 0; i < e->n_sh && !tab; i++)
		if (e->sh[i].sh_type == SHT_DYNSYM)
			tab = &e->sh[i];
	if (!tab || tab->sh_link >= e->n_sh ||
	    tab->sh_entsize != sizeof(Elf64_Sym))
		return;
	raw = read_section(e, tab);
	strs = read_section(e, &e->sh[tab->sh_link]);
	if (!raw || !strs)
		goto out;
	size_t n = tab->sh_size / sizeof(Elf64_Sym);
	size_t strs_len = e->sh[tab->sh_link].sh_size;
	if (n > MAX_SYMS)
		n = MAX_SYMS;
	f->syms = malloc((n ? n : 1) * sizeof(*f->syms));
	if (!f->syms)
		goto out;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const Elf64_Sym *y = &raw[i];
		unsigned type = ELF64_ST_TYPE(y->st_info);
		unsigned bind = ELF64_ST_BIND(y->st_info);
		if (!y->st_value || y->st_shndx == SHN_UNDEF ||
		    y->st_shndx >= e->n_sh || y->st_name == 0 ||
		    y->st_name >= strs_len)
			continue;
		/* functions; and untyped symbols in code (assembly) */
		if (type != STT_FUNC &&
		    !(type == STT_NOTYPE &&
		      (e->sh[y->st_shndx].sh_flags & SHF_EXECINSTR)))
			continue;
		const char *name = strs + y->st_name;
		if (name[0] == '$' || (name[0] == '.' && name[1] == 'L'))
			continue;
		f->syms[k++] = (struct esym){
			y->st_value, y->st_size, y->st_name,
			(uint8_t)(bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1
									    : 2)
		};
	}
	qsort(f->syms, k, sizeof(*f->syms), sym_cmp);
	/* one symbol per address: the best-ranked, sorted first */
	size_t w = 0;
	for (size_t i = 0; i < k; i++)
		if (w == 0 || f->syms[w - 1].vaddr != f->syms[i].vaddr)
			f->syms[w++] = f->syms[i];
	f->n_syms = w;
	f->names = strs;
	f->names_len = strs_len;
	strs = NULL;
	f->bytes += w * sizeof(*f->syms) + f->names_len;
out:
	free(raw);
	free(strs);
}

static void load_loads(struct efile *f, const struct elf *e)
{
	f->n_loads = 0;
	for (unsigned i = 0; i < e->n_ph && f->n_loads < MAX_LOADS; i++)
		if (e->ph[i].p_type == PT_LOAD)
			f->loads[f->n_loads++] = (struct load){
				e->ph[i].p_offset, e->ph[i].p_vaddr,
				e->ph[i].p_filesz
			};
}

/* ---- functions from .eh_frame ------------------------------------------- */

/* A DW_EH_PE-encoded value at b[*o] (bounded by n); field_vaddr is where
 * it sits in the file's address space (for pcrel), base for datarel. */
static int eh_value(const uint8_t *b, size_t n, size_t *o, uint8_t enc,
		    uint64_t field_vaddr, uint64_t base, uint64_t *v)
{
	size_t k;
	int64_t sv;
	switch (enc & 0x0f) {
	case 0x02:
		k = 2;
		break;
	case 0x03:
	case 0x0b:
		k = 4;
		break;
	case 0x00:
	case 0x04:
	case 0x0c:
		k = 8;
		break;
	case 0x0a:
		k = 2;
		break;
	default:
		return -1; /* leb128 forms: not in what we read */
	}
	if (*o > n || k > n - *o)
		return -1;
	uint64_t u = 0;
	for (size_t i = 0; i < k; i++)
		u |= (uint64_t)b[*o + i] << (8 * i);
	*o += k;
	if ((enc & 0x0f) == 0x0b)
		sv = (int32_t)u;
	else if ((enc & 0x0f) == 0x0a)
		sv = (int16_t)u;
	else
		sv = (int64_t)u;
	switch (enc & 0x70) {
	case 0x00:
		*v = (uint64_t)sv;
		break;
	case 0x10:
		*v = field_vaddr + (uint64_t)sv;
		break;
	case 0x30:
		*v = base + (uint64_t)sv;
		break;
	default:
		return -1;
	}
	return 0;
}

/* Steps *o over the LEB128 at b[*o], or to n if it does not end before. */
static void skip_leb128(const uint8_t *b, size_t n, size_t *o)
{
	uint64_t dummy;
	size_t k = leb128_get_u(b + *o, b + n, &dummy);
	*o = k ? *o + k : n;
}

/* The FDE pointer encoding of the CIE at c (its 'R' augmentation). */
static int cie_fde_enc(const uint8_t *b, size_t n, size_t c, uint8_t *enc)
{
	if (c + 9 > n)
		return -1;
	size_t o = c + 8; /* length, CIE id */
	unsigned version = b[o++];
	const char *aug = (const char *)b + o;
	size_t alen = strnlen(aug, n - o);
	if (o + alen >= n || (version != 1 && version != 3))
		return -1;
	o += alen + 1;
	*enc = 0;
	if (aug[0] != 'z')
		return aug[0] ? -1 : 0;
	skip_leb128(b, n, &o); /* code alignment */
	skip_leb128(b, n, &o); /* data alignment */
	if (version != 1)      /* return address register */
		skip_leb128(b, n, &o);
	else if (o < n) /* a byte in version 1 */
		o++;
	skip_leb128(b, n, &o); /* augmentation length */
	for (const char *a = aug + 1; *a && o < n; a++) {
		if (*a == 'R') {
			*enc = b[o];
			return 0;
		} else if (*a == 'P') {
			uint8_t pe = b[o++];
			uint64_t dummy;
			if (eh_value(b, n, &o, pe & 0x7f, 0, 0, &dummy) < 0)
				return -1;
		} else if (*a == 'L') {
			o++;
		} else if (*a != 'S') {
			return -1;
		}
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every function's address range, from .eh_frame_hdr's table and each
 * FDE's pc_begin and pc_range: a stripped file's static functions are
 * still there, nameless, and their addresses are grouped by function. */
static void load_fde_ranges(struct efile *f, const struct elf *e)
{
	const Elf64_Shdr *hs = find_section(e, ".eh_frame_hdr");
	const Elf64_Shdr *fs = find_section(e, ".eh_frame");
	uint8_t *hdr = NULL, *ehf = NULL;
	if (!hs || !fs || !(hdr = read_section(e, hs)) ||
	    !(ehf = read_section(e, fs)) || hs->sh_size < 12 || hdr[0] != 1 ||
	    hdr[3] != 0x3b) /* table: datarel | sdata4 */
		goto out;
	size_t o = 4, hn = hs->sh_size, fn = fs->sh_size;
	uint64_t dummy, count;
	if (eh_value(hdr, hn, &o, hdr[1], hs->sh_addr + o, hs->sh_addr,
		     &dummy) < 0 ||
	    eh_value(hdr, hn, &o, hdr[2], hs->sh_addr + o, hs->sh_addr,
		     &count) < 0 ||
	    count > (hn - o) / 8)
		goto out;
	f->funcs = malloc((count ? count : 1) * sizeof(*f->funcs));
	if (!f->funcs)
		goto out;
	size_t last_cie = SIZE_MAX;
	uint8_t enc = 0;
	for (uint64_t i = 0; i < count; i++, o += 8) {
		int32_t rel;
		memcpy(&rel, hdr + o + 4, 4);
		uint64_t fde_vaddr = hs->sh_addr + (uint64_t)(int64_t)rel;
		if (fde_vaddr < fs->sh_addr || fde_vaddr - fs->sh_addr + 8 > fn)
			continue;
		size_t fo = (size_t)(fde_vaddr - fs->sh_addr);
		uint32_t len, cie_ptr;
		memcpy(&len, ehf + fo, 4);
		memcpy(&cie_ptr, ehf + fo + 4, 4);
		if (len == 0 || len == 0xffffffffu || len > fn - fo - 4 ||
		    cie_ptr == 0 || cie_ptr > fo + 4)
			continue;
		size_t cie = fo + 4 - cie_ptr;
		if (cie != last_cie) {
			if (cie_fde_enc(ehf, fn, cie, &enc) < 0)
				continue;
			last_cie = cie;
		}
		size_t po = fo + 8;
		uint64_t begin, range;
		if (eh_value(ehf, fo + 4 + len, &po, enc,
			     fs->sh_addr + po, 0, &begin) < 0 ||
		    eh_value(ehf, fo + 4 + len, &po, enc & 0x0f, 0, 0,
			     &range) < 0 ||
		    !range)
			continue;
		f->funcs[f->n_funcs++] = (struct range){ begin, begin + range };
	}
	qsort(f->funcs, f->n_funcs, sizeof(*f->funcs), range_cmp);
	f->bytes += f->n_funcs * sizeof(*f->funcs);
out:
	free(hdr);
	free(ehf);
}

/* The separate debug file of a build id, if it is there. */
static void debug_path(char *buf, size_t n, const uint8_t *id, size_t len)
{
	size_t o = (size_t)snprintf(buf, n, DEBUG_DIR "%02x/", id[0]);
	for (size_t i = 1; i < len && o + 3 < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%02x", id[i]);
	snprintf(buf + o, n - o, ".debug");
}

/* "[vdso]": the kernel's vDSO has no file, but every process on this
 * kernel maps the same image, so ours stands for the target's (the
 * build id check below refuses another kernel's): a copy of it in a
 * memfd, read as a file. Returns the memfd, or -1. */
static int vdso_image_fd(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	uint64_t size = 0;
	int fd;

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	/* the image ends with its section headers, or its last segment */
	if (eh->e_shentsize == sizeof(Elf64_Shdr))
		size = eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr);
	if (eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum < 64) {
		const Elf64_Phdr *ph =
			(const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
		for (unsigned i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_offset + ph[i].p_filesz > size)
				size = ph[i].p_offset + ph[i].p_filesz;
	}
	if (!size || size > (1u << 20))
		return -1;
	fd = (int)syscall(SYS_memfd_create, "pyprof-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, eh, (size_t)size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads the file of (path, build id) into a new entry (never NULL unless
 * out of memory; a file that cannot be used gives an entry with ok 0). */
static struct efile *efile_load(const char *path, const uint8_t *id,
				size_t id_len)
{
	struct efile *f = calloc(1, sizeof(*f));
	struct elf e = { .fd = -1 }, d = { .fd = -1 };
	uint8_t got[64];
	char dbg[256], vdso_path[64];
	const char *open_path = path;
	int vdso_fd = -1;

	if (!f || !(f->path = strdup(path))) {
		free(f);
		return NULL;
	}
	if (id_len) /* id is NULL for a mapping without a build id */
		memcpy(f->build_id, id, id_len);
	f->build_id_len = id_len;
	f->bytes = sizeof(*f) + strlen(path);
	if (!strcmp(path, "[vdso]")) {
		vdso_fd = vdso_image_fd();
		if (vdso_fd >= 0) {
			snprintf(vdso_path, sizeof vdso_path, "/proc/self/fd/%d",
				 vdso_fd);
			open_path = vdso_path;
		}
	}
	if (open_path[0] != '/')
		goto out; /* "[vsyscall]" and the like: no file to read */
	if (elf_open(&e, open_path) == 0) {
		size_t n = elf_build_id(&e, got, sizeof(got));
		if (id_len && (n != id_len || memcmp(got, id, id_len) != 0)) {
			log_debug("%s: build id differs from the process's "
				  "(the file changed?): not symbolized",
				  path);
			elf_close(&e);
		}
	}
	/* A separate debug file with the same build id has full symbols. */
	if (id_len) {
		debug_path(dbg, sizeof(dbg), id, id_len);
		if (elf_open(&d, dbg) == 0) {
			size_t n = elf_build_id(&d, got, sizeof(got));
			if (n != id_len || memcmp(got, id, id_len) != 0)
				elf_close(&d);
		}
	}
	if (e.fd < 0 && d.fd < 0)
		goto out;
	f->ok = 1;
	load_loads(f, e.fd >= 0 ? &e : &d);
	load_symbols(f, d.fd >= 0 ? &d : &e);
	if (e.fd >= 0)
		load_fde_ranges(f, &e);
	if (d.fd >= 0) {
		f->lines = dwarfline_load(d.fd, d.size, &d.eh, d.sh, d.n_sh);
	}
	if (!f->lines && e.fd >= 0)
		f->lines = dwarfline_load(e.fd, e.size, &e.eh, e.sh, e.n_sh);
	if (f->lines)
		f->bytes += dwarfline_bytes(f->lines);
out:
	elf_close(&e);
	elf_close(&d);
	if (vdso_fd >= 0)
		close(vdso_fd);
	return f;
}

/* ---- the cache ------------------------------------------------------------- */

static void drop_file(struct elfsym *es, int i)
{
	es->bytes -= es->files[i]->bytes;
	efile_free(es->files[i]);
	es->files[i] = es->files[--es->n_files];
}

static int least_used(const struct elfsym *es)
{
	int lru = 0;
	for (int i = 1; i < es->n_files; i++)
		if (es->files[i]->last_use < es->files[lru]->last_use)
			lru = i;
	return lru;
}

/* A file whose tables alone take more than the cache may hold: kept as
 * one that could not be read (not read again at each lookup), its
 * addresses unnamed. */
static void too_big(const struct elfsym *es, struct efile *f)
{
	size_t kib = (f->bytes + 1023) >> 10, max_kib = es->max_bytes >> 10;
	log_warn("%s: its symbols and lines take %zu KiB, more than the "
		 "%zu KiB the collector keeps for all files: its native "
		 "frames stay unnamed",
		 f->path, kib, max_kib);
	free(f->syms);
	free(f->names);
	free(f->funcs);
	dwarfline_free(f->lines);
	f->syms = NULL;
	f->names = NULL;
	f->funcs = NULL;
	f->lines = NULL;
	f->n_syms = f->names_len = f->n_funcs = 0;
	f->ok = 0;
	f->bytes = sizeof(*f) + strlen(f->path);
}

static struct efile *get_file(struct elfsym *es, const char *path,
			      const uint8_t *id, size_t id_len)
{
	int victim = 0;
	if (id_len > sizeof(es->files[0]->build_id))
		id_len = 0;
	for (int i = 0; i < es->n_files; i++) {
		struct efile *f = es->files[i];
		if (f->build_id_len == id_len &&
		    (id_len == 0 || memcmp(f->build_id, id, id_len) == 0) &&
		    strcmp(f->path, path) == 0) {
			f->last_use = ++es->clock;
			return f;
		}
		if (f->last_use < es->files[victim]->last_use)
			victim = i;
	}
	struct efile *f = efile_load(path, id, id_len);
	if (!f)
		return NULL;
	f->last_use = ++es->clock;
	if (f->bytes > es->max_bytes)
		too_big(es, f);
	if (es->n_files == ELFSYM_MAX_FILES)
		drop_file(es, victim);
	/* the least recently used out until the new one fits */
	while (es->n_files && es->bytes + f->bytes > es->max_bytes)
		drop_file(es, least_used(es));
	es->files[es->n_files++] = f;
	es->bytes += f->bytes;
	log_debug("%s: %s, %zu function symbols%s", path,
		  f->ok ? "read" : "not readable", f->n_syms,
		  f->lines ? ", line tables" : "");
	return f;
}

/* No symbol covers the address: the function its FDE covers, named
 * "FILE+0xSTART" (synthetic), or nothing. */
static int by_fde(struct elfsym *es, const struct efile *f,
		  struct elfsym_hit *hit)
{
	size_t lo = sorted_upper_u64(f->funcs, f->n_funcs, sizeof(*f->funcs),
				     offsetof(struct range, lo), hit->vaddr);
	if (lo == 0 || hit->vaddr >= f->funcs[lo - 1].hi)
		return 0;
	const char *base = strrchr(f->path, '/');
	snprintf(es->name, sizeof(es->name), "%s+0x%" PRIx64,
		 base ? base + 1 : f->path, f->funcs[lo - 1].lo);
	hit->name = es->name;
	hit->func_vaddr = f->funcs[lo - 1].lo;
	hit->synthetic = 1;
	return 1;
}

int elfsym_lookup(struct elfsym *es, const char *path,
		  const uint8_t *build_id, size_t build_id_len,
		  uint64_t start, uint64_t offset, uint64_t addr,
		  struct elfsym_hit *hit)
{
	struct efile *f;
	memset(hit, 0, sizeof(*hit));
	if (addr < start)
		return 0;
	f = get_file(es, path, build_id, build_id_len);
	if (!f || !f->ok)
		return 0;
	hit->file_ok = 1;
	hit->has_symbols = f->n_syms > 0;
	hit->has_lines = f->lines != NULL;
	/* process address -> file offset -> the file's virtual address */
	uint64_t foff = addr - start + offset;
	int found = 0;
	for (int i = 0; i < f->n_loads; i++) {
		const struct load *l = &f->loads[i];
		if (foff >= l->offset && foff - l->offset < l->filesz) {
			hit->vaddr = foff - l->offset + l->vaddr;
			found = 1;
			break;
		}
	}
	if (!found)
		return 0;
	/* the last symbol at or below vaddr */
	size_t lo = sorted_upper_u64(f->syms, f->n_syms, sizeof(*f->syms),
				     offsetof(struct esym, vaddr), hit->vaddr);
	const struct esym *s = lo ? &f->syms[lo - 1] : NULL;
	/* Covered by its size; a symbol without one (assembly) covers up
	 * to the next symbol, at most 64 KiB. */
	if (!s || (s->size ? hit->vaddr - s->vaddr >= s->size
			   : (hit->vaddr - s->vaddr >= 65536 ||
			      (lo < f->n_syms &&
			       hit->vaddr >= f->syms[lo].vaddr))))
		return by_fde(es, f, hit);
	hit->name = f->names + s->name;
	hit->func_vaddr = s->vaddr;
	if (f->lines) {
		dwarfline_find(f->lines, hit->vaddr, &hit->src_file,
			       &hit->src_line);
		dwarfline_find(f->lines, s->vaddr, &hit->func_file,
			       &hit->func_line);
	}
	return 1;
}

/* ---- one named symbol or section ------------------------------------ */

/* The symbol name in the table tab (.symtab or .dynsym): its value and
 * size. 0 or -ENOENT. */
static int find_in_table(const struct elf *e, const Elf64_Shdr *tab,
			 const char *name, uint64_t *vaddr, uint64_t *size)
{
	Elf64_Sym *raw;
	char *strs;
	size_t n, strs_len;
	int rc = -ENOENT;

	if (tab->sh_link >= e->n_sh || tab->sh_entsize != sizeof(Elf64_Sym))
		return -ENOENT;
	raw = read_section(e, tab);
	strs = read_section(e, &e->sh[tab->sh_link]);
	strs_len = e->sh[tab->sh_link].sh_size;
	n = tab->sh_size / sizeof(Elf64_Sym);
	for (size_t i = 0; raw && strs && i < n && n <= MAX_SYMS; i++) {
		const Elf64_Sym *y = &raw[i];

		if (y->st_shndx == SHN_UNDEF || y->st_name >= strs_len ||
		    !y->st_value || strcmp(strs + y->st_name, name) != 0)
			continue;
		*vaddr = y->st_value;
		*size = y->st_size;
		rc = 0;
		break;
	}
	free(raw);
	free(strs);
	return rc;
}

int elfsym_find(const char *path, const char *name, int section,
		uint64_t *vaddr, uint64_t *load_base, uint64_t *size)
{
	struct elf e;
	int rc = elf_open(&e, path);

	if (rc < 0)
		return rc;
	rc = -ENOENT;
	if (section) {
		const Elf64_Shdr *s = find_section(&e, name);
		if (s && (s->sh_flags & SHF_ALLOC)) {
			*vaddr = s->sh_addr;
			*size = s->sh_size;
			rc = 0;
		}
	} else {
		for (int pass = 0; pass < 2 && rc < 0; pass++)
			for (unsigned i = 0; i < e.n_sh && rc < 0; i++)
				if (e.sh[i].sh_type ==
				    (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
					rc = find_in_table(&e, &e.sh[i], name,
							   vaddr, size);
	}
	if (rc == 0) {
		int in_load = 0, any = 0;
		uint64_t low = 0;

		for (unsigned i = 0; i < e.n_ph; i++) {
			const Elf64_Phdr *p = &e.ph[i];
			if (p->p_type != PT_LOAD)
				continue;
			if (!any || p->p_vaddr < low)
				low = p->p_vaddr;
			any = 1;
			if (*vaddr >= p->p_vaddr && *vaddr - p->p_vaddr < p->p_memsz)
				in_load = 1;
		}
		*load_base = low & ~(uint64_t)0xfff;
		rc = in_load ? 0 : -ENOENT;
	}
	elf_close(&e);
	return rc;
}
