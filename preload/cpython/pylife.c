/*
 * pylife.c - whether the interpreter was started, after it ended
 * (pylife.h).
 */
#include "pylife.h"

#include <dlfcn.h>
#include <stddef.h>

#define PY2_TP_FLAGS_OFFSET (21 * sizeof(void *))
#define PY2_TPFLAGS_READY (1L << 12)

static struct {
	int (*is_finalizing)(void); /* 3.7+                             */
	void *const *finalizing;    /* 3.6: &_Py_Finalizing             */
	const long *object_flags;   /* 2.7: &PyBaseObject_Type.tp_flags */
} life;

void pylife_find(int major, int minor)
{
	if (major == 2) {
		const char *t = dlsym(RTLD_DEFAULT, "PyBaseObject_Type");
		if (t)
			life.object_flags =
				(const long *)(t + PY2_TP_FLAGS_OFFSET);
	} else if (minor == 6) {
		life.finalizing = dlsym(RTLD_DEFAULT, "_Py_Finalizing");
	} else {
		*(void **)&life.is_finalizing =
			dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
		if (!life.is_finalizing)
			*(void **)&life.is_finalizing =
				dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
	}
}

int pylife_ended(void)
{
	if (life.is_finalizing)
		return life.is_finalizing() != 0;
	if (life.finalizing)
		return *life.finalizing != NULL;
	if (life.object_flags)
		return (*life.object_flags & PY2_TPFLAGS_READY) != 0;
	return 0;
}
