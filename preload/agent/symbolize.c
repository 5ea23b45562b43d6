/*
 * symbolize.c - see symbolize.h. Agent thread only.
 */
#include "symbolize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/guard.h"
#include "cpython/pycode.h"

#define NAME_CAP 1024
#define PATH_CAP 4096
#define TABLE_SMALL 65536
#define TABLE_MAX (4u << 20)

/* code_map value of an entry whose code object died: the address may
 * come back as another object with the same fingerprint (exec'd code:
 * same "<module>", "<string>" and first line), so it must be read anew. */
#define STALE UINT32_MAX

/* Code addresses that have an entry, as a lock-free hint for the death
 * hook (set bits are never cleared; a false positive costs a lock). */
#define KNOWN_BITS (1u << 16)
static uint8_t known[KNOWN_BITS / 8];

static unsigned known_bit(uintptr_t code)
{
	return (unsigned)((code >> 4) * 0x9E3779B1u >> 16) % KNOWN_BITS;
}


struct code_entry {
	uint32_t func; /* interned function id                */
	int firstlineno;
	uint8_t *table; /* copy of the line table              */
	uint32_t table_len;
};

struct symbolizer {
	struct intern *in;
	struct imap code_map; /* (code, fp) -> entry index + 1         */
	struct imap loc_map;  /* (entry index, offset) -> location id  */
	struct code_entry *entries;
	uint32_t n_entries, cap_entries;
	uint32_t unknown_loc;
	unsigned long n_unknown;
	uint8_t *scratch; /* TABLE_MAX bytes for line tables       */
};

struct symbolizer *symbolize_new(struct intern *in)
{
	struct symbolizer *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->in = in;
	s->scratch = malloc(TABLE_SMALL);
	if (!s->scratch) {
		free(s);
		return NULL;
	}
	return s;
}

void symbolize_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->n_entries; i++)
		free(s->entries[i].table);
	free(s->entries);
	free(s->scratch);
	imap_free(&s->code_map);
	imap_free(&s->loc_map);
	free(s);
}

void symbolize_stats(const struct symbolizer *s, unsigned long *n_code,
		     unsigned long *n_unknown)
{
	*n_code = s->n_entries;
	*n_unknown = s->n_unknown;
}

static int rd(void *dst, const void *src, size_t n)
{
	return guard_copy(dst, src, n);
}

uint32_t symbolize_pseudo(struct symbolizer *s, const char *name)
{
	uint32_t n = intern_str(s->in, name, strlen(name));
	uint32_t empty = intern_str(s->in, "", 0);
	uint32_t f = n && empty ? intern_func(s->in, n, n, empty, 0) : 0;
	return f ? intern_loc(s->in, f, 0) : 0;
}

/* The fields the fingerprint covers, read now. 0 or -EFAULT. */
struct code_fields {
	uintptr_t type, name, qualname, file, table;
	int32_t firstlineno;
};

static int read_fields(const struct pyabi *a, uintptr_t code,
		       struct code_fields *f)
{
	memset(f, 0, sizeof *f);
	if (rd(&f->type, (void *)(code + a->ob_type), sizeof f->type) < 0 ||
	    rd(&f->name, (void *)(code + a->co_name), sizeof f->name) < 0 ||
	    rd(&f->file, (void *)(code + a->co_filename), sizeof f->file) < 0 ||
	    rd(&f->table, (void *)(code + a->co_linetable),
	       sizeof f->table) < 0 ||
	    rd(&f->firstlineno, (void *)(code + a->co_firstlineno),
	       sizeof f->firstlineno) < 0)
		return -EFAULT;
	f->qualname = f->name;
	if (a->co_qualname != PYABI_NONE &&
	    rd(&f->qualname, (void *)(code + a->co_qualname),
	       sizeof f->qualname) < 0)
		return -EFAULT;
	return 0;
}

/* Whether the object at str is still a str: a code object that died
 * after the sample keeps its fields (and so its fingerprint) until its
 * memory is reused, and is named from them if its strings are still
 * there (a module's code, freed once the import is done); a string whose
 * memory went to another object has another type. */
static int is_str(uintptr_t str)
{
	uintptr_t type;
	return !sampler.str_type ||
	       (rd(&type, (void *)(str + (uintptr_t)sampler.abi->ob_type),
		   sizeof type) == 0 &&
		type == sampler.str_type);
}

static int fields_match(const struct code_fields *f, uint32_t fp)
{
	return f->type == sampler.code_type &&
	       sampler_fp(f->qualname, f->file, (uint32_t)f->firstlineno) == fp;
}

/* Reads and interns the code object; returns the entry index + 1, or 0
 * if it cannot be named. */
static uint32_t read_code(struct symbolizer *s, uintptr_t code, uint32_t fp)
{
	const struct pyabi *a = sampler.abi;
	struct code_fields f, again;
	char name[NAME_CAP], sysname[NAME_CAP], file[PATH_CAP];
	uint8_t *table = NULL;
	int tlen;

	if (read_fields(a, code, &f) < 0 || !fields_match(&f, fp))
		return 0;
	int nq = pycode_read_str(a, (void *)f.qualname, rd, name, sizeof name);
	int nn = pycode_read_str(a, (void *)f.name, rd, sysname, sizeof sysname);
	int nf = pycode_read_str(a, (void *)f.file, rd, file, sizeof file);
	if (nq < 0 || nn < 0 || nf < 0)
		return 0;
	tlen = pycode_read_bytes(a, (void *)f.table, rd, s->scratch,
				 TABLE_SMALL);
	if (tlen == -E2BIG) {
		uint8_t *big = malloc(TABLE_MAX);
		if (big) {
			tlen = pycode_read_bytes(a, (void *)f.table, rd, big,
						 TABLE_MAX);
			if (tlen >= 0) {
				table = realloc(big, tlen ? (size_t)tlen : 1);
				if (!table)
					table = big;
			} else {
				free(big);
			}
		}
	} else if (tlen >= 0) {
		table = malloc(tlen ? (size_t)tlen : 1);
		if (table)
			memcpy(table, s->scratch, (size_t)tlen);
	}
	if (tlen < 0 || !table)
		goto fail;
	/* the object must not have changed while we copied, nor its
	 * strings become other objects */
	if (read_fields(a, code, &again) < 0 || !fields_match(&again, fp) ||
	    !is_str(f.qualname) || !is_str(f.name) || !is_str(f.file) ||
	    again.table != f.table || again.name != f.name)
		goto fail;

	uint32_t sn = intern_str(s->in, name, (size_t)nq);
	uint32_t ss = intern_str(s->in, sysname, (size_t)nn);
	uint32_t sf = intern_str(s->in, file, (size_t)nf);
	uint32_t func = sn && ss && sf ? intern_func(s->in, sn, ss, sf,
						     f.firstlineno)
				       : 0;
	if (!func)
		goto fail;
	if (s->n_entries == s->cap_entries) {
		uint32_t nc = s->cap_entries ? s->cap_entries * 2 : 256;
		void *p = realloc(s->entries, nc * sizeof *s->entries);
		if (!p)
			goto fail;
		s->entries = p;
		s->cap_entries = nc;
	}
	s->entries[s->n_entries] = (struct code_entry){
		func, f.firstlineno, table, (uint32_t)tlen
	};
	uint32_t idx = ++s->n_entries;
	unsigned kb = known_bit(code);
	__atomic_fetch_or(&known[kb / 8], (uint8_t)(1u << (kb % 8)),
			  __ATOMIC_RELAXED);
	if (imap_put(&s->code_map, code, fp, idx) < 0) {
		s->n_entries--;
		goto fail;
	}
	return idx;
fail:
	free(table);
	return 0;
}

int symbolize_maybe_known(uintptr_t code)
{
	unsigned b = known_bit(code);
	return __atomic_load_n(&known[b / 8], __ATOMIC_RELAXED) & (1u << (b % 8));
}

void symbolize_forget(struct symbolizer *s, uintptr_t code)
{
	struct code_fields f;
	if (read_fields(sampler.abi, code, &f) < 0)
		return;
	uint32_t fp = sampler_fp(f.qualname, f.file, (uint32_t)f.firstlineno);
	if (imap_get(&s->code_map, code, fp))
		imap_put(&s->code_map, code, fp, STALE);
}

uint32_t symbolize_frame(struct symbolizer *s, const struct raw_frame *f)
{
	uint64_t code = raw_code(f); /* without the RAW_ENTRY bit */
	uint32_t idx = imap_get(&s->code_map, code, f->fp);
	if (!idx || idx == STALE)
		idx = read_code(s, (uintptr_t)code, f->fp);
	if (!idx) {
		/* not cached: the address may hold a live object later */
		s->n_unknown++;
		if (!s->unknown_loc)
			s->unknown_loc = symbolize_pseudo(s, "[unknown]");
		return s->unknown_loc;
	}
	uint32_t loc = imap_get(&s->loc_map, idx, f->offset);
	if (loc)
		return loc;
	const struct code_entry *e = &s->entries[idx - 1];
	int line = f->offset == RAW_NOT_STARTED
			   ? e->firstlineno
			   : pycode_addr2line(sampler.abi->lines_kind, e->table,
					      e->table_len, e->firstlineno,
					      f->offset);
	if (line < 0)
		line = e->firstlineno;
	loc = intern_loc(s->in, e->func, line);
	if (loc)
		imap_put(&s->loc_map, idx, f->offset, loc);
	return loc;
}
