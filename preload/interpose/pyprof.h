/*
 * interpose/pyprof.h - the library's own exported entry points (pyprof_*,
 * interpose/pyprof.c), as the `pyprof` module and `pyprof attach`'s
 * script call them through ctypes.
 */
#ifndef PYPROF_INTERPOSE_PYPROF_H
#define PYPROF_INTERPOSE_PYPROF_H

int pyprof_attach_start(const char *config);
int pyprof_labels_thread(void *ts, void *value);
long pyprof_labels_find(void *ts, void *ctx, long start);
int pyprof_labels_setup(int kind, void *var, long long hash, long ts_context,
			long tuple_item, void *tuple_type, void *bytes_type);
long pyprof_labels_read(void *ts, char *out, long cap);
void pyprof_labels_off(void);

#endif /* PYPROF_INTERPOSE_PYPROF_H */
