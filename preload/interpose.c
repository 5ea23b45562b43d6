/*
 * interpose.c - sigaction() and signal() as the application sees them.
 *
 * Once pyprof owns SIGSEGV, SIGBUS and SIGPROF (guard.h), a call that sets
 * or queries one of them is answered from guard_app_act: the application
 * gets back what it installed, and its handler is the one pyprof chains to
 * for every signal that is not pyprof's own. Without this, a handler that
 * Python's faulthandler installs after us would see our guarded faults
 * first, print a traceback and kill the process.
 *
 * Any thread, and possibly signal context (faulthandler calls sigaction
 * from its handler): no locks, no allocation. The real sigaction is found
 * with dlsym(RTLD_NEXT) on first use, from the constructor in practice.
 *
 * The same for PYPROF_TOGGLE_SIGNAL's signal while pyprof holds it, except
 * that there the program's call wins (sig_toggle.c).
 *
 * Not interposed: sigset(), sysv_signal() and bsd_signal(), which are rare
 * in Python programs and their extensions.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "control.h"
#include "guard.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction;

int guard_real_sigaction(int sig, const struct sigaction *act,
			 struct sigaction *old)
{
	sigaction_fn fn = __atomic_load_n(&real_sigaction, __ATOMIC_ACQUIRE);
	if (!fn) {
		fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		if (!fn) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real_sigaction, fn, __ATOMIC_RELEASE);
	}
	return fn(sig, act, old);
}

static int owned_index(int sig)
{
	int i = sig == SIGSEGV ? GUARD_SEGV
		: sig == SIGBUS ? GUARD_BUS
		: sig == SIGPROF ? GUARD_PROF : -1;
	if (i >= 0 && __atomic_load_n(&guard_owned[i], __ATOMIC_ACQUIRE))
		return i;
	return -1;
}

__attribute__((visibility("default"))) int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int i = owned_index(sig);
	if (control_toggle_owns(sig)) /* PYPROF_TOGGLE_SIGNAL: sig_toggle.c */
		return control_toggle_sigaction(sig, act, old);
	if (i < 0)
		return guard_real_sigaction(sig, act, old);
	struct sigaction prev = guard_app_act[i];
	if (act)
		guard_app_act[i] = *act;
	if (old)
		*old = prev;
	return 0;
}

__attribute__((visibility("default"))) sighandler_t signal(int sig,
							   sighandler_t h)
{
	if (owned_index(sig) < 0 && !control_toggle_owns(sig)) {
		static sighandler_t (*real_signal)(int, sighandler_t);
		if (!real_signal)
			real_signal = (sighandler_t(*)(int, sighandler_t))dlsym(
				RTLD_NEXT, "signal");
		if (!real_signal) {
			errno = ENOSYS;
			return SIG_ERR;
		}
		return real_signal(sig, h);
	}
	/* glibc's signal(): BSD semantics, the signal blocked in its handler */
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	sigaction(sig, &sa, &old);
	/* sa_handler and sa_sigaction share storage: this is what glibc's
	 * signal() returns for an SA_SIGINFO handler too */
	return old.sa_handler;
}
