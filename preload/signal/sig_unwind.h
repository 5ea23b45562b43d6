/*
 * sig_unwind.h - the interrupted thread's native stack from
 * native/cfi.h's tables, in the handler (sig_unwind.c).
 */
#ifndef PYPROF_SIG_UNWIND_H
#define PYPROF_SIG_UNWIND_H

#include <stdint.h>

#include "native/cfi.h"

/*
 * Unwinds the interrupted thread from the signal's
 * ucontext (ucontext_t *) into pcs[0..max), leaf first: the interrupted
 * PC, then return addresses. Returns the number of PCs (with *truncated
 * set if max stopped it), or -1 where the tables cannot say (the caller
 * then uses libunwind). Signal handler, fault guard armed.
 */
int cfi_unwind_sigsafe(const void *uc, uint64_t *pcs, int max,
		       int *truncated);

#endif /* PYPROF_SIG_UNWIND_H */
