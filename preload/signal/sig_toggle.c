/*
 * sig_toggle.c - PYPROF_TOGGLE_SIGNAL: a signal that switches sampling on
 * and off in one process, for people without a collector at hand (as
 * gperftools' CPUPROFILESIGNAL).
 *
 * ASYNC-SIGNAL-SAFE: the handler only counts the signal; the agent thread
 * sees the count at its next tick (at most AGENT_IDLE_MS, 250 ms, while
 * dormant; 20 ms while sampling) and does the rest (control.c). It writes
 * to no descriptor: the program may have closed any of ours and reused
 * the number (fdutil.h), and a check before the write could not close
 * that race inside a signal handler. No malloc,
 * stdio, locks or lazily initialised thread-locals; errno saved and
 * restored. control_toggle_sigaction_sigsafe() may run on any thread, in signal
 * context too (a program's handler may call sigaction).
 *
 * The program comes first: if the signal already had a handler (or was
 * ignored) when the library started, the toggle is not installed and the
 * constructor says why. If the program installs anything for the signal
 * later (signal.signal(SIGUSR2, ...) in Python), interpose/signals.c sends the
 * call here: it goes through to the kernel as asked, the program's
 * disposition replaces ours for good, and the agent says once on stderr
 * that the toggle is gone and why. Until then the program is told the
 * disposition it had before us (SIG_DFL), so signal.getsignal() answers as
 * without pyprof.
 */
#include <errno.h>
#include <signal.h>

#include "base/guard.h"
#include "base/libc_next.h"
#include "sig_toggle.h"

unsigned control_toggles;
int control_toggle_taken;

static int toggle_sig;			/* ours while non-zero (atomic) */
static struct sigaction toggle_app_act; /* what the program sees      */

static void toggle_handler(int sig)
{
	int saved_errno = errno;
	(void)sig;
	__atomic_fetch_add(&control_toggles, 1, __ATOMIC_RELEASE);
	errno = saved_errno;
}

int control_toggle_owns_sigsafe(int sig)
{
	return sig > 0 && __atomic_load_n(&toggle_sig, __ATOMIC_ACQUIRE) == sig;
}

int control_toggle_sigaction_sigsafe(int sig, const struct sigaction *act,
				     struct sigaction *old)
{
	struct sigaction prev = toggle_app_act;
	if (act) {
		/* the program's wish goes through as it asked */
		if (libc_next_sigaction(sig, act, NULL) < 0)
			return -1;
		toggle_app_act = *act;
		__atomic_store_n(&toggle_sig, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&control_toggle_taken, 1, __ATOMIC_RELEASE);
	}
	if (old)
		*old = prev;
	return 0;
}

int control_toggle_install(int sig)
{
	struct sigaction sa, old;
	if (libc_next_sigaction(sig, NULL, &old) < 0)
		return -errno;
	if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = toggle_handler;
		/* a system call the signal interrupts carries on: the program
		 * must not see EINTR because of us */
		sa.sa_flags = SA_RESTART;
		toggle_app_act = old;
		if (libc_next_sigaction(sig, &sa, NULL) < 0)
			return -errno;
		__atomic_store_n(&toggle_sig, sig, __ATOMIC_RELEASE);
		return 0;
	}
	return -EBUSY;
}
