/*
 * maps.h - where the interpreter's own code lives, so that a sample can
 * say whether its thread was interrupted in the interpreter (libpython or
 * the executable that links it) or in native code elsewhere (a C
 * extension, libc, libz...).
 *
 * maps_init() (constructor) records the executable segments of the object
 * that defines Py_IsInitialized and of the main executable (the same
 * object for a statically linked python). maps_in_python_sigsafe() is a
 * handful of comparisons over that fixed table: async-signal-safe.
 */
#ifndef PYPROF_MAPS_H
#define PYPROF_MAPS_H

#include <stdint.h>

/* 0, or -ENOENT if the interpreter's code could not be located. */
int maps_init(const void *py_symbol);

/* 1 if pc is in the interpreter's code, 0 if not, -1 if unknown. */
int maps_in_python_sigsafe(uintptr_t pc);

#endif /* PYPROF_MAPS_H */
