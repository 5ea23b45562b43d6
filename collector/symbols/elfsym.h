/*
 * elfsym.h - function names for native addresses, from the ELF symbol
 * tables of the files that were mapped (PYPROF_NATIVE's ADDRESS frames).
 *
 * A client says where a file was mapped (wire.h's MAPPING: start, file
 * offset, path, build id) and names addresses in it. elfsym turns such an
 * address into the file's own virtual address (through the file's PT_LOAD
 * program headers, as pprof and perf do), then into the function symbol
 * that covers it: from .symtab when the file has one, else from .dynsym
 * (the exported functions only: a stripped library's static functions
 * are not given the nearest exported name; each is named by the file and
 * the start of its FDE in .eh_frame instead, "libfoo.so+0x1a2b0", so that
 * its addresses still add up to one function), and
 * with the source file and line of the address where the file has DWARF
 * .debug_line (dwarfline.h). A separate debug file, /usr/lib/debug/
 * .build-id/xx/yyyy.debug (Debian's -dbgsym packages), is preferred when
 * it exists and carries the same build id.
 *
 * The files are read with plain C (ELF64 little-endian; anything else is
 * "no symbols"), with pread, never mmap (a file replaced while we read it
 * must not fault the collector), and every offset and size is checked
 * against the file. A file whose build id differs from the one the client
 * saw is not used: its names would be another build's.
 *
 * Cache: one entry per (path, build id), read on first use and kept, up
 * to ELFSYM_MAX_FILES entries and ELFSYM_MAX_BYTES of tables in all
 * (least recently used out first: a client may name any file it likes,
 * and the collector's memory must not grow with what it names); a file
 * that could not be read is remembered as such, and so is one whose
 * tables alone would take more than the cache holds (one warning: its
 * addresses stay unnamed). Reading a large library the
 * first time costs some milliseconds on the collector's loop (once per
 * file). The collector reads files with its own rights: a client may only
 * learn the symbol names of ELF files the collector's user can read.
 *
 * Single-threaded (the collector's loop thread).
 */
#ifndef PYPROF_ELFSYM_H
#define PYPROF_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#define ELFSYM_MAX_FILES 128
#define ELFSYM_MAX_FILE_BYTES (4ull << 30)  /* larger files: no symbols */
#define ELFSYM_MAX_TABLE_BYTES (128u << 20) /* one symbol or string table */
/* What the cache holds of all files together. */
#define ELFSYM_MAX_BYTES (256u << 20)

struct elfsym;

/* An empty cache, or NULL (ENOMEM). */
struct elfsym *elfsym_new(void);
void elfsym_free(struct elfsym *es);

/* What is known about one address. Strings point into the cache and stay
 * valid until the next elfsym_lookup. */
struct elfsym_hit {
	const char *name;      /* function symbol, or NULL                   */
	uint64_t vaddr;	       /* the address in the file's own terms        */
	uint64_t func_vaddr;   /* where that function starts (if name)       */
	const char *src_file;  /* source file (DWARF), or NULL               */
	uint32_t src_line;     /* its line, 0 if none                        */
	const char *func_file; /* the file and line where the function     */
	uint32_t func_line;    /* starts (DWARF), or NULL and 0; the same
	                         pointer as src_file for the same file      */
	int synthetic;	       /* name is "FILE+0xSTART": no symbol covers
	                         the address, but an FDE of .eh_frame does
	                         (a stripped file's static function)      */
	int file_ok;	       /* the file was read and matches the build id */
	int has_symbols;       /* it has a symbol table                      */
	int has_lines;	       /* it has .debug_line                         */
};

/*
 * Looks up the address addr of a process that mapped path at start, from
 * file offset offset (build_id: the client's, build_id_len bytes, may be
 * 0). Fills *hit; returns 1 if a function was found, else 0. path must be
 * absolute; anything else is never opened.
 */
int elfsym_lookup(struct elfsym *es, const char *path,
		  const uint8_t *build_id, size_t build_id_len,
		  uint64_t start, uint64_t offset, uint64_t addr,
		  struct elfsym_hit *hit);

/* Bytes the cached files hold. */
size_t elfsym_bytes(const struct elfsym *es);
/* Another bound than ELFSYM_MAX_BYTES on them (for the tests). */
void elfsym_set_max_bytes(struct elfsym *es, size_t max);

/*
 * Where one named thing of the ELF file at path lies: the section called
 * name when section is set, else the symbol called name (a defined one of
 * .symtab, else of .dynsym; any type). *vaddr is the file's own virtual
 * address (inside one of its PT_LOAD segments), *load_base the lowest
 * PT_LOAD's address rounded down to its page: a process that maps the
 * file at offset 0 from START holds the thing at START - *load_base +
 * *vaddr. *size is the symbol's or section's size. Read with the same checks as the lookups
 * above; nothing is cached. 0; -ENOENT when the file has no such thing or
 * it is in no loaded segment; -ENOEXEC, or -errno when the file cannot be
 * opened.
 */
int elfsym_find(const char *path, const char *name, int section,
		uint64_t *vaddr, uint64_t *load_base, uint64_t *size);

#endif /* PYPROF_ELFSYM_H */
