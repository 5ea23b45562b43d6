/*
 * asyncio.h - asyncio as the programmer sees it, in wall mode: which task
 * a thread runs, and, while its event loop waits in the selector, the
 * tasks that are waiting and what each one awaits.
 *
 * Two halves. asyncio.c (the wall sampler thread, outside any guarded
 * region) learns where the interpreter keeps tasks: on 3.14+ from the
 * interpreter's own description of them, the AsyncioDebug section that
 * CPython places in the _asyncio module (or in libpython when the module
 * is built in), read once from the object file's section headers; on
 * 3.7-3.13 from the asyncio module's task registry, found once with the
 * GIL by the names thread, on the wall thread's request (asyncio.c's
 * comments say what is read). signal/sig_asyncio.c reads
 * tasks with guarded reads on every wall tick, as frames are read.
 *
 * Tasks are the C Task's (_asyncio.Task and its subclasses: fields at
 * fixed offsets) or the pure-Python one's (asyncio.tasks._PyTask and its
 * subclasses: fields in the instance dictionary, read through pydict.h).
 * 3.7-3.13 register both in the same registry; 3.14+ list C tasks per
 * thread and keep pure-Python ones in asyncio's Python registry, looked
 * up as 3.7-3.13's once an event loop runs. Without the _asyncio
 * extension (no C tasks, no lists) the registry is looked up once a
 * thread's frames show an event loop's _run_once.
 *
 * The rule for a waiting thread (docs/asyncio.md): its event loop runs no
 * task and the thread is in the loop's selector (its innermost frames are
 * a select called by the loop's _run_once). Each pending task that waits on no
 * other task (a leaf of the await graph) gets one sample, its stack its
 * await chain (innermost coroutine first, up to the task's coroutine),
 * then the chain of the task that awaits it, and so on up (gather,
 * TaskGroup, shield, wait_for), then the thread's own frames from the
 * event loop's _run_once down to the root. The tick's wall time is split
 * equally among those samples, so a thread's tasks add up to the thread's
 * wall time. At most ASYNCIO_MAX_SAMPLED leaves are sampled per tick,
 * taken in turn when there are more; each then stands for its share of
 * all the leaves.
 */
#ifndef PYPROF_ASYNCIO_H
#define PYPROF_ASYNCIO_H

#include <stddef.h>
#include <stdint.h>

#include "signal/sig_asyncio.h"

/* Constructor: whether to look for tasks at all (PYPROF_ASYNCIO, wall
 * mode, a version the view knows). */
void asyncio_init(int on);

/* Wall sampler thread: looks for the interpreter's tasks if not found
 * yet (cheap when there is nothing new to look at). */
void asyncio_poll(void);

/* Wall sampler thread: whether no _asyncio extension (3.14+: no task
 * lists) was seen yet, so that a thread's frames should be looked at now
 * and then for an event loop (asyncio_loop_frame_sigsafe finds _run_once;
 * then set asyncio_abi.loop_seen): asyncio in pure Python, whose
 * registry is looked for as when the extension is loaded. */
int asyncio_hint_wanted(void);

#endif
