/*
 * interpose/signals.c - sigaction() and signal() as the application sees
 * them; sigprocmask(), a shim onto signal/sig_handler.c.
 *
 * Once pyprof owns SIGSEGV, SIGBUS and SIGPROF (guard.h), a call that sets
 * or queries one of them is answered from guard_app_act: the application
 * gets back what it installed, and its handler is the one pyprof chains to
 * for every signal that is not pyprof's own. Without this, a handler that
 * Python's faulthandler installs after us would see our guarded faults
 * first, print a traceback and kill the process.
 *
 * The same for PYPROF_TOGGLE_SIGNAL's signal while pyprof holds it, except
 * that there the program's call wins (sig_toggle.c).
 *
 * A vfork child (Python 3.10+'s subprocess) resets every handled signal to
 * SIG_DFL before it execs, through these functions, while it shares the
 * parent's memory: recording that in guard_app_act or in the toggle's
 * state would change the parent's. In a vfork child (its pid is not
 * sampler.owner_pid) a call that sets an owned signal goes to the kernel,
 * for the child alone, and pyprof's state is left as it was.
 *
 * Contexts: any thread, signal handlers (faulthandler calls sigaction from
 * its handler), fork and vfork children: async-signal-safe, no locks, no
 * allocation, no dlsym (libc_next.h).
 *
 * Not interposed: sigset(), sysv_signal() and bsd_signal(), which are rare
 * in Python programs and their extensions.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/guard.h"
#include "base/libc_next.h"
#include "base/sampler.h"
#include "signal/sig_handler.h"
#include "signal/sig_toggle.h"

static int owned_index(int sig)
{
	int i = sig == SIGSEGV	 ? GUARD_SEGV
		: sig == SIGBUS	 ? GUARD_BUS
		: sig == SIGPROF ? GUARD_PROF
				 : -1;
	if (i >= 0 && __atomic_load_n(&guard_owned[i], __ATOMIC_ACQUIRE))
		return i;
	return -1;
}

/* A vfork child of the process that owns pyprof's state: same memory,
 * another pid (a fork child sets owner_pid to its own in its handler). */
static int in_vfork_child(void)
{
	int owner = __atomic_load_n(&sampler.owner_pid, __ATOMIC_ACQUIRE);
	return owner != 0 && getpid() != owner;
}

__attribute__((visibility("default"))) int
sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int i = owned_index(sig);
	int toggle = control_toggle_owns_sigsafe(sig);
	if ((i >= 0 || toggle) && act && in_vfork_child()) {
		struct sigaction prev;
		if (i >= 0)
			prev = guard_app_act[i];
		else if (control_toggle_sigaction_sigsafe(sig, NULL, &prev) < 0)
			return -1;
		if (libc_next_sigaction(sig, act, NULL) < 0)
			return -1;
		if (old)
			*old = prev;
		return 0;
	}
	if (toggle) /* PYPROF_TOGGLE_SIGNAL: sig_toggle.c */
		return control_toggle_sigaction_sigsafe(sig, act, old);
	if (i < 0)
		return libc_next_sigaction(sig, act, old);
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
	if (owned_index(sig) < 0 && !control_toggle_owns_sigsafe(sig)) {
		sighandler_t (*real_signal)(int, sighandler_t) =
			LIBC_NEXT(signal, "signal");
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
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	/* sa_handler and sa_sigaction share storage: this is what glibc's
	 * signal() returns for an SA_SIGINFO handler too */
	return old.sa_handler;
}

/* Inside our own unw_backtrace() it changes nothing (sig_handler.c). */
__attribute__((visibility("default"))) int
sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return sig_handler_sigprocmask_sigsafe(how, set, old);
}
