/*
 * version.h - pyprof's version, one definition for everything that
 * reports it: `pyprof --version` (cli/) and the OTLP scope of the
 * profiles the collector pushes (push/otlp.c). A build may override it
 * with -DPYPROF_VERSION=...
 */
#ifndef PYPROF_VERSION_H
#define PYPROF_VERSION_H

#ifndef PYPROF_VERSION
#define PYPROF_VERSION "0.1.0"
#endif

#endif /* PYPROF_VERSION_H */
