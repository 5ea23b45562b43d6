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
#include "common/sorted.h"
#include "pyprof/bytecur.h"

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
	char *names; /* NUL-terminated file names */
	size_t names_len, names_cap;
	struct idhash name_hash;
};

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
static const char *rd_form_str(struct bytecur *c, uint64_t form, int off64,
			       const struct sects *s, int *bad)
{
	uint64_t off;
	switch (form) {
	case 0x08: /* DW_FORM_string */
		return bytecur_str(c);
	case 0x1f: /* DW_FORM_line_strp */
	case 0x0e: /* DW_FORM_strp */
		off = bytecur_n(c, off64 ? 8 : 4);
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
static uint64_t rd_form_u(struct bytecur *c, uint64_t form, int off64, int *bad)
{
	switch (form) {
	case 0x0b:
		return bytecur_n(c, 1); /* data1 */
	case 0x05:
		return bytecur_n(c, 2); /* data2 */
	case 0x06:
		return bytecur_n(c, 4); /* data4 */
	case 0x07:
		return bytecur_n(c, 8); /* data8 */
	case 0x0f:
		return bytecur_uleb(c); /* udata */
	case 0x1e:
		bytecur_skip(c, 16);
		return 0; /* data16 (MD5) */
	case 0x09:
		bytecur_skip(c, bytecur_uleb(c));
		return 0; /* block */
	case 0x08:
		bytecur_str(c);
		return 0; /* string */
	case 0x1f:
	case 0x0e:
		bytecur_n(c, off64 ? 8 : 4);
		return 0;
	default:
		*bad = 1;
		return 0;
	}
}

/* DWARF 5 directory or file entry formats and entries. names[i] gets
 * each entry's path, dirs[i] its directory index. */
static int read_v5_entries(struct bytecur *c, int off64, const struct sects *s,
			   const char ***names, uint64_t **dirs, uint64_t *n)
{
	uint64_t fmt[16][2];
	unsigned n_fmt = (unsigned)bytecur_n(c, 1);
	int bad = 0;
	if (n_fmt > 16)
		return -1;
	for (unsigned i = 0; i < n_fmt; i++) {
		fmt[i][0] = bytecur_uleb(c);
		fmt[i][1] = bytecur_uleb(c);
	}
	*n = bytecur_uleb(c);
	if (c->bad || *n > MAX_FILES_PER_UNIT)
		return -1;
	*names = calloc(*n ? *n : 1, sizeof(**names));
	*dirs = calloc(*n ? *n : 1, sizeof(**dirs));
	if (!*names || !*dirs)
		return -1;
	for (uint64_t k = 0; k < *n && !c->bad && !bad; k++) {
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
	return !c->bad && !bad ? 0 : -1;
}

/* One unit's header: what its line program needs. */
struct unit {
	unsigned version, min_inst, line_range, opcode_base;
	int line_base;
	uint8_t std_len[256]; /* operands of each standard opcode */
	const uint8_t *prog;  /* the program, to the unit's end */
	const char **dnames, **fnames;
	uint64_t *ddirs, *fdirs, n_dirs, n_files;
	uint32_t *file_ids; /* each file's name id (add_name), 0 unmade */
};

/* The fixed fields of a unit's header, up to its file tables. 0 or -1. */
static int read_unit_header(struct bytecur *c, int off64, struct unit *u)
{
	u->version = (unsigned)bytecur_n(c, 2);
	if (u->version < 2 || u->version > 5)
		return -1;
	if (u->version >= 5) {
		unsigned asz = (unsigned)bytecur_n(c, 1);
		bytecur_n(c, 1); /* segment selector size */
		if (asz != 8)
			return -1;
	}
	uint64_t hlen = bytecur_n(c, off64 ? 8 : 4);
	if (c->bad || hlen > (uint64_t)(c->end - c->p))
		return -1;
	u->prog = c->p + hlen;
	u->min_inst = (unsigned)bytecur_n(c, 1);
	if (u->version >= 4)
		bytecur_n(c, 1); /* maximum_operations_per_instruction (VLIW) */
	bytecur_n(c, 1);	 /* default_is_stmt */
	u->line_base = (int8_t)bytecur_n(c, 1);
	u->line_range = (unsigned)bytecur_n(c, 1);
	u->opcode_base = (unsigned)bytecur_n(c, 1);
	for (unsigned i = 1; i < u->opcode_base; i++)
		u->std_len[i] = (uint8_t)bytecur_n(c, 1);
	if (c->bad || u->line_range == 0 || u->opcode_base == 0)
		return -1;
	return 0;
}

/* DWARF 2-4: include_directories, then file_names, each list ended by an
 * empty string; both 1-based (entry 0 is ""). 0 or -1. */
static int read_v4_entries(struct bytecur *c, struct unit *u)
{
	const char *tmpd[1024];
	u->n_dirs = 1;
	tmpd[0] = "";
	for (;;) {
		const char *dn = bytecur_str(c);
		if (c->bad || !dn[0])
			break;
		if (u->n_dirs < 1024)
			tmpd[u->n_dirs++] = dn;
	}
	u->dnames = calloc(u->n_dirs, sizeof(*u->dnames));
	u->fnames = calloc(MAX_FILES_PER_UNIT, sizeof(*u->fnames));
	u->fdirs = calloc(MAX_FILES_PER_UNIT, sizeof(*u->fdirs));
	if (!u->dnames || !u->fnames || !u->fdirs)
		return -1;
	memcpy(u->dnames, tmpd, u->n_dirs * sizeof(*u->dnames));
	u->n_files = 1;
	u->fnames[0] = "";
	for (;;) {
		const char *fn = bytecur_str(c);
		if (c->bad || !fn[0])
			break;
		uint64_t di = bytecur_uleb(c);
		bytecur_uleb(c); /* modification time */
		bytecur_uleb(c); /* length */
		if (u->n_files < MAX_FILES_PER_UNIT) {
			u->fnames[u->n_files] = fn;
			u->fdirs[u->n_files++] = di;
		}
	}
	return 0;
}

/* The header's directory and file tables, and room for the files' name
 * ids. 0 or -1. */
static int read_file_tables(struct bytecur *c, int off64, const struct sects *s,
			    struct unit *u)
{
	if (u->version >= 5) {
		if (read_v5_entries(c, off64, s, &u->dnames, &u->ddirs,
				    &u->n_dirs) < 0 ||
		    read_v5_entries(c, off64, s, &u->fnames, &u->fdirs,
				    &u->n_files) < 0)
			return -1;
	} else if (read_v4_entries(c, u) < 0) {
		return -1;
	}
	if (c->bad)
		return -1;
	u->file_ids = calloc(u->n_files ? u->n_files : 1,
			     sizeof(*u->file_ids));
	return u->file_ids ? 0 : -1;
}

static void free_unit(struct unit *u)
{
	free(u->dnames);
	free(u->ddirs);
	free(u->fnames);
	free(u->fdirs);
	free(u->file_ids);
}

/* The name id of the unit's file entry, made on first use; 0 for none. */
static uint32_t file_id(struct dwarfline *d, struct unit *u, uint64_t file)
{
	if (file >= u->n_files)
		return 0;
	if (!u->file_ids[file]) {
		uint64_t di = u->fdirs[file];
		u->file_ids[file] = add_name(
			d, u->version >= 5 ? u->dnames[0] : NULL,
			di < u->n_dirs ? u->dnames[di] : "", u->fnames[file]);
	}
	return u->file_ids[file];
}

/* The line-number state machine's registers that make a row. */
struct line_state {
	uint64_t addr, file;
	int64_t line;
	int started; /* a row since the sequence began */
};

static void start_sequence(struct line_state *st, const struct unit *u)
{
	*st = (struct line_state){ .file = u->version >= 5 ? 0 : 1,
				   .line = 1 };
}

/* A row at the state's address: its file and line, or (end) the end of
 * a sequence. A row whose file has no name is left out. 0, or < 0 when
 * the table is full or memory ran out. */
static int emit_row(struct dwarfline *d, struct unit *u,
		    const struct line_state *st, int end)
{
	uint32_t fid = end ? 0 : file_id(d, u, st->file);
	if (!end && !fid)
		return 0;
	return add_row(d, st->addr,
		       end ? 0 : (uint32_t)(st->line > 0 ? st->line : 0), fid);
}

/* DW_LNS_extended_op: its length, then the sub-opcode. 0, or < 0 from
 * emit_row; a malformed one sets c->bad. */
static int run_extended_op(struct dwarfline *d, struct bytecur *c,
			   struct unit *u, struct line_state *st)
{
	uint64_t len = bytecur_uleb(c);
	if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		return 0;
	}
	const uint8_t *next = c->p + len;
	unsigned sub = (unsigned)bytecur_n(c, 1);
	if (sub == 1) { /* end_sequence */
		if (st->started && emit_row(d, u, st, 1) < 0)
			return -1;
		start_sequence(st, u);
	} else if (sub == 2 && len == 9) { /* set_address */
		st->addr = bytecur_n(c, 8);
	}
	c->p = next;
	return 0;
}

/*
 * The line-number program interpreter: runs the unit's opcodes from
 * u->prog to the unit's end, adding a row at each special opcode, copy
 * and end_sequence. 0 (a malformed program keeps the rows before it), or
 * -1 when the rows could not be added.
 */
static int run_line_program(struct dwarfline *d, struct bytecur *c,
			    struct unit *u)
{
	struct line_state st;
	start_sequence(&st, u);
	c->p = u->prog;
	while (!c->bad && c->p < c->end) {
		unsigned op = (unsigned)bytecur_n(c, 1);
		if (op >= u->opcode_base) { /* special */
			unsigned adj = op - u->opcode_base;
			st.addr += (uint64_t)(adj / u->line_range) * u->min_inst;
			st.line += u->line_base + (int)(adj % u->line_range);
			if (emit_row(d, u, &st, 0) < 0)
				return -1;
			st.started = 1;
			continue;
		}
		switch (op) {
		case 0: /* extended */
			if (run_extended_op(d, c, u, &st) < 0)
				return -1;
			break;
		case 1: /* copy */
			if (emit_row(d, u, &st, 0) < 0)
				return -1;
			st.started = 1;
			break;
		case 2: /* advance_pc */
			st.addr += bytecur_uleb(c) * u->min_inst;
			break;
		case 3: /* advance_line */
			st.line += bytecur_sleb(c);
			break;
		case 4: /* set_file */
			st.file = bytecur_uleb(c);
			break;
		case 8: /* const_add_pc */
			st.addr += (uint64_t)((255 - u->opcode_base) /
					      u->line_range) *
				   u->min_inst;
			break;
		case 9: /* fixed_advance_pc */
			st.addr += bytecur_n(c, 2);
			break;
		default: /* one we do not follow: skip its operands */
			for (unsigned i = 0; i < u->std_len[op]; i++)
				bytecur_uleb(c);
			break;
		}
	}
	return 0;
}

/* Reads one unit's header and runs its program (the unit's bytes are c).
 * 0, or -1 to skip the rest of this unit. */
static int parse_unit(struct dwarfline *d, struct bytecur *c, int off64,
		      const struct sects *s)
{
	struct unit u = { 0 };
	int rc = -1;
	if (read_unit_header(c, off64, &u) < 0)
		return -1;
	if (read_file_tables(c, off64, s, &u) == 0)
		rc = run_line_program(d, c, &u);
	free_unit(&u);
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
	struct bytecur c = { line, line + line_len, 0 };
	if (!d)
		return NULL;
	idhash_init(&d->name_hash);
	while (!c.bad && c.p < c.end) {
		int off64 = 0;
		uint64_t len = bytecur_n(&c, 4);
		if (len == 0xffffffffu) {
			len = bytecur_n(&c, 8);
			off64 = 1;
		} else if (len >= 0xfffffff0u) {
			break;
		}
		if (c.bad || len > (uint64_t)(c.end - c.p))
			break;
		struct bytecur u = { c.p, c.p + len, 0 };
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
	size_t lo = sorted_upper_u64(d->rows, d->n_rows, sizeof(*d->rows),
				     offsetof(struct row, addr), vaddr);
	if (lo == 0 || d->rows[lo - 1].line == 0)
		return 0;
	*file = d->names + d->rows[lo - 1].file - 1;
	*line = d->rows[lo - 1].line;
	return 1;
}
