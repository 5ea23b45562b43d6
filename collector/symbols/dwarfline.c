/*
 * dwarfline.c - see dwarfline.h. The line-number program state machine is
 * DWARF 5 section 6.2 (also 2-4: the header differs, the opcodes do not).
 * Every read goes through a bounds-checked cursor: a malformed unit ends
 * the parse of that unit and keeps what came before.
 */
#include "symbols/dwarfline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/idhash.h"
#include "pyprof/leb128.h"

#define MAX_FILES_PER_UNIT 65536
#define MAX_NAME 4096

struct row {
	uint64_t addr;
	uint32_t line; /* 0: end of a sequence (no line from here) */
	uint32_t file; /* offset in names */
};

struct dwarfline {
	struct row *rows;
	size_t n_rows, cap_rows;
	char *names;           /* NUL-terminated file names */
	size_t names_len, names_cap;
	struct idhash name_hash;
};

/* ---- a bounds-checked reader ------------------------------------------- */

struct cur {
	const uint8_t *p, *end;
	int ok;
};

static uint64_t rd_n(struct cur *c, unsigned n)
{
	uint64_t v = 0;
	if (!c->ok || (size_t)(c->end - c->p) < n) {
		c->ok = 0;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint64_t rd_uleb(struct cur *c)
{
	uint64_t v;
	size_t n = c->ok ? leb128_get_u(c->p, c->end, &v) : 0;
	if (!n) {
		c->ok = 0;
		c->p = c->end;
		return 0;
	}
	c->p += n;
	return v;
}

static int64_t rd_sleb(struct cur *c)
{
	int64_t v;
	size_t n = c->ok ? leb128_get_s(c->p, c->end, &v) : 0;
	if (!n) {
		c->ok = 0;
		c->p = c->end;
		return 0;
	}
	c->p += n;
	return v;
}

static const char *rd_str(struct cur *c)
{
	const uint8_t *s = c->p;
	while (c->ok && c->p < c->end && *c->p)
		c->p++;
	if (!c->ok || c->p >= c->end) {
		c->ok = 0;
		return "";
	}
	c->p++;
	return (const char *)s;
}

static void skip(struct cur *c, uint64_t n)
{
	if (!c->ok || (uint64_t)(c->end - c->p) < n) {
		c->ok = 0;
		return;
	}
	c->p += n;
}

/* ---- names ---------------------------------------------------------------- */

struct name_key {
	const struct dwarfline *d;
	const char *s;
};

static int name_eq(const void *ctx, uint32_t id)
{
	const struct name_key *k = ctx;
	return strcmp(k->d->names + id - 1, k->s) == 0;
}

/* The offset + 1 of a file's name in the arena (0 when out of memory):
 * file, joined to dir if relative, joined to base (DWARF 5's directory 0,
 * the compilation directory) if still relative. */
static uint32_t add_name(struct dwarfline *d, const char *base,
			 const char *dir, const char *file)
{
	char buf[MAX_NAME];
	int r;
	if (file[0] == '/' || !dir || !dir[0])
		r = snprintf(buf, sizeof(buf), "%s", file);
	else if (dir[0] == '/' || !base || !base[0] || dir == base)
		r = snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	else
		r = snprintf(buf, sizeof(buf), "%s/%s/%s", base, dir, file);
	size_t n = r < 0 ? 0 : (size_t)r;
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	buf[n] = 0;
	struct name_key k = { d, buf };
	uint64_t h = idhash_bytes(buf, n);
	uint32_t id = idhash_find(&d->name_hash, h, name_eq, &k);
	if (id)
		return id;
	if (d->names_len + n + 1 > d->names_cap) {
		size_t cap = d->names_cap ? d->names_cap * 2 : 4096;
		while (cap < d->names_len + n + 1)
			cap *= 2;
		char *p = realloc(d->names, cap);
		if (!p)
			return 0;
		d->names = p;
		d->names_cap = cap;
	}
	if (d->names_len + 1 > UINT32_MAX - n - 1)
		return 0;
	id = (uint32_t)d->names_len + 1;
	if (idhash_insert(&d->name_hash, h, id) < 0)
		return 0;
	memcpy(d->names + d->names_len, buf, n + 1);
	d->names_len += n + 1;
	return id;
}

static int add_row(struct dwarfline *d, uint64_t addr, uint32_t line,
		   uint32_t file)
{
	if (d->n_rows == d->cap_rows) {
		if (d->n_rows >= DWARFLINE_MAX_ROWS)
			return -E2BIG;
		size_t cap = d->cap_rows ? d->cap_rows * 2 : 4096;
		struct row *r = realloc(d->rows, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		d->rows = r;
		d->cap_rows = cap;
	}
	d->rows[d->n_rows++] = (struct row){ addr, line, file };
	return 0;
}

/* ---- one unit -------------------------------------------------------------- */

struct sects {
	const uint8_t *line_str, *str;
	size_t line_str_len, str_len;
};

/* A string-valued attribute of a DWARF 5 entry. */
static const char *rd_form_str(struct cur *c, uint64_t form, int off64,
			       const struct sects *s, int *bad)
{
	uint64_t off;
	switch (form) {
	case 0x08: /* DW_FORM_string */
		return rd_str(c);
	case 0x1f: /* DW_FORM_line_strp */
	case 0x0e: /* DW_FORM_strp */
		off = rd_n(c, off64 ? 8 : 4);
		if (form == 0x1f)
			return off < s->line_str_len &&
					       memchr(s->line_str + off, 0,
						      s->line_str_len - off)
				       ? (const char *)s->line_str + off
				       : (*bad = 1, "");
		return off < s->str_len &&
				       memchr(s->str + off, 0, s->str_len - off)
			       ? (const char *)s->str + off
			       : (*bad = 1, "");
	default:
		*bad = 1;
		return "";
	}
}

/* Skips or reads an unsigned attribute; *bad for a form we do not know. */
static uint64_t rd_form_u(struct cur *c, uint64_t form, int off64, int *bad)
{
	switch (form) {
	case 0x0b: return rd_n(c, 1);            /* data1 */
	case 0x05: return rd_n(c, 2);            /* data2 */
	case 0x06: return rd_n(c, 4);            /* data4 */
	case 0x07: return rd_n(c, 8);            /* data8 */
	case 0x0f: return rd_uleb(c);            /* udata */
	case 0x1e: skip(c, 16); return 0;        /* data16 (MD5) */
	case 0x09: skip(c, rd_uleb(c)); return 0; /* block */
	case 0x08: rd_str(c); return 0;          /* string */
	case 0x1f: case 0x0e: rd_n(c, off64 ? 8 : 4); return 0;
	default: *bad = 1; return 0;
	}
}

/* DWARF 5 directory or file entry formats and entries. names[i] gets
 * each entry's path, dirs[i] its directory index. */
static int read_v5_entries(struct cur *c, int off64, const struct sects *s,
			   const char ***names, uint64_t **dirs, uint64_t *n)
{
	uint64_t fmt[16][2];
	unsigned n_fmt = (unsigned)rd_n(c, 1);
	int bad = 0;
	if (n_fmt > 16)
		return -1;
	for (unsigned i = 0; i < n_fmt; i++) {
		fmt[i][0] = rd_uleb(c);
		fmt[i][1] = rd_uleb(c);
	}
	*n = rd_uleb(c);
	if (!c->ok || *n > MAX_FILES_PER_UNIT)
		return -1;
	*names = calloc(*n ? *n : 1, sizeof(**names));
	*dirs = calloc(*n ? *n : 1, sizeof(**dirs));
	if (!*names || !*dirs)
		return -1;
	for (uint64_t k = 0; k < *n && c->ok && !bad; k++) {
		(*names)[k] = "";
		for (unsigned i = 0; i < n_fmt; i++) {
			if (fmt[i][0] == 1) /* DW_LNCT_path */
				(*names)[k] = rd_form_str(c, fmt[i][1], off64,
							  s, &bad);
			else if (fmt[i][0] == 2) /* DW_LNCT_directory_index */
				(*dirs)[k] = rd_form_u(c, fmt[i][1], off64,
						       &bad);
			else
				rd_form_u(c, fmt[i][1], off64, &bad);
		}
	}
	return c->ok && !bad ? 0 : -1;
}

/* Runs one unit's program (the unit's bytes are c). 0, or -1 to skip the
 * rest of this unit. */
static int parse_unit(struct dwarfline *d, struct cur *c, int off64,
		      const struct sects *s)
{
	const char **dnames = NULL, **fnames = NULL;
	uint64_t *ddirs = NULL, *fdirs = NULL, n_dirs = 0, n_files = 0;
	uint32_t *file_ids = NULL;
	int rc = -1;

	unsigned version = (unsigned)rd_n(c, 2);
	if (version < 2 || version > 5)
		return -1;
	if (version >= 5) {
		unsigned asz = (unsigned)rd_n(c, 1);
		rd_n(c, 1); /* segment selector size */
		if (asz != 8)
			return -1;
	}
	uint64_t hlen = rd_n(c, off64 ? 8 : 4);
	if (!c->ok || hlen > (uint64_t)(c->end - c->p))
		return -1;
	const uint8_t *prog = c->p + hlen;
	unsigned min_inst = (unsigned)rd_n(c, 1);
	if (version >= 4)
		rd_n(c, 1); /* maximum_operations_per_instruction (VLIW) */
	int default_stmt = (int)rd_n(c, 1);
	int line_base = (int8_t)rd_n(c, 1);
	unsigned line_range = (unsigned)rd_n(c, 1);
	unsigned opcode_base = (unsigned)rd_n(c, 1);
	uint8_t std_len[256] = { 0 };
	for (unsigned i = 1; i < opcode_base; i++)
		std_len[i] = (uint8_t)rd_n(c, 1);
	if (!c->ok || line_range == 0 || opcode_base == 0)
		return -1;
	(void)default_stmt;

	if (version >= 5) {
		if (read_v5_entries(c, off64, s, &dnames, &ddirs, &n_dirs) < 0 ||
		    read_v5_entries(c, off64, s, &fnames, &fdirs, &n_files) < 0)
			goto out;
	} else {
		/* include_directories, then file_names; 1-based */
		const char *tmpd[1024];
		n_dirs = 1;
		tmpd[0] = "";
		for (;;) {
			const char *dn = rd_str(c);
			if (!c->ok || !dn[0])
				break;
			if (n_dirs < 1024)
				tmpd[n_dirs++] = dn;
		}
		dnames = calloc(n_dirs, sizeof(*dnames));
		fnames = calloc(MAX_FILES_PER_UNIT, sizeof(*fnames));
		fdirs = calloc(MAX_FILES_PER_UNIT, sizeof(*fdirs));
		if (!dnames || !fnames || !fdirs)
			goto out;
		memcpy(dnames, tmpd, n_dirs * sizeof(*dnames));
		n_files = 1;
		fnames[0] = "";
		for (;;) {
			const char *fn = rd_str(c);
			if (!c->ok || !fn[0])
				break;
			uint64_t di = rd_uleb(c);
			rd_uleb(c);
			rd_uleb(c);
			if (n_files < MAX_FILES_PER_UNIT) {
				fnames[n_files] = fn;
				fdirs[n_files++] = di;
			}
		}
	}
	if (!c->ok)
		goto out;
	file_ids = calloc(n_files ? n_files : 1, sizeof(*file_ids));
	if (!file_ids)
		goto out;

	/* the program */
	c->p = prog;
	uint64_t addr = 0, file = version >= 5 ? 0 : 1;
	int64_t line = 1;
	int started = 0;
#define EMIT(end)                                                              \
	do {                                                                   \
		uint32_t fid = 0;                                              \
		if (!(end) && file < n_files) {                                \
			if (!file_ids[file]) {                                 \
				uint64_t di = fdirs[file];                     \
				file_ids[file] = add_name(                     \
					d, version >= 5 ? dnames[0] : NULL,    \
					di < n_dirs ? dnames[di] : "",         \
					fnames[file]);                         \
			}                                                      \
			fid = file_ids[file];                                  \
		}                                                              \
		if ((end) || fid)                                              \
			if (add_row(d, addr,                                   \
				    (end) ? 0                                  \
					  : (uint32_t)(line > 0 ? line : 0),   \
				    fid) < 0)                                  \
				goto out;                                      \
	} while (0)
	while (c->ok && c->p < c->end) {
		unsigned op = (unsigned)rd_n(c, 1);
		if (op >= opcode_base) {
			unsigned adj = op - opcode_base;
			addr += (uint64_t)(adj / line_range) * min_inst;
			line += line_base + (int)(adj % line_range);
			EMIT(0);
			started = 1;
			continue;
		}
		switch (op) {
		case 0: { /* extended */
			uint64_t len = rd_uleb(c);
			if (!c->ok || len == 0 ||
			    len > (uint64_t)(c->end - c->p)) {
				c->ok = 0;
				break;
			}
			const uint8_t *next = c->p + len;
			unsigned sub = (unsigned)rd_n(c, 1);
			if (sub == 1) { /* end_sequence */
				if (started)
					EMIT(1);
				addr = 0;
				file = version >= 5 ? 0 : 1;
				line = 1;
				started = 0;
			} else if (sub == 2 && len == 9) { /* set_address */
				addr = rd_n(c, 8);
			}
			c->p = next;
			break;
		}
		case 1: /* copy */
			EMIT(0);
			started = 1;
			break;
		case 2: /* advance_pc */
			addr += rd_uleb(c) * min_inst;
			break;
		case 3: /* advance_line */
			line += rd_sleb(c);
			break;
		case 4: /* set_file */
			file = rd_uleb(c);
			break;
		case 8: /* const_add_pc */
			addr += (uint64_t)((255 - opcode_base) / line_range) *
				min_inst;
			break;
		case 9: /* fixed_advance_pc */
			addr += rd_n(c, 2);
			break;
		default:
			for (unsigned i = 0; i < std_len[op]; i++)
				rd_uleb(c);
			break;
		}
	}
#undef EMIT
	rc = 0;
out:
	free(dnames);
	free(ddirs);
	free(fnames);
	free(fdirs);
	free(file_ids);
	return rc;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address, an end of sequence before a start */
	return (x->line != 0) - (y->line != 0);
}

struct dwarfline *dwarfline_parse(const uint8_t *line, size_t line_len,
				  const uint8_t *line_str, size_t line_str_len,
				  const uint8_t *str, size_t str_len)
{
	struct dwarfline *d = calloc(1, sizeof(*d));
	struct sects s = { line_str, str, line_str_len, str_len };
	struct cur c = { line, line + line_len, 1 };
	if (!d)
		return NULL;
	idhash_init(&d->name_hash);
	while (c.ok && c.p < c.end) {
		int off64 = 0;
		uint64_t len = rd_n(&c, 4);
		if (len == 0xffffffffu) {
			len = rd_n(&c, 8);
			off64 = 1;
		} else if (len >= 0xfffffff0u) {
			break;
		}
		if (!c.ok || len > (uint64_t)(c.end - c.p))
			break;
		struct cur u = { c.p, c.p + len, 1 };
		parse_unit(d, &u, off64, &s);
		c.p += len;
		if (d->n_rows >= DWARFLINE_MAX_ROWS)
			break;
	}
	if (!d->n_rows) {
		dwarfline_free(d);
		return NULL;
	}
	qsort(d->rows, d->n_rows, sizeof(*d->rows), row_cmp);
	return d;
}

/* A section's bytes, or NULL. */
static uint8_t *read_sect(int fd, uint64_t size, const Elf64_Shdr *sh)
{
	uint8_t *buf;
	size_t done = 0;
	if (!sh || sh->sh_type == SHT_NOBITS || sh->sh_offset > size ||
	    sh->sh_size > size - sh->sh_offset || sh->sh_size > (512u << 20) ||
	    (sh->sh_flags & SHF_COMPRESSED))
		return NULL;
	buf = malloc(sh->sh_size ? sh->sh_size : 1);
	while (buf && done < sh->sh_size) {
		ssize_t r = pread(fd, buf + done, sh->sh_size - done,
				  (off_t)(sh->sh_offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return NULL;
		}
		done += (size_t)r;
	}
	return buf;
}

struct dwarfline *dwarfline_load(int fd, uint64_t size, const Elf64_Ehdr *eh,
				 const Elf64_Shdr *sh, unsigned n_sh)
{
	const Elf64_Shdr *sl = NULL, *sls = NULL, *ss = NULL;
	uint8_t *names, *line = NULL, *line_str = NULL, *str = NULL;
	struct dwarfline *d = NULL;

	if (!sh || eh->e_shstrndx >= n_sh)
		return NULL;
	names = read_sect(fd, size, &sh[eh->e_shstrndx]);
	if (!names)
		return NULL;
	uint64_t nlen = sh[eh->e_shstrndx].sh_size;
	for (unsigned i = 0; i < n_sh; i++) {
		uint64_t o = sh[i].sh_name;
		if (o >= nlen || !memchr(names + o, 0, nlen - o))
			continue;
		const char *nm = (const char *)names + o;
		if (!strcmp(nm, ".debug_line"))
			sl = &sh[i];
		else if (!strcmp(nm, ".debug_line_str"))
			sls = &sh[i];
		else if (!strcmp(nm, ".debug_str"))
			ss = &sh[i];
	}
	free(names);
	if (!sl || !(line = read_sect(fd, size, sl)))
		return NULL;
	line_str = read_sect(fd, size, sls);
	str = read_sect(fd, size, ss);
	d = dwarfline_parse(line, sl->sh_size, line_str,
			    line_str ? sls->sh_size : 0, str,
			    str ? ss->sh_size : 0);
	free(line);
	free(line_str);
	free(str);
	return d;
}

void dwarfline_free(struct dwarfline *d)
{
	if (!d)
		return;
	free(d->rows);
	free(d->names);
	idhash_fini(&d->name_hash);
	free(d);
}

size_t dwarfline_bytes(const struct dwarfline *d)
{
	return d->cap_rows * sizeof(*d->rows) + d->names_cap +
	       idhash_mem(&d->name_hash);
}

int dwarfline_find(const struct dwarfline *d, uint64_t vaddr,
		   const char **file, uint32_t *line)
{
	size_t lo = 0, hi = d->n_rows;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->rows[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || d->rows[lo - 1].line == 0)
		return 0;
	*file = d->names + d->rows[lo - 1].file - 1;
	*line = d->rows[lo - 1].line;
	return 1;
}
