/*
 * attach.h - the entry point `pyprof attach`'s script calls through ctypes
 * (attach.c says how a late start works).
 */
#ifndef PYPROF_ATTACH_H
#define PYPROF_ATTACH_H

/* Starts the library with the settings in config ("PYPROF_NAME=value"
 * lines): the body of interpose/pyprof.c's pyprof_attach_start. The
 * start runs on a thread of its own (attach.c says why; with native
 * stacks, here), and after() is called there once it has succeeded. 0
 * when the start was begun or made, 1 when the library is already
 * running or starting, a negative errno if not. On the thread that runs
 * the attach script, GIL held; config is copied. */
int attach_start(const char *config, int (*after)(void));

#endif /* PYPROF_ATTACH_H */
