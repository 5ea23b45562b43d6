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

#endif
