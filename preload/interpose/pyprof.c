/*
 * interpose/pyprof.c - the library's own entry points (exports.map:
 * pyprof_*), called through ctypes while holding the GIL: the labels of
 * the `pyprof` module (preload/module/pyprof.py; sample/labels.c says
 * what each does) and the start of `pyprof attach` (agent/attach.c).
 *
 * Contexts: a program thread with the GIL, never signal context, so
 * tools/check-sigsafe leaves this file out (see the Makefile).
 */
#include "pyprof.h"

#include "latebind.h"
#include "agent/attach.h"
#include "sample/labels.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int pyprof_attach_start(const char *config)
{
	/* after the first start in this process (on the start's thread):
	 * the waits' wrappers get the program's calls from now on (off,
	 * one branch each), so that waits asked now or by a later window
	 * are seen */
	return attach_start(config, latebind_waits);
}

EXPORT int pyprof_labels_thread(void *ts, void *value)
{
	return labels_module_thread(ts, value);
}

EXPORT long pyprof_labels_find(void *ts, void *ctx, long start)
{
	return labels_module_find(ts, ctx, start);
}

EXPORT int pyprof_labels_setup(int kind, void *var, long long hash,
			       long ts_context, long tuple_item,
			       void *tuple_type, void *bytes_type)
{
	return labels_module_setup(kind, var, hash, ts_context, tuple_item,
				   tuple_type, bytes_type);
}

EXPORT long pyprof_labels_read(void *ts, char *out, long cap)
{
	return labels_module_read(ts, out, cap);
}

EXPORT void pyprof_labels_off(void)
{
	labels_module_off();
}
