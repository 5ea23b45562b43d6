/*
 * base/guard.c - the SIGSEGV/SIGBUS guard and signal chaining.
 *
 * ASYNC-SIGNAL-SAFE: everything in this file runs, or may run, in signal
 * context. No malloc, stdio, locks or lazily initialised thread-locals;
 * errno saved and restored where a system call could change it. Only
 * guard_install() and guard_take_sigprof() run outside (constructor).
 *
 * The guard: a thread that reads interpreter memory does it in a guarded
 * region (guard_run_sigsafe), which arms guard_jmp with a sigsetjmp(…, 0)
 * buffer. A fault on that thread jumps back; the region's owner reports
 * one failed read. We install the handler with SA_NODEFER so
 * that jumping out of it leaves SIGSEGV unblocked without the cost of a
 * signal-mask system call per region, and SA_ONSTACK so that a real stack
 * overflow in the application still reaches an alternate stack (Python's
 * faulthandler sets one up).
 */
#include "guard.h"
#include "libc_next.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

__thread sigjmp_buf *guard_jmp;
unsigned long guard_faults;
struct sigaction guard_app_act[GUARD_NSIG];
volatile int guard_owned[GUARD_NSIG];

static int sig_index(int sig)
{
	return sig == SIGSEGV ? GUARD_SEGV : sig == SIGBUS ? GUARD_BUS
							   : GUARD_PROF;
}

/* SA_RESETHAND: the program's action, kept here while it runs (its slot in
 * guard_app_act is already back to SIG_DFL). One per signal; two threads
 * faulting at once would store the same action. */
static struct sigaction reset_act[GUARD_NSIG];

/*
 * Does everything guard_chain_sigsafe does short of calling the program's
 * handler, and returns the action whose handler the caller must call now
 * (with the signal's mask in place and errno as it was), or NULL when
 * there is nothing to call (ignored, default action taken care of).
 */
static const struct sigaction *chain_prepare(enum guard_sig which, int sig,
					     siginfo_t *si)
{
	struct sigaction *a = &guard_app_act[which];
	int saved = errno;

	if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN) {
		/* The kernel cannot ignore a fault it raised: a synchronous
		 * SIGSEGV/SIGBUS with SIG_IGN still kills the process. */
		if (which == GUARD_PROF || si->si_code <= 0)
			goto out;
	}
	if ((a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL &&
					   a->sa_handler != SIG_IGN)) {
		sigset_t mask = a->sa_mask;
		if (!(a->sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		if (a->sa_flags & SA_RESETHAND) {
			reset_act[which] = *a;
			memset(a, 0, sizeof *a);
			a->sa_handler = SIG_DFL;
			a = &reset_act[which];
		}
		pthread_sigmask(SIG_BLOCK, &mask, NULL);
		errno = saved;
		return a;
	}
	/* Default action: give the signal back to the kernel. For a fault,
	 * returning re-executes the faulting instruction, which now takes
	 * the default action with the original siginfo (and core dump). For a
	 * sent signal, send it again. */
	{
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		guard_owned[which] = 0;
		libc_next_sigaction(sig, &dfl, NULL);
		if (which == GUARD_PROF || si->si_code <= 0) {
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, sig);
			syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
			pthread_sigmask(SIG_UNBLOCK, &one, NULL);
		}
	}
out:
	errno = saved;
	return NULL;
}

void guard_chain_sigsafe(enum guard_sig which, int sig, siginfo_t *si,
			 void *uc)
{
	const struct sigaction *a = chain_prepare(which, sig, si);
	if (!a)
		return;
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, si, uc);
	else
		a->sa_handler(sig);
}

/*
 * The program's handler is called last, in tail position, from a function
 * with no local whose address escapes, and guard_chain_sigsafe, which
 * calls it, is in tail position here: the compiler makes both calls jumps,
 * so the handler runs in place of ours, returning straight to the
 * kernel's trampoline. A C stack dump taken there (faulthandler's on 3.14+) then
 * shows the same frames as without pyprof.
 */
static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	sigjmp_buf *jb = guard_jmp;
	if (jb) {
		guard_jmp = NULL;
		__atomic_fetch_add(&guard_faults, 1, __ATOMIC_RELAXED);
		siglongjmp(*jb, 1);
	}
	guard_chain_sigsafe(sig_index(sig), sig, si, uc);
}

/* Kept out of line so that the sigsetjmp frame is this function's own. */
__attribute__((noinline)) int guard_run_sigsafe(void (*fn)(void *arg),
						void *arg)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile prev = guard_jmp;
	if (sigsetjmp(jb, 0)) {
		/* a read faulted: the guard disarmed itself before the jump */
		guard_jmp = prev;
		return -EFAULT;
	}
	guard_jmp = &jb;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fn(arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	guard_jmp = prev;
	return 0;
}

struct copy {
	void *dst;
	const void *src;
	size_t n;
};

static void copy_bytes(void *arg)
{
	const struct copy *c = arg;
	const volatile unsigned char *s = c->src;
	unsigned char *d = c->dst;
	for (size_t i = 0; i < c->n; i++)
		d[i] = s[i];
}

int guard_copy(void *dst, const void *src, size_t n)
{
	struct copy c = { dst, src, n };
	return guard_run_sigsafe(copy_bytes, &c);
}

uint64_t guard_read_u64(uintptr_t addr, int *ok)
{
	uint64_t v;
	if (guard_copy(&v, (const void *)addr, sizeof v) < 0) {
		*ok = 0;
		return 0;
	}
	return v;
}

static int take(int sig, void (*handler)(int, siginfo_t *, void *),
		int flags)
{
	struct sigaction sa, old;
	int which = sig_index(sig);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	if (libc_next_sigaction(sig, NULL, &old) < 0)
		return -errno;
	guard_app_act[which] = old;
	if (libc_next_sigaction(sig, &sa, NULL) < 0)
		return -errno;
	__atomic_store_n(&guard_owned[which], 1, __ATOMIC_RELEASE);
	return 0;
}

int guard_install(void)
{
	int rc = take(SIGSEGV, guard_handler, SA_NODEFER | SA_ONSTACK);
	if (rc == 0)
		rc = take(SIGBUS, guard_handler, SA_NODEFER | SA_ONSTACK);
	return rc;
}

int guard_take_sigprof(void (*handler)(int, siginfo_t *, void *))
{
	return take(SIGPROF, handler, SA_RESTART | SA_ONSTACK);
}
