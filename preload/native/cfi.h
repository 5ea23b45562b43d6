/*
 * cfi.h - unwind tables for the signal handler's own native unwinder
 * (PYPROF_NATIVE), built by the agent from the loaded objects' .eh_frame.
 *
 * Why: libunwind's unw_backtrace is fast for an address it has seen (a
 * per-thread cache keyed by exact address), but the first sample at each
 * new interrupted address parses DWARF there and then, in the handler:
 * 7.5 us per miss in a C harness here, 15 to 70 us in a Python process
 * (measured; cold caches: a miss runs a few thousand instructions of
 * libunwind's parser), and a hot loop of numpy or zlib interrupts at a new
 * address nearly every time. These tables move that work out of the
 * handler: the agent turns every FDE of every loaded object into rows once
 * (when the object appears), and the handler only looks rows up.
 *
 * A row says, for the addresses from its pc up to the next row's, how to
 * find the caller (x86-64 DWARF CFI, the common forms only):
 *   CFA = RSP + off or RBP + off; return address at CFA - 8; RBP unchanged
 *   or saved at CFA - 8k. Anything else (CFA expressions, registers saved
 *   elsewhere, signal trampolines, addresses no FDE covers) is a NONE row:
 *   the handler then falls back to libunwind for that sample. END rows
 *   mark the outermost frame (return address undefined: _start, clone).
 *
 * Publication: cfi_refresh (agent thread) builds a new index of the
 * executable segments and their tables when the loader's object counters
 * moved, and publishes it with a release store of cfi_current; the handler
 * loads it with acquire. Tables are immutable once published; an index or
 * table that is replaced is freed only CFI_RETIRE_NS later, long after any
 * handler that could hold it has returned (and every handler read is
 * guarded anyway). Memory: 8 bytes a row, a few rows an FDE (libpython
 * about 40k rows).
 */
#ifndef PYPROF_CFI_H
#define PYPROF_CFI_H

#include <stdint.h>

#define CFI_RETIRE_NS 2000000000ull

/* Row rule, 32 bits: kind (2), CFA offset in bytes (20), RBP slot (10). */
enum cfi_kind {
	CFI_NONE = 0, /* no usable rule here: fall back to libunwind */
	CFI_RSP = 1,  /* CFA = RSP + off                             */
	CFI_RBP = 2,  /* CFA = RBP + off                             */
	CFI_END = 3   /* outermost frame                             */
};
#define CFI_KIND(r) ((r)&3u)
#define CFI_OFF(r) (((r) >> 2) & 0xfffffu)
#define CFI_RBP_SLOT(r) ((r) >> 22) /* 0: RBP unchanged; k: at CFA - 8k */
#define CFI_RULE(kind, off, slot) \
	((uint32_t)(kind) | (uint32_t)(off) << 2 | (uint32_t)(slot) << 22)

struct cfi_row {
	uint32_t pc; /* from the object's load bias */
	uint32_t rule;
};

/* One executable segment and the rows of its object. */
struct cfi_seg {
	uint64_t lo, hi;	    /* the segment's addresses       */
	uint64_t bias;		    /* the object's load bias        */
	const struct cfi_row *rows; /* sorted by pc; shared by the
	                               object's segments             */
	uint32_t n_rows;
};

struct cfi_index {
	uint32_t gen; /* bumps with every index published */
	uint32_t n;   /* segments, sorted by lo           */
	struct cfi_seg seg[];
};

/* The rule for pc in ix: its segment's last row at or before pc, or
 * CFI_NONE when no segment holds pc. Plain reads of a published index:
 * any thread, and the handler (sig_unwind.c). */
static inline uint32_t cfi_index_rule(const struct cfi_index *ix, uint64_t pc)
{
	uint32_t lo = 0, hi = ix->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct cfi_seg *s = &ix->seg[mid];
		if (pc < s->lo) {
			hi = mid;
		} else if (pc >= s->hi) {
			lo = mid + 1;
		} else {
			uint64_t off = pc - s->bias;
			uint32_t a = 0, b = s->n_rows;
			if (off > 0xffffffffu)
				return CFI_NONE;
			while (a < b) {
				uint32_t m = a + (b - a) / 2;
				if (s->rows[m].pc <= off)
					a = m + 1;
				else
					b = m;
			}
			return a ? s->rows[a - 1].rule : CFI_NONE;
		}
	}
	return CFI_NONE;
}

/* The index the handler uses, or NULL (acquire; cfi_refresh stores). */
extern struct cfi_index *cfi_current;

/* The handler's per-thread cache of rules by exact PC: CFI_CACHE_SLOTS
 * slots, mmap'd by native_prepare_thread (NULL: no cache, lookups only).
 * A slot is valid for the index generation it was filled under. Written
 * and read by the handler of its own thread only. */
#define CFI_CACHE_BITS 12
#define CFI_CACHE_SLOTS (1u << CFI_CACHE_BITS)
struct cfi_slot {
	uint64_t pc;
	uint32_t rule, gen;
};
extern __thread struct cfi_slot *cfi_thread_cache;

/* Agent thread: (re)builds and publishes the tables when objects were
 * loaded or unloaded since the last call (one dl_iterate_phdr callback
 * otherwise), and frees what was retired long enough ago. */
void cfi_refresh(void);

/* Agent thread: everything, at exit. Handlers must be done. */
void cfi_free_all(void);

/* Rows and objects in the current tables, for logs and tests. */
void cfi_stats(unsigned long *n_rows, unsigned long *n_objects,
	       unsigned long *n_none);

/* For tests: the rule for pc in the current index, or CFI_NONE. Any
 * thread. */
uint32_t cfi_lookup(uint64_t pc);

#endif /* PYPROF_CFI_H */
