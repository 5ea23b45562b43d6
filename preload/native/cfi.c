/*
 * cfi.c - see cfi.h. Agent thread only (cfi_lookup: any thread).
 *
 * Per object: PT_GNU_EH_FRAME locates .eh_frame_hdr, whose sorted table
 * (initial location, FDE address; datarel|sdata4, which is what GNU ld
 * writes) lists every FDE. Each FDE's CFA program, after its CIE's initial
 * instructions, is run to emit rows (DWARF 5 section 6.4, x86-64 register
 * numbers: RBP 6, RSP 7, return address 16). Reads are from the object's
 * mapped memory, bounded by the segment that holds them, under the fault
 * guard (an object unloaded while we read costs its table, nothing more).
 *
 * Example: a function whose FDE says
 *     DW_CFA_def_cfa rsp+8; DW_CFA_offset ra at cfa-8     (the CIE)
 *     advance 1; def_cfa_offset 16; offset rbp at cfa-16  (push %rbp)
 *     advance 3; def_cfa_register rbp                     (mov %rsp,%rbp)
 *     advance 40; def_cfa rsp+8                           (leave)
 * becomes the rows
 *     +0  RSP+8   rbp unchanged
 *     +1  RSP+16  rbp at CFA-16 (slot 2)
 *     +4  RBP+16  slot 2
 *     +44 RSP+8   slot 2
 *     end NONE    (until another FDE starts)
 */
#include "cfi.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyprof/bytecur.h"

#include "base/clock.h"
#include "base/guard.h"
#include "objects.h"
#include "base/log.h"

#define MAX_OBJECTS 4096
#define MAX_ROWS_PER_OBJECT (8u << 20)
#define STATE_STACK 16
#define DW_RBP 6 /* DWARF register numbers, x86-64 */
#define DW_RSP 7
#define DW_RA 16

struct cfi_index *cfi_current;

/* ---- built objects and retired memory ------------------------------------ */

struct built {
	uint64_t bias;
	const void *phdr; /* the loader's program headers: identity */
	struct cfi_row *rows;
	uint32_t n_rows, n_none;
	int seen;
};

/* Each thread's cache of rules found (cfi.h): set by native.c, read by
 * the unwinder in signal context (signal/sig_unwind.c). Defined here,
 * in the lower layer, with the tables it caches. */
__thread struct cfi_slot *cfi_thread_cache;

static struct built *objs;
static int n_objs, cap_objs;
/* the loader's counters when the index was built; no real count is ~0 */
static struct objects_gen last_gen = { ~0ull, ~0ull };
static uint32_t gen;

struct retired {
	void *p;
	uint64_t at_ns;
};
static struct retired *retired;
static int n_retired, cap_retired;

static void retire(void *p)
{
	if (!p)
		return;
	if (n_retired == cap_retired) {
		int nc = cap_retired ? 2 * cap_retired : 16;
		void *q = realloc(retired, (size_t)nc * sizeof *retired);
		if (!q)
			return; /* leak rather than free too early */
		retired = q;
		cap_retired = nc;
	}
	retired[n_retired++] = (struct retired){ p, mono_ns() };
}

static void free_retired(int all)
{
	uint64_t now = mono_ns();
	int w = 0;
	for (int i = 0; i < n_retired; i++) {
		if (all || now - retired[i].at_ns >= CFI_RETIRE_NS)
			free(retired[i].p);
		else
			retired[w++] = retired[i];
	}
	n_retired = w;
}

/* ---- reading the object's memory ----------------------------------------- */

/* A DW_EH_PE-encoded pointer; datarel is relative to data_base. */
static uint64_t get_enc(struct bytecur *c, uint8_t enc, uint64_t data_base)
{
	uint64_t here = (uint64_t)(uintptr_t)c->p, v;
	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00:
		v = bytecur_n(c, 8);
		break;
	case 0x01:
		v = bytecur_uleb(c);
		break;
	case 0x02:
		v = bytecur_n(c, 2);
		break;
	case 0x03:
		v = bytecur_n(c, 4);
		break;
	case 0x04:
		v = bytecur_n(c, 8);
		break;
	case 0x09:
		v = (uint64_t)bytecur_sleb(c);
		break;
	case 0x0a:
		v = (uint64_t)(int64_t)(int16_t)bytecur_n(c, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int64_t)(int32_t)bytecur_n(c, 4);
		break;
	case 0x0c:
		v = bytecur_n(c, 8);
		break;
	default:
		c->bad = 1;
		return 0;
	}
	switch (enc & 0x70) {
	case 0x00:
		break;
	case 0x10:
		v += here;
		break; /* pcrel */
	case 0x30:
		v += data_base;
		break; /* datarel */
	default:
		c->bad = 1;
		return 0; /* textrel, funcrel, aligned */
	}
	if (enc & 0x80) /* indirect: not used for FDE addresses */
		c->bad = 1;
	return v;
}

/* ---- the CFA program ------------------------------------------------------- */

enum { R_SAME = 0,
       R_OFFSET = 1,
       R_UNDEF = 2,
       R_OTHER = 3 };

struct state {
	int cfa_reg; /* DWARF register, -1 for an expression */
	int64_t cfa_off;
	int rbp, ra; /* R_* */
	int64_t rbp_off, ra_off;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_aug_len, signal;
	struct bytecur init; /* initial instructions */
};

struct rows {
	struct cfi_row *v;
	uint32_t n, cap, n_none;
	int oom;
};

static uint32_t encode(const struct state *s)
{
	if (s->ra == R_UNDEF)
		return CFI_RULE(CFI_END, 0, 0);
	if (s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP)
		return CFI_NONE;
	if (s->ra != R_OFFSET || s->ra_off != -8)
		return CFI_NONE;
	if (s->cfa_off < 0 || s->cfa_off >= (1 << 20))
		return CFI_NONE;
	uint32_t slot = 0;
	if (s->rbp == R_OFFSET) {
		if (s->rbp_off >= 0 || s->rbp_off % 8 || -s->rbp_off / 8 >= 1024)
			return CFI_NONE;
		slot = (uint32_t)(-s->rbp_off / 8);
	} else if (s->rbp != R_SAME) {
		return CFI_NONE;
	}
	return CFI_RULE(s->cfa_reg == DW_RSP ? CFI_RSP : CFI_RBP,
			(uint32_t)s->cfa_off, slot);
}

static void emit(struct rows *r, uint64_t pc, uint32_t rule)
{
	if (r->oom)
		return;
	/* same place: the later rule wins; same rule: nothing new */
	if (r->n && r->v[r->n - 1].pc == (uint32_t)pc) {
		r->n_none -= CFI_KIND(r->v[r->n - 1].rule) == CFI_NONE;
		r->n--;
	}
	if (r->n && r->v[r->n - 1].rule == rule)
		return;
	if (r->n == r->cap) {
		uint32_t nc = r->cap ? 2 * r->cap : 4096;
		void *p = nc > MAX_ROWS_PER_OBJECT
				  ? NULL
				  : realloc(r->v, (size_t)nc * sizeof *r->v);
		if (!p) {
			r->oom = 1;
			return;
		}
		r->v = p;
		r->cap = nc;
	}
	r->v[r->n++] = (struct cfi_row){ (uint32_t)pc, rule };
	r->n_none += CFI_KIND(rule) == CFI_NONE;
}

static void set_reg(struct state *s, uint64_t reg, int rule, int64_t off)
{
	if (reg == DW_RBP) {
		s->rbp = rule;
		s->rbp_off = off;
	} else if (reg == DW_RA) {
		s->ra = rule;
		s->ra_off = off;
	}
	/* other registers do not matter to us */
}

/* DW_CFA_restore(_extended): reg's rule back to what the CIE's initial
 * instructions left in *init (none while those run). */
static void restore_reg(struct state *s, const struct state *init,
			uint64_t reg)
{
	if (init && reg == DW_RBP) {
		s->rbp = init->rbp;
		s->rbp_off = init->rbp_off;
	} else if (init && reg == DW_RA) {
		s->ra = init->ra;
		s->ra_off = init->ra_off;
	}
}

/* Steps over a DWARF expression: its ULEB128 length, then its bytes.
 * -1 (and bad) if it runs past the end. */
static int skip_expression(struct bytecur *c)
{
	uint64_t n = bytecur_uleb(c);
	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		return -1;
	}
	c->p += n;
	return 0;
}

/* A DW_CFA_advance_loc*: the row for [*loc, *loc + delta) is the state
 * so far; emitted unless only evaluating (rows NULL). */
static void advance_loc(struct rows *rows, uint64_t *loc,
			const struct state *s, const struct cie *cie,
			uint64_t delta)
{
	if (rows)
		emit(rows, *loc, encode(s));
	*loc += delta * cie->code_align;
}

/*
 * The CFA program interpreter: runs the DW_CFA_* instructions over
 * [c->p, c->end). With rows == NULL it only evaluates (a CIE's initial
 * instructions into *s, init NULL). loc starts at pc_begin (relative to
 * bias); rows are emitted from it. Returns 0, or -1 on a malformed
 * program (the rows so far stand; the caller ends the FDE with a NONE
 * row).
 */
static int run_cfa_program(struct bytecur *c, const struct cie *cie,
			   struct state *s, const struct state *init,
			   struct rows *rows, uint64_t *loc)
{
	struct state stack[STATE_STACK];
	int depth = 0;
	while (!c->bad && c->p < c->end) {
		uint8_t op = (uint8_t)bytecur_n(c, 1);
		uint64_t reg;
		/* the three primary opcodes carry an operand in their low
		 * six bits; the extended ones have 0 in the top two */
		switch (op & 0xc0 ? op & 0xc0 : op) {
		case 0x40: /* advance_loc */
			advance_loc(rows, loc, s, cie, op & 0x3f);
			break;
		case 0x80: /* offset */
			set_reg(s, op & 0x3f, R_OFFSET,
				(int64_t)bytecur_uleb(c) * cie->data_align);
			break;
		case 0xc0: /* restore */
			restore_reg(s, init, op & 0x3f);
			break;
		case 0x00: /* nop */
			break;
		case 0x02: /* advance_loc1 */
			advance_loc(rows, loc, s, cie, bytecur_n(c, 1));
			break;
		case 0x03: /* advance_loc2 */
			advance_loc(rows, loc, s, cie, bytecur_n(c, 2));
			break;
		case 0x04: /* advance_loc4 */
			advance_loc(rows, loc, s, cie, bytecur_n(c, 4));
			break;
		case 0x05: /* offset_extended */
			reg = bytecur_uleb(c);
			set_reg(s, reg, R_OFFSET,
				(int64_t)bytecur_uleb(c) * cie->data_align);
			break;
		case 0x11: /* offset_extended_sf */
			reg = bytecur_uleb(c);
			set_reg(s, reg, R_OFFSET, bytecur_sleb(c) * cie->data_align);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = bytecur_uleb(c);
			set_reg(s, reg, R_OFFSET,
				-(int64_t)bytecur_uleb(c) * cie->data_align);
			break;
		case 0x06: /* restore_extended */
			restore_reg(s, init, bytecur_uleb(c));
			break;
		case 0x07: /* undefined */
			set_reg(s, bytecur_uleb(c), R_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_reg(s, bytecur_uleb(c), R_SAME, 0);
			break;
		case 0x09: /* register */
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf: a LEB128 all the same */
			reg = bytecur_uleb(c);
			bytecur_uleb(c); /* the other register, or the offset */
			set_reg(s, reg, R_OTHER, 0);
			break;
		case 0x0a: /* remember_state */
			if (depth == STATE_STACK)
				return -1;
			stack[depth++] = *s;
			break;
		case 0x0b: /* restore_state: every rule, the CFA's too (GCC's
			      epilogues rely on it) */
			if (depth == 0)
				return -1;
			*s = stack[--depth];
			break;
		case 0x0c: /* def_cfa */
			s->cfa_reg = (int)bytecur_uleb(c);
			s->cfa_off = (int64_t)bytecur_uleb(c);
			break;
		case 0x12: /* def_cfa_sf */
			s->cfa_reg = (int)bytecur_uleb(c);
			s->cfa_off = bytecur_sleb(c) * cie->data_align;
			break;
		case 0x0d: /* def_cfa_register */
			s->cfa_reg = (int)bytecur_uleb(c);
			break;
		case 0x0e: /* def_cfa_offset */
			s->cfa_off = (int64_t)bytecur_uleb(c);
			break;
		case 0x13: /* def_cfa_offset_sf */
			s->cfa_off = bytecur_sleb(c) * cie->data_align;
			break;
		case 0x0f: /* def_cfa_expression: not followed */
			if (skip_expression(c) == 0)
				s->cfa_reg = -1;
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = bytecur_uleb(c);
			if (skip_expression(c) == 0)
				set_reg(s, reg, R_OTHER, 0);
			break;
		case 0x2e: /* GNU_args_size */
			bytecur_uleb(c);
			break;
		case 0x01: /* set_loc: not produced for .eh_frame */
		default:
			return -1;
		}
	}
	return c->bad ? -1 : 0;
}

/* Parses the CIE at p (inside [lo, hi)). 0 or -1. */
static int parse_cie(const uint8_t *p, const uint8_t *lo, const uint8_t *hi,
		     struct cie *cie)
{
	struct bytecur c = { p, hi, 0 };
	(void)lo;
	memset(cie, 0, sizeof *cie);
	cie->fde_enc = 0; /* absptr */
	uint64_t len = bytecur_n(&c, 4);
	if (c.bad || len == 0 || len == 0xffffffffu ||
	    len > (uint64_t)(hi - c.p))
		return -1;
	const uint8_t *end = c.p + len;
	c.end = end;
	if (bytecur_n(&c, 4) != 0) /* CIE id in .eh_frame */
		return -1;
	unsigned version = (unsigned)bytecur_n(&c, 1);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	const char *aug = (const char *)c.p;
	while (!c.bad && c.p < c.end && *c.p)
		c.p++;
	bytecur_n(&c, 1); /* the NUL */
	if (version == 4) {
		if (bytecur_n(&c, 1) != 8) /* address size */
			return -1;
		bytecur_n(&c, 1);
	}
	if (aug[0] && aug[0] != 'z')
		return -1; /* "eh" and the like: not for x86-64 */
	cie->code_align = bytecur_uleb(&c);
	cie->data_align = bytecur_sleb(&c);
	cie->ra_reg = version == 1 ? bytecur_n(&c, 1) : bytecur_uleb(&c);
	if (aug[0] == 'z') {
		uint64_t alen = bytecur_uleb(&c);
		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return -1;
		const uint8_t *aend = c.p + alen;
		cie->has_aug_len = 1;
		for (const char *a = aug + 1; *a && !c.bad; a++) {
			if (*a == 'R') {
				cie->fde_enc = (uint8_t)bytecur_n(&c, 1);
			} else if (*a == 'P') {
				uint8_t enc = (uint8_t)bytecur_n(&c, 1);
				get_enc(&c, enc & 0x7f, 0);
			} else if (*a == 'L') {
				bytecur_n(&c, 1);
			} else if (*a == 'S') {
				cie->signal = 1;
			} else {
				break; /* unknown: skip the rest by length */
			}
		}
		c.p = aend;
	}
	if (c.bad || cie->ra_reg != DW_RA || cie->code_align == 0)
		return -1;
	cie->init = (struct bytecur){ c.p, end, 0 };
	return 0;
}

/*
 * Emits the rows of the FDE at fde (inside [lo, hi)): from its pc_begin
 * (relative to bias) to its end, then a NONE row there.
 */
static void do_fde(const uint8_t *fde, const uint8_t *lo, const uint8_t *hi,
		   uint64_t bias, struct rows *rows)
{
	struct bytecur c = { fde, hi, 0 };
	struct cie cie;
	struct state init, s;
	uint64_t len = bytecur_n(&c, 4);
	if (c.bad || len == 0 || len == 0xffffffffu ||
	    len > (uint64_t)(hi - c.p))
		return;
	const uint8_t *end = c.p + len;
	c.end = end;
	const uint8_t *idp = c.p;
	uint64_t cie_off = bytecur_n(&c, 4);
	if (c.bad || cie_off == 0 || cie_off > (uint64_t)(idp - lo))
		return;
	if (parse_cie(idp - cie_off, lo, hi, &cie) < 0)
		return;
	uint64_t pc_begin = get_enc(&c, cie.fde_enc, 0);
	uint64_t pc_range = get_enc(&c, cie.fde_enc & 0x0f, 0);
	if (c.bad || pc_begin < bias || pc_begin - bias > 0xffffffffu ||
	    pc_range > 0xffffffffu - (pc_begin - bias))
		return;
	if (cie.has_aug_len) {
		uint64_t alen = bytecur_uleb(&c);
		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return;
		c.p += alen;
	}
	uint64_t loc = pc_begin - bias, stop = loc + pc_range;
	memset(&init, 0, sizeof init);
	init.cfa_reg = -1;
	init.rbp = R_SAME;
	init.ra = R_OTHER;
	struct bytecur ic = cie.init;
	uint64_t dummy = loc;
	if (run_cfa_program(&ic, &cie, &init, NULL, NULL, &dummy) < 0)
		init.cfa_reg = -1;
	s = init;
	if (cie.signal) /* a signal trampoline: libunwind's business */
		s.cfa_reg = -1;
	if (run_cfa_program(&c, &cie, &s, &init, rows, &loc) < 0)
		s.cfa_reg = -1; /* from here on: NONE */
	if (loc < stop)
		emit(rows, loc, encode(&s));
	emit(rows, stop, CFI_NONE);
}

static int row_cmp(const void *a, const void *b)
{
	const struct cfi_row *x = a, *y = b;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The segment [p, p + n) is mapped: [*lo, *hi) of the PT_LOAD holding p. */
static int segment_of(const struct dl_phdr_info *info, uint64_t addr,
		      const uint8_t **lo, const uint8_t **hi)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && addr >= a &&
		    addr < a + ph->p_filesz) {
			*lo = (const uint8_t *)(uintptr_t)a;
			*hi = (const uint8_t *)(uintptr_t)(a + ph->p_filesz);
			return 0;
		}
	}
	return -1;
}

/* Builds the rows of one object from its .eh_frame_hdr table. The
 * caller has armed the guard. 0, or -1 if the object has no usable
 * table. */
static int build(const struct dl_phdr_info *info, struct rows *rows)
{
	const ElfW(Phdr) *eh = NULL;
	const uint8_t *lo, *hi;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			eh = &info->dlpi_phdr[i];
	if (!eh)
		return -1;
	uint64_t hdr = info->dlpi_addr + eh->p_vaddr;
	if (segment_of(info, hdr, &lo, &hi) < 0)
		return -1;
	struct bytecur c = { (const uint8_t *)(uintptr_t)hdr, hi, 0 };
	unsigned version = (unsigned)bytecur_n(&c, 1);
	uint8_t ptr_enc = (uint8_t)bytecur_n(&c, 1);
	uint8_t cnt_enc = (uint8_t)bytecur_n(&c, 1);
	uint8_t tab_enc = (uint8_t)bytecur_n(&c, 1);
	get_enc(&c, ptr_enc, hdr);
	uint64_t count = get_enc(&c, cnt_enc, hdr);
	if (c.bad || version != 1 || tab_enc != 0x3b ||
	    count > (uint64_t)(c.end - c.p) / 8)
		return -1;
	for (uint64_t i = 0; i < count && !rows->oom; i++) {
		int32_t loc_rel = (int32_t)bytecur_n(&c, 4);
		int32_t fde_rel = (int32_t)bytecur_n(&c, 4);
		(void)loc_rel;
		uint64_t fde = hdr + (uint64_t)(int64_t)fde_rel;
		const uint8_t *flo, *fhi;
		if (c.bad)
			break;
		if (segment_of(info, fde, &flo, &fhi) < 0)
			continue;
		do_fde((const uint8_t *)(uintptr_t)fde, flo, fhi,
		       info->dlpi_addr, rows);
	}
	if (rows->oom || !rows->n)
		return -1;
	/* FDEs come sorted by start; sort anyway, then let a start win over
	 * the NONE that ends the previous FDE at the same place */
	qsort(rows->v, rows->n, sizeof *rows->v, row_cmp);
	uint32_t w = 0;
	for (uint32_t i = 0; i < rows->n; i++) {
		if (w && rows->v[w - 1].pc == rows->v[i].pc) {
			if (CFI_KIND(rows->v[i].rule) != CFI_NONE)
				rows->v[w - 1] = rows->v[i];
			continue;
		}
		rows->v[w++] = rows->v[i];
	}
	rows->n = w;
	rows->n_none = 0;
	for (uint32_t i = 0; i < w; i++)
		rows->n_none += CFI_KIND(rows->v[i].rule) == CFI_NONE;
	return 0;
}

/* ---- refresh ---------------------------------------------------------------- */

struct scan {
	struct cfi_seg *segs;
	int n_segs, cap_segs;
	int oom;
	struct built *cur; /* the table of the object being scanned */
};

static struct built *find_built(uint64_t bias, const void *phdr)
{
	for (int i = 0; i < n_objs; i++)
		if (objs[i].bias == bias && objs[i].phdr == phdr)
			return &objs[i];
	return NULL;
}

/* build() as a guarded region (guard_run_sigsafe): an object unloaded
 * while its tables are read faults, and its rows are dropped. */
struct build_call {
	struct dl_phdr_info *info;
	struct rows *rows;
	int rc;
};

static void build_region(void *arg)
{
	struct build_call *c = arg;
	c->rc = build(c->info, c->rows);
}

static struct built *build_object(struct dl_phdr_info *info)
{
	struct rows rows = { 0 };
	if (n_objs == cap_objs) {
		int nc = cap_objs ? 2 * cap_objs : 64;
		if (nc > MAX_OBJECTS)
			return NULL;
		void *p = realloc(objs, (size_t)nc * sizeof *objs);
		if (!p)
			return NULL;
		objs = p;
		cap_objs = nc;
	}
	struct build_call call = { info, &rows, -1 };
	if (guard_run_sigsafe(build_region, &call) < 0) {
		/* the object went away under us */
		free(rows.v);
		return NULL;
	}
	if (call.rc < 0) {
		free(rows.v);
		rows = (struct rows){ 0 };
	}
	struct built *b = &objs[n_objs++];
	*b = (struct built){ info->dlpi_addr, info->dlpi_phdr, rows.v, rows.n,
			     rows.n_none, 1 };
	return b;
}

static int collect(const struct object_seg *s, void *arg)
{
	struct scan *sc = arg;
	struct dl_phdr_info *info = s->obj;
	if (s->index == 0) {
		struct built *b = find_built(info->dlpi_addr, info->dlpi_phdr);
		if (!b)
			b = build_object(info);
		if (!b)
			return OBJECTS_NEXT_OBJECT; /* no table: its PCs fall back */
		b->seen = 1;
		sc->cur = b;
	}
	if (!sc->cur->n_rows)
		return OBJECTS_NEXT_OBJECT;
	if (sc->n_segs == sc->cap_segs) {
		int nc = sc->cap_segs ? 2 * sc->cap_segs : 64;
		void *p = realloc(sc->segs, (size_t)nc * sizeof *sc->segs);
		if (!p) {
			sc->oom = 1;
			return OBJECTS_STOP;
		}
		sc->segs = p;
		sc->cap_segs = nc;
	}
	sc->segs[sc->n_segs++] = (struct cfi_seg){
		s->lo, s->hi, info->dlpi_addr, sc->cur->rows, sc->cur->n_rows
	};
	return OBJECTS_NEXT_SEG;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct cfi_seg *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void cfi_refresh(void)
{
	struct objects_gen now;
	struct scan sc = { 0 };
	free_retired(0);
	int gen_rc = objects_gen(&now);
	if (objects_gen_current(&last_gen, &now, gen_rc))
		return;
	for (int i = 0; i < n_objs; i++)
		objs[i].seen = 0;
	objects_scan(collect, &sc);
	if (sc.oom) {
		free(sc.segs);
		return; /* try again next time */
	}
	qsort(sc.segs, (size_t)sc.n_segs, sizeof *sc.segs, seg_cmp);
	struct cfi_index *ix = malloc(sizeof *ix +
				      (size_t)sc.n_segs * sizeof(struct cfi_seg));
	if (!ix) {
		free(sc.segs);
		return;
	}
	ix->gen = ++gen;
	ix->n = (uint32_t)sc.n_segs;
	if (sc.n_segs)
		memcpy(ix->seg, sc.segs, (size_t)sc.n_segs * sizeof *sc.segs);
	free(sc.segs);
	/* release: pairs with the handler's acquire load of cfi_current */
	struct cfi_index *old =
		__atomic_exchange_n(&cfi_current, ix, __ATOMIC_ACQ_REL);
	retire(old);
	/* objects gone: their rows go once no handler can hold them */
	int w = 0;
	for (int i = 0; i < n_objs; i++) {
		if (objs[i].seen)
			objs[w++] = objs[i];
		else
			retire(objs[i].rows);
	}
	n_objs = w;
	last_gen = now;
	unsigned long rows, nobj, none;
	cfi_stats(&rows, &nobj, &none);
	plog_debug("native: unwind tables for %lu objects, %lu rows (%lu "
		   "without a usable rule)",
		   nobj, rows, none);
}

void cfi_free_all(void)
{
	struct cfi_index *old =
		__atomic_exchange_n(&cfi_current, NULL, __ATOMIC_ACQ_REL);
	free(old);
	for (int i = 0; i < n_objs; i++)
		free(objs[i].rows);
	free(objs);
	objs = NULL;
	n_objs = cap_objs = 0;
	free_retired(1);
	free(retired);
	retired = NULL;
	cap_retired = 0;
	last_gen = (struct objects_gen){ ~0ull, ~0ull };
}

void cfi_stats(unsigned long *n_rows, unsigned long *n_objects,
	       unsigned long *n_none)
{
	*n_rows = *n_objects = *n_none = 0;
	for (int i = 0; i < n_objs; i++) {
		if (!objs[i].n_rows)
			continue;
		*n_rows += objs[i].n_rows;
		*n_none += objs[i].n_none;
		(*n_objects)++;
	}
}

uint32_t cfi_lookup(uint64_t pc)
{
	const struct cfi_index *ix =
		__atomic_load_n(&cfi_current, __ATOMIC_ACQUIRE);
	if (!ix)
		return CFI_NONE;
	return cfi_index_rule(ix, pc);
}
