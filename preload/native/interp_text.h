/*
 * interp_text.h - where the interpreter's own code (text) lives, so that
 * a sample can say whether its thread was interrupted in the interpreter
 * (libpython or the executable that links it) or in native code elsewhere
 * (a C extension, libc, libz...).
 *
 * interp_text_init() (constructor) records the executable segments of the
 * object that defines Py_IsInitialized and of the main executable (the
 * same object for a statically linked python).
 * interp_text_contains_sigsafe() is a handful of comparisons over that
 * fixed table: async-signal-safe.
 */
#ifndef PYPROF_INTERP_TEXT_H
#define PYPROF_INTERP_TEXT_H

#include <stdint.h>

/* 0, or -ENOENT if the interpreter's code could not be located. */
int interp_text_init(const void *py_symbol);

/* 1 if pc is in the interpreter's code, 0 if not, -1 if unknown. */
int interp_text_contains_sigsafe(uintptr_t pc);

#endif /* PYPROF_INTERP_TEXT_H */
