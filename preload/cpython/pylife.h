/*
 * pylife.h - whether this process's interpreter was ever started, asked
 * when the process ends, after Py_FinalizeEx has taken the interpreter's
 * states down (PyInterpreterState_Head is NULL then).
 *
 * The agent reports every Python process, even one that ended before its
 * thread saw the interpreter up (a 10 ms program on a loaded machine),
 * and no program that links libpython without starting it (vim, gdb). So
 * it asks what CPython keeps after finalization:
 *   3.7+  Py_IsFinalizing (_Py_IsFinalizing before 3.13) stays 1;
 *   3.6   _Py_Finalizing stays set;
 *   2.7   PyBaseObject_Type keeps Py_TPFLAGS_READY, which Py_Initialize
 *         sets (21 pointer-sized fields before tp_flags; READY 1 << 12).
 * Checked on every interpreter here with a destructor preloaded: 1 after
 * `python -c pass`, 0 after `python -V`, which never starts one.
 */
#ifndef PYPROF_PYLIFE_H
#define PYPROF_PYLIFE_H

/* Finds what pylife_ended reads, for CPython major.minor (constructor). */
void pylife_find(int major, int minor);

/* 1 if the interpreter was started and has begun to end (or has ended),
 * else 0. Not in signal context (it may call into libpython). */
int pylife_ended(void);

#endif
