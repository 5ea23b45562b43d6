/*
 * init.h - what the constructor's file (init.c) offers the rest of the
 * library.
 */
#ifndef PYPROF_INIT_H
#define PYPROF_INIT_H

/* Called by the _exit()/_Exit() wrappers (interpose/exec.c), in any
 * context the program calls them from: flushes the profile as a normal
 * exit would, in the process that owns the agent only (nothing in a vfork
 * child). */
void init_flush_before_exit(void);

/* Called by the exec wrappers (interpose/exec.c) in the process that owns
 * the agent, just before the exec: should the exec fail and the process
 * end (a forked child's _exit(255) after a command not found), it is no
 * Python program of the user's, and is reported only if it has samples
 * or had connected already. Async-signal-safe (one store). */
void init_note_exec_sigsafe(void);
/* `pyprof attach` (attach.c): starts the library in a running interpreter
 * that loaded it late, with the settings get(name, arg) returns (as the
 * environment does for a preloaded one); heap sampling stays off. 0 when
 * started, 1 if
 * it already was (a second attach: the agent reconnects by itself),
 * -ENOENT (not an initialized CPython), -EALREADY (started in the process
 * this one forked from) or -EINVAL (refused, reason sent to the
 * collector). Runs on attach.c's start thread (without the GIL), or on
 * the script's thread for native stacks. */
int init_start_late(const char *(*get)(const char *, void *), void *arg);

#endif
