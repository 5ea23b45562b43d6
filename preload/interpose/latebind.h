/*
 * interpose/latebind.h - the waits' wrappers for a library loaded late
 * (`pyprof attach`): the program's calls redirected to them through its
 * own GOT (interpose/latebind.c).
 */
#ifndef PYPROF_INTERPOSE_LATEBIND_H
#define PYPROF_INTERPOSE_LATEBIND_H

/* One function the program may call in libc, and ours in its place. */
struct latebind_fn {
	const char *name;    /* "sem_wait"                                    */
	void *shim;	     /* our wrapper (its own address, not the GOT's)  */
	void *libc;	     /* libc's definition the wrapper calls on        */
	const char *version; /* the version a slot must ask for when it is
				not bound yet ("GLIBC_2.3.2" for the
				condition variables: the old one has
				another layout), or NULL for any */
};

/* interpose/waits.c: the six wrappers of the waits, in fns[0..cap).
 * Returns how many. Any thread, after the constructor. */
int waits_latebind_fns(struct latebind_fn *fns, int cap);

/*
 * Points the program's and libpython's GOT slots for those functions at
 * our wrappers, where a slot is bound to libc's definition (or not bound
 * yet, asking for the version the wrapper calls on). Only for a library
 * that arrived by dlopen: a preloaded one is first in every lookup and
 * needs none of this. Slots of other objects (extension modules, their
 * libraries) and of objects loaded later keep libc. Returns the number of
 * slots rewritten. Called once, after the first start succeeded: on
 * agent/attach.c's start thread (on the script's thread, holding the GIL,
 * with native stacks); the program's threads run meanwhile, as they did
 * when this ran in a ctypes call that had let the GIL go. Never in signal
 * context.
 */
int latebind_waits(void);

#endif /* PYPROF_INTERPOSE_LATEBIND_H */
