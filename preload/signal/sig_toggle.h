/*
 * sig_toggle.h - the toggle signal's handler (PYPROF_TOGGLE_SIGNAL,
 * sig_toggle.c); the agent acts on it (control.h).
 */
#ifndef PYPROF_SIG_TOGGLE_H
#define PYPROF_SIG_TOGGLE_H

#include <signal.h>

/* sig_toggle.c: the toggle signal, for interpose/signals.c. Any thread, signal
 * context included. */
int control_toggle_owns_sigsafe(int sig);
int control_toggle_sigaction_sigsafe(int sig, const struct sigaction *act,
				     struct sigaction *old);
/* sig_toggle.c, constructor: installs the handler for sig. 0, or -EBUSY
 * when sig already has a handler (or is ignored), or -errno. */
int control_toggle_install(int sig);
/* sig_toggle.c: toggle signals received so far, and whether the program
 * took the signal for itself since (relaxed atomics; agent reads). */
extern unsigned control_toggles;
extern int control_toggle_taken;

#endif /* PYPROF_SIG_TOGGLE_H */
