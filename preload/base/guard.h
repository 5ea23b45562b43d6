/*
 * guard.h - fault-guarded reads of interpreter memory, and ownership of
 * the fault and sampling signals.
 *
 * pyprof reads CPython's structures without the GIL, from a signal handler
 * or from its agent thread, while the interpreter changes them. A read that
 * faults (a freed page, a torn pointer) must cost one sample, never the
 * host. The guard is one SIGSEGV/SIGBUS handler, installed once: when the
 * faulting thread is inside a guarded region (its thread-local jump buffer
 * is armed) it siglongjmps back; otherwise the fault is passed on to the
 * handler the application installed, exactly as if pyprof were absent
 * (Python's faulthandler included).
 *
 * To stay the first responder, pyprof interposes sigaction() and signal()
 * for SIGSEGV, SIGBUS and SIGPROF once its own handlers are in: the
 * application's request is recorded and reported back to it as installed,
 * and signals that are not pyprof's are delivered to it (interpose/signals.c).
 *
 * Contexts: guard_copy() is async-signal-safe and works on any thread;
 * guard_install() is for the constructor only.
 */
#ifndef PYPROF_GUARD_H
#define PYPROF_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* The armed jump buffer of this thread, or NULL. Initial-exec TLS. */
extern __thread sigjmp_buf *guard_jmp;

/* Faulted guarded reads in this process (relaxed counter). */
extern unsigned long guard_faults;

/* Signals pyprof owns once installed: indexes into the app table. */
enum guard_sig { GUARD_SEGV = 0,
		 GUARD_BUS = 1,
		 GUARD_PROF = 2,
		 GUARD_NSIG };

/*
 * Installs the SIGSEGV/SIGBUS guard (saving what was there as the
 * application's handler). Returns 0 or -errno. Constructor only.
 */
int guard_install(void);

/*
 * Installs handler for SIGPROF with SA_SIGINFO, remembering the previous
 * disposition as the application's. Constructor only.
 */
int guard_take_sigprof(void (*handler)(int, siginfo_t *, void *));

/*
 * Runs fn(arg) as a guarded region: a fault in a read it makes jumps back
 * here, and the call returns -EFAULT (fn did not finish); 0 otherwise.
 * The one guard policy: save, arm, put back. The thread's guard_jmp is
 * saved on entry; fn runs with this call's own buffer armed; on the way
 * out, after fn returned and after a fault alike, guard_jmp is set back to
 * the saved value, never to NULL. That keeps the nested case right: the
 * SIGPROF handler can interrupt a heap sample (the allocation hook) in the
 * middle of its walk, on the same thread; the handler's regions save the
 * heap sample's armed buffer and put it back, so a fault after the handler
 * returns still jumps to the heap sample's buffer, not into a stack frame
 * that no longer exists; and the heap sample, which nothing else
 * interrupts with a guard of its own, finds NULL or an outer region's
 * buffer and puts that back. Async-signal-safe when fn is; any thread.
 */
int guard_run_sigsafe(void (*fn)(void *arg), void *arg);

/*
 * Copies n bytes from src (interpreter memory, possibly unmapped) to dst.
 * Returns 0, or -EFAULT if the read faulted. Async-signal-safe, any thread.
 */
int guard_copy(void *dst, const void *src, size_t n);

/* A guarded 8-byte load; 0 on fault, *ok cleared. Async-signal-safe. */
uint64_t guard_read_u64(uintptr_t addr, int *ok);

/*
 * Passes a signal that is not pyprof's to the application's disposition for
 * it, as the kernel would have: its handler (with its mask and flags), or
 * the default action, or nothing if ignored. Signal handler only.
 */
void guard_chain_sigsafe(enum guard_sig which, int sig, siginfo_t *si,
			 void *uc);

/* The application's view of each owned signal, and whether pyprof owns it
 * (after which sigaction() on it is answered from app_act). */
extern struct sigaction guard_app_act[GUARD_NSIG];
extern volatile int guard_owned[GUARD_NSIG];

#endif /* PYPROF_GUARD_H */
