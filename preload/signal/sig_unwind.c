/*
 * sig_unwind.c - the handler's own native unwinder (PYPROF_NATIVE): from
 * the interrupted registers in the signal's ucontext, frame by frame over
 * the agent's tables (cfi.h).
 *
 * ASYNC-SIGNAL-SAFE: runs in the SIGPROF handler. No malloc, stdio, locks
 * or lazily initialised thread-locals (the per-thread cache is mmap'd by
 * native_prepare_thread outside signals and reached through an
 * initial-exec thread-local); errno untouched. Stack reads are plain
 * loads made while the caller's fault guard is armed.
 *
 * Per frame: find the rule for the PC (the interrupted PC itself, then
 * each return address minus 1, inside its call) in a per-thread direct-
 * mapped cache keyed by exact PC, else by binary search in the index and
 * the object's rows (cfi_index_rule, then cached); compute the CFA from
 * RSP or RBP; read the return address at CFA - 8 and, if saved, RBP. The
 * walk ends at an END rule (the outermost frame) or a zero return
 * address; it gives up (the caller then asks libunwind) at a PC no usable
 * rule covers, or when a CFA does not move up the stack.
 */
#include <stdint.h>
#include <ucontext.h>

#include "native/cfi.h"
#include "base/sampler.h"
#include "sig_unwind.h"

/* A frame is at most this far above the one below it: a corrupt RBP
 * that sends the CFA across the address space is caught here. */
#define FRAME_MAX (64ull << 20)

static uint32_t find_rule(const struct cfi_index *ix, uint64_t pc)
{
	struct cfi_slot *c = cfi_thread_cache, *slot = NULL;
	if (c) {
		slot = &c[(pc * 0x9E3779B97F4A7C15ull) >> (64 - CFI_CACHE_BITS)];
		if (slot->pc == pc && slot->gen == ix->gen)
			return slot->rule;
	}
	uint32_t rule = cfi_index_rule(ix, pc);
	if (slot) {
		slot->pc = pc;
		slot->rule = rule;
		slot->gen = ix->gen;
	}
	return rule;
}

int cfi_unwind_sigsafe(const void *ucv, uint64_t *pcs, int max,
		       int *truncated)
{
	const ucontext_t *uc = ucv;
	const struct cfi_index *ix =
		__atomic_load_n(&cfi_current, __ATOMIC_ACQUIRE);
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	uint64_t bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	int n = 0;

	*truncated = 0;
	if (!ix)
		return -1;
	for (;;) {
		if (n == max) {
			*truncated = 1;
			return n;
		}
		pcs[n++] = pc;
		uint32_t rule = find_rule(ix, n == 1 ? pc : pc - 1);
		unsigned kind = CFI_KIND(rule);
		if (kind == CFI_END)
			return n;
		if (kind == CFI_NONE)
			return -1;
		uint64_t cfa = (kind == CFI_RSP ? sp : bp) + CFI_OFF(rule);
		if (cfa <= sp || cfa - sp > FRAME_MAX)
			return -1;
		uint64_t ra = *(volatile uint64_t *)(uintptr_t)(cfa - 8);
		uint32_t slot = CFI_RBP_SLOT(rule);
		if (slot)
			bp = *(volatile uint64_t *)(uintptr_t)(cfa - 8ull * slot);
		sp = cfa;
		if (ra == 0)
			return n; /* a thread's outermost frame */
		pc = ra;
	}
}
