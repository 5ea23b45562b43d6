/*
 * pycode.h - the decoders of line tables and strings (pycode.c): their
 * contract is pyprof/pycode.h's, shared with pyprof, which links the same
 * pycode.c to name the code objects of a process read from outside.
 */
#ifndef PYPROF_CPYTHON_PYCODE_H
#define PYPROF_CPYTHON_PYCODE_H

#include "pyprof/pycode.h"

#endif /* PYPROF_CPYTHON_PYCODE_H */
