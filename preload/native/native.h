/*
 * native.h - native stacks (PYPROF_NATIVE): libunwind, thread
 * preparation, and what a native program counter is to the merge.
 *
 * Nothing here runs, and libunwind is not even loaded, unless PYPROF_NATIVE
 * asks for it (CPU mode only: the wall sampler reads other threads' Python
 * stacks from its own thread, and libunwind unwinds only the thread it runs
 * on). native_init (constructor) dlopens libunwind.so.8 (Debian's
 * libunwind8) and publishes its unw_backtrace in sampler.unw_backtrace for
 * the handler (sig_handler.c), finds the eval loop's code and pyprof's own,
 * and prepares the calling thread; native_prepare_thread prepares each new
 * thread (the pthread_create wrapper calls it). native_classify (agent
 * thread) tells the merge (merge.h) what a PC is.
 *
 * The eval loop is _PyEval_EvalFrameDefault (3.6+) or PyEval_EvalFrameEx
 * (2.7): its extent comes from the symbol's size (dladdr1 with
 * RTLD_DL_SYMENT), plus the parts GCC moved out of line (".cold" and
 * ".part" clones), which only the ELF .symtab names: found where the file
 * has one (pyenv's builds), missed where it is stripped (Debian's
 * python3; a PC in such a part is then taken for interpreter code and the
 * sample may not merge).
 */
#ifndef PYPROF_NATIVE_H
#define PYPROF_NATIVE_H

#include <stdint.h>

#include "merge.h"

/*
 * Loads libunwind and prepares native stacks for the interpreter whose
 * frame evaluator is the symbol eval_frame (its row's eval_frame); mode
 * is enum config_native (not OFF). Sets sampler.native and
 * sampler.unw_backtrace on success. Returns 0, or -ENOENT when libunwind
 * is missing (one line says so; sampling goes on without native stacks).
 * Constructor only.
 */
int native_init(int mode, const char *eval_frame);

/*
 * Makes libunwind usable from this thread's signal handler: one short
 * unwind here, outside any signal, allocates its thread-local state, then
 * sampler_native_ready is set. Any application thread, outside signal
 * context; a no-op when native stacks are off.
 */
void native_prepare_thread(void);

/*
 * Fork: prepare keeps new signal handlers out of libunwind and waits (at
 * most 50 ms) for those inside to leave, so that the child does not
 * inherit the loader's or libunwind's locks taken by another thread;
 * done (parent and child) lets them in again. The forking thread, in
 * pthread_atfork's handlers.
 */
void native_fork_prepare(void);
void native_fork_done(void);

/* Whether pc is in libunwind's code (for the pipe()/pipe2() wrapper,
 * interpose/fds.c: libunwind's own pipe is parked high). Any context. */
int native_in_libunwind_sigsafe(const void *pc);

/* What pc is (enum merge_class). exact: pc is the interrupted PC, not a
 * return address (which is looked up at pc - 1, inside the call). Agent
 * thread (read-only tables written by native_init). */
int native_classify(uint64_t pc, int exact);

#endif /* PYPROF_NATIVE_H */
