/*
 * dwarfline.h - source file and line of an address, from an ELF file's
 * DWARF .debug_line section (versions 2 to 5), for elfsym.c.
 *
 * dwarfline_load runs every line-number program of the section once and
 * keeps the rows (address, file, line), sorted, with the file names
 * (directory joined) in one arena; a lookup is a binary search. Forms it
 * does not know (DWARF 5 string offsets tables, split DWARF) make it skip
 * that unit; 64-bit DWARF is read. Bounded: DWARFLINE_MAX_ROWS rows, a
 * section of at most 512 MiB (elfsym's table limit). An address inlined
 * from another file (a header's static inline function) gets that file's
 * line: callers compare files before trusting a line.
 *
 * Single-threaded (the collector's loop thread), like elfsym.
 */
#ifndef PYPROF_DWARFLINE_H
#define PYPROF_DWARFLINE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#define DWARFLINE_MAX_ROWS (16u << 20)

struct dwarfline;

/*
 * Reads .debug_line (and .debug_line_str, .debug_str for DWARF 5 names)
 * of the ELF file open on fd (size bytes; headers eh and sh[0..n_sh)).
 * NULL when the file has no usable line table or memory ran out.
 */
struct dwarfline *dwarfline_load(int fd, uint64_t size, const Elf64_Ehdr *eh,
				 const Elf64_Shdr *sh, unsigned n_sh);
void dwarfline_free(struct dwarfline *d);
size_t dwarfline_bytes(const struct dwarfline *d);

/* The file and line of vaddr: 1 and *file, *line set (file valid while d
 * lives), or 0. */
int dwarfline_find(const struct dwarfline *d, uint64_t vaddr,
		   const char **file, uint32_t *line);

/* For tests: parse a .debug_line image in memory (line_str and str may be
 * NULL with length 0). */
struct dwarfline *dwarfline_parse(const uint8_t *line, size_t line_len,
				  const uint8_t *line_str, size_t line_str_len,
				  const uint8_t *str, size_t str_len);

#endif /* PYPROF_DWARFLINE_H */
