/*
 * attach.h - the entry point `pyprof attach`'s script calls through ctypes
 * (attach.c says how a late start works).
 */
#ifndef PYPROF_ATTACH_H
#define PYPROF_ATTACH_H

/* Starts the library with the settings in config ("PYPROF_NAME=value"
 * lines): the body of interpose/pyprof.c's pyprof_attach_start. 0 started, 1 already running, negative errno if not. */
int attach_start(const char *config);

#endif /* PYPROF_ATTACH_H */
